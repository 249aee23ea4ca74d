#!/usr/bin/env bash
# The GPU benchmark session, run on a GPU machine with the binaries from
# `CUDA_BUILD_TESTS=1 scripts/cuda-build.sh --stock-gpu` (device-bin/). Writes everything
# under OUT_DIR: the kernels' GPU = CPU tests, a GPU- and a CPU-made proof of one job, then
# one `bench` per line of BENCH_MATRIX, each with its JSON report, log, timeline plot and an
# nvidia-smi memory/utilisation trace.
#
#   scripts/gpu-bench.sh OUT_DIR
#   BENCH_MATRIX="mul-chain 16777216 10 3 --timing-only-params" scripts/gpu-bench.sh OUT_DIR
#
# BENCH_MATRIX: lines of `circuit constraints partitions stock-partitions [extra bench flags]`.
# SKIP_CHECKS=1 skips the correctness part.
set -uo pipefail
out=${1:?usage: gpu-bench.sh OUT_DIR}
mkdir -p "$out"
bin=${BIN_DIR:-device-bin}
prover="$bin/proofpipe-prover-stock-gpu"
[[ -x "$prover" ]] || prover="$bin/proofpipe-prover"
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:/usr/local/nvidia/lib64"
export RUST_LOG=${RUST_LOG:-info}
# bellperson's GPU kernels otherwise serialise on a file lock, even within one process.
export BELLPERSON_GPUS_PER_LOCK=0
params=${PARAMS_DIR:-/tmp/proofpipe-params}
status=0

{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total --format=csv
    nproc
    free -g
} > "$out/machine.txt" 2>&1

if [[ "${SKIP_CHECKS:-0}" != 1 ]]; then
    if [[ -x "$bin/kernels-tests" ]]; then
        PROOFPIPE_REQUIRE_GPU=1 "$bin/kernels-tests" --test-threads=1 > "$out/kernels-tests.txt" 2>&1 \
            || status=1
        tail -3 "$out/kernels-tests.txt"
    fi
    "$prover" prove --circuit mul-chain --constraints 65536 --partitions 4 --params-dir "$params" --json \
        > "$out/prove-gpu.txt" 2>&1 || status=1
    PROOFPIPE_BACKEND=cpu "$prover" prove --circuit mul-chain --constraints 65536 --partitions 4 \
        --params-dir "$params" --json > "$out/prove-cpu.txt" 2>&1 || status=1
    tail -1 "$out/prove-gpu.txt"
    tail -1 "$out/prove-cpu.txt"
fi

matrix=${BENCH_MATRIX:-"mul-chain 16777216 10 3 --timing-only-params
merkle-sha256 16777216 10 3 --timing-only-params"}
while read -r circuit constraints partitions stock extra; do
    [[ -z "$circuit" ]] && continue
    name="bench-$circuit-$constraints"
    [[ "$extra" == *timing-only* ]] && name="$name-timing-only"
    # Other flags name the run too (e.g. --gpu-workers 3 -> -gpu-workers-3).
    suffix=$(sed -E 's/--timing-only-params//; s/--//g; s/[^a-z0-9]+/-/g; s/^-+//; s/-+$//' <<< "$extra")
    [[ -n "$suffix" ]] && name="$name-$suffix"
    nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv,noheader -lms 250 \
        > "$out/$name.smi.csv" 2>/dev/null &
    smi=$!
    # shellcheck disable=SC2086 # extra holds flags
    "$prover" bench --circuit "$circuit" --constraints "$constraints" --partitions "$partitions" \
        --stock-partitions "$stock" --params-dir "$params" --plot "$out/$name.svg" --json $extra \
        > "$out/$name.txt" 2> "$out/$name.log" || status=1
    kill "$smi" 2>/dev/null
    echo "== $name"
    grep -v '^{' "$out/$name.txt"
    awk -F', ' '{gsub(/ MiB/,"",$2); if ($2+0 > m) m = $2+0} END {print "nvidia-smi peak memory used: " m " MiB"}' \
        "$out/$name.smi.csv"
done <<< "$matrix"
exit $status
