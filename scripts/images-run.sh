#!/usr/bin/env bash
# Starts each image under a real OCI runtime (runc) with the Helm chart's security context,
# and checks both the context the entrypoint gets and what it prints (docs/images.md, "Under
# an OCI runtime"). Needs the images unpacked first (scripts/images.sh unpack OUT_DIR BIN_DIR).
#
#   scripts/images-run.sh [OUT_DIR]     # target/images; a few seconds
#
# What each container gets, as the chart and the operator ask of Kubernetes:
#   - runAsUser/runAsGroup: the image's user, 65532:65532 (the chart's runAs), in the host's
#     user namespace (as a pod without hostUsers: false);
#   - readOnlyRootFilesystem: the root filesystem mounted read-only;
#   - capabilities drop ALL: every capability set empty;
#   - allowPrivilegeEscalation false: no_new_privs;
#   - seccompProfile RuntimeDefault: a seccomp filter (here a short deny list of what
#     RuntimeDefault refuses: mount, unshare, setns, ptrace, bpf, kernel modules, ...; the
#     runtimes' own default is an allow list);
#   - the operator's emptyDirs of a read-only prover (/tmp, /var/tmp, /home/proofpipe/.cache)
#     as host directories of mode 0777 (as the kubelet makes them), and the pid, network, ipc, uts and mount namespaces of a container.
# Each image's container is first created and not started: its init process has then taken
# the user, capabilities, no_new_privs and seccomp it will exec the entrypoint with, and
# /proc/PID/status and mountinfo are checked. Then it runs: the operator's `crds` (no
# cluster needed), the gateway's `--version`, and the prover's `plan --porep-shape 2KiB` and a
# 2-partition `prove` whose parameters it writes to its cache (~2 s with a debug build).
#
# Runs as root (the runtime's state and the uid switch). runc, not crun: Debian 12's crun
# (1.8) refuses a host whose cgroup v2 hierarchy holds controllers beside v1 ones ("cgroups in
# hybrid mode not supported, drop all controllers from cgroupv2"), even with
# --cgroup-manager=disabled; runc runs there.
set -euo pipefail
cd "$(dirname "$0")/.."

out=${1:-target/images}
runtime=${OCI_RUNTIME:-runc}
command -v "$runtime" >/dev/null || { echo "scripts/images-run.sh: $runtime missing: apt-get install runc" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "scripts/images-run.sh: run it as root (the runtime switches to the image's user)" >&2; exit 1; }
out=$(cd "$out" && pwd)
names=(proofpipe-operator proofpipe-gateway proofpipe-prover)
for name in "${names[@]}"; do
  [ -f "$out/rootfs/$name/config.json" ] || { echo "scripts/images-run.sh: no $out/rootfs/$name: run scripts/images.sh unpack $out BIN_DIR first" >&2; exit 1; }
done
run_as=$(sed -n '/^runAs:/,/^[^ ]/{s/^  user: *\([0-9]*\)/\1/p}' charts/proofpipe/values.yaml):$(sed -n '/^runAs:/,/^[^ ]/{s/^  group: *\([0-9]*\)/\1/p}' charts/proofpipe/values.yaml)

work=$(mktemp -d)
ids=()
cleanup() {
  local id
  for id in "${ids[@]}"; do "$runtime" delete -f "$id" >/dev/null 2>&1 || true; done
  rm -rf "$work"
}
trap cleanup EXIT

# A bundle in $work/$2 for image $1 whose process runs the rest of the arguments (the image's
# entrypoint first), under the chart's security context.
bundle() {
  local name=$1 id=$2
  shift 2
  mkdir -p "$work/$id" "$work/$id-scratch"/{tmp,var-tmp,cache}
  chmod 0777 "$work/$id-scratch"/{tmp,var-tmp,cache}
  python3 - "$out/rootfs/$name" "$run_as" "$work/$id-scratch" "$@" > "$work/$id/config.json" <<'EOF'
import json, sys
image, run_as, scratch, args = sys.argv[1], sys.argv[2], sys.argv[3], sys.argv[4:]
cfg = json.load(open(image + "/config.json"))  # umoci's, from the image's config
uid, gid = (int(x) for x in run_as.split(":"))
p = cfg["process"]
p["terminal"] = False
p["args"] = p["args"][:1] + args  # the image's entrypoint, these arguments
p["user"] = {"uid": uid, "gid": gid, "additionalGids": [gid]}
p["capabilities"] = {k: [] for k in ("bounding", "effective", "inheritable", "permitted", "ambient")}
p["noNewPrivileges"] = True
cfg["root"] = {"path": image + "/rootfs", "readonly": True}
cfg["hostname"] = "proofpipe"
# emptyDirs: a host directory of mode 0777 each (runc would give a tmpfs the mode and the
# root owner of the image's directory below it).
for path, source in (("/tmp", "tmp"), ("/var/tmp", "var-tmp"), ("/home/proofpipe/.cache", "cache")):
    cfg["mounts"].append({"destination": path, "type": "bind", "source": scratch + "/" + source,
                          "options": ["rbind", "rw", "nosuid", "nodev"]})
denied = ["mount", "umount2", "unshare", "setns", "pivot_root", "chroot", "ptrace",
          "process_vm_readv", "process_vm_writev", "bpf", "perf_event_open", "keyctl",
          "add_key", "request_key", "init_module", "finit_module", "delete_module",
          "kexec_load", "kexec_file_load", "reboot", "swapon", "swapoff", "acct",
          "open_by_handle_at", "userfaultfd", "fsopen", "fsmount", "move_mount", "open_tree"]
cfg["linux"]["seccomp"] = {"defaultAction": "SCMP_ACT_ALLOW", "architectures": ["SCMP_ARCH_X86_64"],
                           "syscalls": [{"names": denied, "action": "SCMP_ACT_ERRNO", "errnoRet": 1}]}
json.dump(cfg, sys.stdout, indent=1)
EOF
}

# The security context the created (not started) container's process holds.
check_context() {
  local name=$1 id="pp-ctx-$$-${1#proofpipe-}" pid
  bundle "$name" "$id" --version
  ids+=("$id")
  "$runtime" create --bundle "$work/$id" "$id" </dev/null >/dev/null
  pid=$("$runtime" state "$id" | python3 -c 'import json, sys; print(json.load(sys.stdin)["pid"])')
  python3 - "$name" "$run_as" "$pid" <<'EOF'
import sys
name, run_as, pid = sys.argv[1:]
uid, gid = run_as.split(":")
st = dict(line.split(":\t", 1) for line in open("/proc/%s/status" % pid).read().splitlines() if ":\t" in line)
root = [l.split() for l in open("/proc/%s/mountinfo" % pid) if l.split()[4] == "/"]
problems = []
if st["Uid"].split() != [uid] * 4: problems.append("uid %s" % st["Uid"])
if st["Gid"].split() != [gid] * 4: problems.append("gid %s" % st["Gid"])
if st["Groups"].split() != [gid]: problems.append("groups %s" % st["Groups"])
for cap in ("CapInh", "CapPrm", "CapEff", "CapBnd", "CapAmb"):
    if int(st[cap], 16): problems.append("%s %s" % (cap, st[cap]))
if st["NoNewPrivs"].strip() != "1": problems.append("no_new_privs %s" % st["NoNewPrivs"])
if st["Seccomp"].strip() != "2": problems.append("seccomp mode %s, not 2 (filter)" % st["Seccomp"])
if not root or "ro" not in root[-1][5].split(","): problems.append("root mounted %s" % (root[-1][5] if root else "nowhere"))
if problems: sys.exit("%s: %s" % (name, "; ".join(problems)))
print("ok  %s: uid/gid %s, no capabilities, no_new_privs, seccomp filter, root read-only" % (name, run_as))
EOF
  "$runtime" delete -f "$id" >/dev/null
}

# Runs image $1's entrypoint with the rest of the arguments; its output in $work/NAME.out.
run_image() {
  local name=$1 id="pp-run-$$-${1#proofpipe-}" rc=0
  shift
  bundle "$name" "$id" "$@"
  ids+=("$id")
  "$runtime" run --bundle "$work/$id" "$id" </dev/null >"$work/$name.out" 2>&1 || rc=$?
  if [ "$rc" != 0 ]; then
    echo "scripts/images-run.sh: $name $* exited $rc under $runtime:" >&2
    tail -20 "$work/$name.out" >&2
    exit 1
  fi
}

expect() {
  local name=$1 pattern=$2 what=$3
  if ! grep -qE "$pattern" "$work/$name.out"; then
    echo "scripts/images-run.sh: $name: $what: no line matching '$pattern' in its output:" >&2
    tail -20 "$work/$name.out" >&2
    exit 1
  fi
  echo "ok  $name: $what"
}

started=$SECONDS
for name in "${names[@]}"; do check_context "$name"; done
run_image proofpipe-operator crds
expect proofpipe-operator '^  name: proofjobs\.proofpipe\.dev$' "crds prints the ProofJob CRD"
expect proofpipe-operator '^  name: proverpools\.proofpipe\.dev$' "crds prints the ProverPool CRD"
run_image proofpipe-gateway --version
expect proofpipe-gateway '^proofpipe-gateway [0-9]' "--version"
run_image proofpipe-prover plan --porep-shape 2KiB
expect proofpipe-prover '^predicted peak' "plan --porep-shape 2KiB"
# Parameters generated into the cache's emptyDir: the root filesystem is read-only.
run_image proofpipe-prover prove --circuit mul-chain --constraints 1024 --partitions 2
expect proofpipe-prover '^OK mul-chain.* 2/2 proofs verified' "prove (2 partitions, parameters written to its cache)"
echo "the images under $($runtime --version | head -1) with the chart's security context: $((SECONDS - started)) s"
