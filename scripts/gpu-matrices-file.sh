#!/usr/bin/env bash
# On the GPU machine (any machine: no GPU is used): the R1CS matrices file of a PoRep partition
# (ADR 0031). `params matrices` records the matrices and writes the file, then reads it back
# RUNS times with its pages in the page cache (a prover restarted on the same node), then RUNS
# times with its pages evicted first (posix_fadvise DONTNEED: a prover starting on a node that
# has the file on its volume but not in memory). Each call's JSON line, wall seconds and peak
# RSS (the call's own ru_maxrss, by wait4) go into OUT_DIR/matrices-file.jsonl; logs beside it.
#
#   scripts/gpu-matrices-file.sh OUT_DIR     # device-bin/proofpipe-prover from scripts/cuda-build.sh
#
# Env: SEAL_PROOF (32GiB), RUNS (3), PROVER, DIR (where the file goes: /tmp/proofpipe-matrices,
# emptied first; not under OUT_DIR, the file is 12 GiB at 32 GiB).
set -uo pipefail
out=${1:?usage: scripts/gpu-matrices-file.sh OUT_DIR}
prover=${PROVER:-device-bin/proofpipe-prover}
seal_proof=${SEAL_PROOF:-32GiB}
runs=${RUNS:-3}
dir=${DIR:-/tmp/proofpipe-matrices}
mkdir -p "$out"
rm -rf "$dir" && mkdir -p "$dir"
export RUST_LOG=${RUST_LOG:-info}
{ date -u; nproc; cat /sys/fs/cgroup/memory.max 2>/dev/null; df -h "$dir" | tail -1; } > "$out/machine.txt" 2>&1
cat "$out/machine.txt"
python3 - "$prover" "$seal_proof" "$dir" "$runs" "$out" <<'PY'
import glob, json, os, subprocess, sys, time
prover, seal_proof, dir_, runs, out = sys.argv[1], sys.argv[2], sys.argv[3], int(sys.argv[4]), sys.argv[5]

def evict():
    for path in glob.glob(os.path.join(dir_, "*.matrices")):
        fd = os.open(path, os.O_RDONLY)
        os.fsync(fd)
        os.posix_fadvise(fd, 0, 0, os.POSIX_FADV_DONTNEED)
        os.close(fd)

def call(label, n):
    started = time.monotonic()
    log_path = os.path.join(out, f"matrices-{label}-{n}.log")
    stdout_path = os.path.join(out, f"matrices-{label}-{n}.json")
    with open(log_path, "w") as log, open(stdout_path, "w") as stdout:
        p = subprocess.Popen([prover, "params", "matrices", "--seal-proof", seal_proof, "--dir", dir_, "--json"],
                             stdout=stdout, stderr=log)
        # wait4: this child's own rusage (its peak RSS), not the maximum over all children.
        _, status, usage = os.wait4(p.pid, 0)
    wall = time.monotonic() - started
    text = open(stdout_path).read().strip()
    row = {"case": label, "run": n, "rc": os.waitstatus_to_exitcode(status), "wall_s": round(wall, 2),
           "peak_rss_gib": round(usage.ru_maxrss / 2**20, 2),
           "report": json.loads(text.splitlines()[-1]) if text else {}}
    print(json.dumps(row), flush=True)
    with open(os.path.join(out, "matrices-file.jsonl"), "a") as f:
        f.write(json.dumps(row) + "\n")

call("record-and-write", 1)
sizes = [os.path.getsize(p) for p in glob.glob(os.path.join(dir_, "*.matrices"))]
print(json.dumps({"file_bytes": sizes}), flush=True)
for n in range(1, runs + 1):
    call("read-cached", n)
for n in range(1, runs + 1):
    evict()
    call("read-evicted", n)
PY
