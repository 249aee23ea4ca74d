#!/usr/bin/env bash
# On the GPU machine: the CUDA prover image proves and verifies a real 2 KiB PoRep, run from
# the image's own root filesystem (its glibc, its user, its entrypoint) with the driver's
# libraries and devices brought in as the NVIDIA container toolkit brings them. The image's
# root filesystem comes as an xz tar (scripts/images.sh cuda-prover writes it), carried in a
# git-ignored folder:
#
#   scripts/images.sh cuda-prover device-bin/proofpipe-prover     # here, with network
#   mkdir -p .device-image && cp target/images-cuda/proofpipe-prover-rootfs.tar.xz .device-image/
#   scripts/gpu-image-porep.sh OUT_DIR [ROOTFS_TAR]                 # there, as root
#
# ROOTFS_TAR: .device-image/proofpipe-prover-rootfs.tar.xz. The test data (a 2 KiB sector
# sealed with parameters from a random setup: NOT Filecoin's) is made by the image's prover
# unless PROOFPIPE_FILECOIN_TESTDATA names a folder of scripts/filecoin-testdata.sh's
# (c1-2KiB.json and params/), bound read-only. The driver's libraries: NVIDIA_DRIVER_DIR
# (/usr/local/nvidia/lib64, as scripts/gpu-machine.sh). GPU_IMAGE_CHECK_ONLY=1: unpack and
# run the image's `--version` only (any machine, no GPU). GPU_IMAGE_SANDBOX: below. Fails
# unless the proof is made, verify_seal accepts it, and its GPU stage ran on the GPU
# (GPU_IMAGE_ALLOW_CPU=1 accepts the CPU backend: a machine without a driver).
#
# The sandbox: bubblewrap when it runs here (read-only root, the image's uid in a user
# namespace, /dev, /proc, /sys, the driver folder and the work folder bound in); else chroot
# as the image's user, with those bound by mount --bind, or, where mounts are refused, the
# driver's libraries and /dev/nvidia* copied into the unpacked tree (no /proc then).
# OUT_DIR gets report.json (what ran, how, the proof's outcome), the logs, machine.txt.
set -euo pipefail
cd "$(dirname "$0")/.."
out=${1:?usage: scripts/gpu-image-porep.sh OUT_DIR [ROOTFS_TAR]}
tarball=${2:-.device-image/proofpipe-prover-rootfs.tar.xz}
driver=${NVIDIA_DRIVER_DIR:-/usr/local/nvidia/lib64}
check_only=${GPU_IMAGE_CHECK_ONLY:-}
testdata=${PROOFPIPE_FILECOIN_TESTDATA:-}
[ -f "$tarball" ] || { echo "scripts/gpu-image-porep.sh: no $tarball (scripts/images.sh cuda-prover writes it)" >&2; exit 1; }
[ "$(id -u)" = 0 ] || { echo "scripts/gpu-image-porep.sh: run it as root (the unpacked tree keeps the image's owners)" >&2; exit 1; }
mkdir -p "$out"
out=$(cd "$out" && pwd)
if [ -z "$check_only" ]; then
  # shellcheck source=scripts/gpu-machine.sh
  set +e  # what it lists may be missing (a cgroup v1 host has no memory.max)
  source scripts/gpu-machine.sh "$out"
  set -e
fi
started=$(date +%s)

work=$(mktemp -d)
mounted=()
cleanup() {
  local i
  for (( i=${#mounted[@]}-1; i>=0; i-- )); do umount -l "${mounted[$i]}" 2>/dev/null || true; done
  rm -rf "$work"
}
trap cleanup EXIT
chmod 0755 "$work"
root="$work/rootfs"
mkdir "$root"
tar --numeric-owner -xJf "$tarball" -C "$root"
echo "unpacked $tarball ($(du -h "$tarball" | cut -f1)) in $(( $(date +%s) - started )) s: $(du -sh "$root" | cut -f1)"
# The image's user, entrypoint and environment (scripts/images.sh put its config at the top).
read -r user entrypoint < <(python3 -c '
import json, sys
cfg = json.load(open(sys.argv[1]))["config"]
print(cfg["User"], cfg["Entrypoint"][0])' "$root/image-config.json")
mapfile -t image_env < <(python3 -c '
import json, sys
for kv in json.load(open(sys.argv[1]))["config"].get("Env") or []: print(kv)' "$root/image-config.json")
uid=${user%%:*}
gid=${user#*:}
# The proof's files, writable by the image's user; the mount points the sandbox binds.
data="$work/data"
mkdir -p "$data" "$root/data" "$root/testdata" "$root$driver" "$root/dev" "$root/proc" "$root/sys"
chmod 0777 "$data"
env_args=()
for kv in "${image_env[@]}" "LD_LIBRARY_PATH=$driver" "FIL_PROOFS_PARENT_CACHE=/data/parents" \
    "RUST_LOG=${RUST_LOG:-info}"; do
  env_args+=("$kv")
done

# How the image runs here: bwrap, chroot with binds, or chroot with copies.
# GPU_IMAGE_SANDBOX (bwrap, chroot-bind or chroot-copy) chooses one.
mode=${GPU_IMAGE_SANDBOX:-}
if [ "$mode" = bwrap ] || { [ -z "$mode" ] && command -v bwrap >/dev/null \
    && bwrap --ro-bind / / --dev /dev --proc /proc --unshare-user --uid "$uid" true 2>/dev/null; }; then
  mode=bwrap
elif [ "$mode" != chroot-copy ] && mount --bind "$data" "$root/data" 2>/dev/null; then
  mode=chroot-bind
  mounted+=("$root/data")
  for dir in /dev /proc /sys; do
    mount --rbind "$dir" "$root$dir"; mounted+=("$root$dir")
  done
  if [ -d "$driver" ]; then mount --bind -o ro "$driver" "$root$driver"; mounted+=("$root$driver"); fi
  if [ -n "$testdata" ]; then mount --bind -o ro "$testdata" "$root/testdata"; mounted+=("$root/testdata"); fi
else
  mode=chroot-copy
  echo "mount refused here: the driver's libraries and /dev/nvidia* are copied into the tree, the data is moved in; no /proc" >&2
  rmdir "$root/data"; mv "$data" "$root/data"; data="$root/data"
  if [ -d "$driver" ]; then cp -a "$driver/." "$root$driver/"; fi
  for node in /dev/null /dev/zero /dev/urandom /dev/random /dev/nvidia*; do
    [ -e "$node" ] && cp -a "$node" "$root/dev/"
  done
  if [ -n "$testdata" ]; then cp -a "$testdata/c1-2KiB.json" "$testdata/params" "$root/testdata/"; fi
fi
echo "sandbox: $mode, as $user"

# Runs the image's entrypoint with "$@" in the sandbox.
in_image() {
  case $mode in
    bwrap)
      local binds=(--bind "$data" /data) envs=() kv
      for kv in "${env_args[@]}"; do envs+=(--setenv "${kv%%=*}" "${kv#*=}"); done
      [ -d "$driver" ] && binds+=(--ro-bind "$driver" "$driver")
      [ -n "$testdata" ] && binds+=(--ro-bind "$testdata" /testdata)
      bwrap --ro-bind "$root" / --dev-bind /dev /dev --proc /proc --ro-bind /sys /sys \
        --tmpfs /tmp --tmpfs /home/proofpipe/.cache "${binds[@]}" \
        --unshare-user --uid "$uid" --gid "$gid" --chdir /data --die-with-parent \
        --clearenv "${envs[@]}" \
        -- "$entrypoint" "$@" ;;
    chroot-*)
      env -i "${env_args[@]}" "$(command -v chroot)" --userspec="$uid:$gid" "$root" "$entrypoint" "$@" ;;
  esac
}

in_image --version > "$out/version.txt"
echo "image's prover: $(cat "$out/version.txt")"
if [ -n "$check_only" ]; then
  python3 - "$out" "$mode" "$tarball" <<'EOF'
import json, sys
out, mode, tarball = sys.argv[1:]
json.dump({"check_only": True, "sandbox": mode, "rootfs_tar": tarball,
           "version": open(out + "/version.txt").read().strip()}, open(out + "/report.json", "w"), indent=1)
EOF
  echo "GPU_IMAGE_CHECK_ONLY: $out/report.json"
  exit 0
fi

# The test data: carried, or made by the image's prover here.
if [ -n "$testdata" ]; then
  c1=/testdata/c1-2KiB.json params=/testdata/params testdata_secs=0
else
  t=$(date +%s)
  in_image --log warn porep-testdata --seal-proof 2KiB --params-dir /data/params \
    --work-dir /data/seal --out /data/c1.json > "$out/testdata.txt" 2>&1
  c1=/data/c1.json params=/data/params testdata_secs=$(( $(date +%s) - t ))
fi
t=$(date +%s)
prove_rc=0
in_image --log info prove --porep-c1 "$c1" --params-dir "$params" --out /data/proof \
  --verify --json > "$out/prove.txt" 2> "$out/prove.log" || prove_rc=$?
prove_secs=$(( $(date +%s) - t ))
verify_rc=0
in_image --log warn porep-verify --porep-c1 "$c1" --params-dir "$params" --proof /data/proof \
  > "$out/porep-verify.txt" 2>&1 || verify_rc=$?
nvidia-smi --query-gpu=name,memory.total,driver_version --format=csv > "$out/gpu.csv" 2>&1 || true

python3 - "$out" "$mode" "$tarball" "$user" "$testdata" "$testdata_secs" "$prove_rc" "$prove_secs" "$verify_rc" "$(( $(date +%s) - started ))" "${GPU_IMAGE_ALLOW_CPU:-}" <<'EOF'
import json, re, sys
out, mode, tarball, user, testdata, testdata_secs, prove_rc, prove_secs, verify_rc, total, allow_cpu = sys.argv[1:]
log = open(out + "/prove.log", errors="replace").read()
backend = [re.sub(r"\x1b\[[0-9;]*m", "", l).split("INFO", 1)[-1].strip()
           for l in log.splitlines() if "GPU stage backend" in l]
lines = open(out + "/prove.txt").read().splitlines()
try:
    prove = json.loads(lines[-1]) if lines else None
except ValueError:
    prove = None
report = {
    "what": "2 KiB PoRep (random-setup parameters) proved and verified by the CUDA prover image's root filesystem",
    "sandbox": mode, "rootfs_tar": tarball, "user": user,
    "version": open(out + "/version.txt").read().strip(),
    "gpu_stage_backend": backend[0] if backend else None,
    "gpu_used": bool(backend) and 'backend="cpu"' not in backend[0],
    "testdata": testdata or "made here by the image's porep-testdata", "testdata_seconds": int(testdata_secs),
    "prove_exit": int(prove_rc), "prove_seconds": int(prove_secs), "prove": prove,
    "porep_verify_exit": int(verify_rc), "total_seconds": int(total),
}
report["ok"] = prove_rc == "0" and verify_rc == "0" and (report["gpu_used"] or allow_cpu == "1")
json.dump(report, open(out + "/report.json", "w"), indent=1)
print(json.dumps({k: report[k] for k in ("sandbox", "gpu_used", "prove_exit", "porep_verify_exit", "prove_seconds", "ok")}))
sys.exit(0 if report["ok"] else 1)
EOF
