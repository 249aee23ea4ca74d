#!/usr/bin/env bash
# The memory model's measurements (docs/memory-model.md, pipeline/src/sizing/measurements.rs):
# one `bench` per line of MATRIX with timing-only parameters, no stock run and no warm-up,
# each with its JSON report (pipeline.memory: RSS, device memory and stage counts sampled
# every 20 ms), its log and an nvidia-smi memory trace (100 ms). Run on the GPU machine.
#
#   MATRIX="merkle-sha256 67108864 8 --gpu-workers 3" scripts/mem-sweep.sh OUT_DIR [PROVER]
#
# MATRIX: lines of `circuit constraints partitions [extra bench flags]`; RUNS (default 1)
# repeats each line; TIMEOUT (default 300) seconds per run.
set -uo pipefail
out=${1:?usage: mem-sweep.sh OUT_DIR [PROVER]}
prover=${2:-device-bin/proofpipe-prover}
mkdir -p "$out"
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:/usr/local/nvidia/lib64"
export RUST_LOG=${RUST_LOG:-info}
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv
    nproc
    free -g
    cat /sys/fs/cgroup/memory.max 2>/dev/null
} > "$out/machine.txt" 2>&1
status=0
while read -r circuit constraints partitions extra; do
    [[ -z "$circuit" ]] && continue
    for run in $(seq 1 "${RUNS:-1}"); do
        name="$circuit-$constraints-p$partitions$(sed -E 's/--//g; s/[^a-z0-9]+/-/g; s/-+$//; s/^(.)/-\1/' <<< "$extra")-r$run"
        nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader -lms 100 > "$out/$name.smi.csv" 2>/dev/null &
        smi=$!
        start=$(date +%s)
        # shellcheck disable=SC2086 # extra holds flags
        timeout "${TIMEOUT:-300}" "$prover" bench --circuit "$circuit" --constraints "$constraints" \
            --partitions "$partitions" --stock-partitions 0 --no-warmup --timing-only-params --json $extra \
            > "$out/$name.txt" 2> "$out/$name.log"
        rc=$?
        kill "$smi" 2>/dev/null
        [[ $rc != 0 ]] && status=1
        smi_peak=$(awk -F', ' '{gsub(/ MiB/,"",$2); if ($2+0 > m) m = $2+0} END {print m}' "$out/$name.smi.csv")
        echo "== $name rc=$rc $(( $(date +%s) - start ))s nvidia-smi-peak-MiB=$smi_peak"
        grep -E '^(memory|plan|GPU memory|pipeline|steady)' "$out/$name.txt"
        [[ $rc != 0 ]] && tail -3 "$out/$name.log"
    done
done <<< "$MATRIX"
exit $status
