#!/usr/bin/env bash
# The GPU stage's measurements (docs/benchmarks.md, "GPU stage at Filecoin scale"), on the GPU
# machine, with the binaries from `CUDA_BUILD_TESTS=1 scripts/cuda-build.sh` in device-bin/.
# Each step's output and log go into OUT_DIR/logs.tar.gz (the device tool brings back few
# files); OUT_DIR/summary.txt has every step's exit status and the lines that matter.
#
#   scripts/gpu-perf.sh OUT_DIR [STEP ...]
#
# Steps (default: kernels prove merkle24 merkle26):
#   kernels     the kernels' GPU = CPU tests (split MSM, h on the device, pinned a/b/c included)
#   prove       real proofs through the GPU stage, verified: mul-chain and merkle-sha256 (whose
#               0/1 witnesses take the split MSM path), 4 x 2^16 each
#   merkle24    merkle-sha256 2^24, 20 partitions, 3 GPU workers: each optimisation on its own
#               (none, split, split+h, all), then all twice more (median of 3)
#   merkle26    merkle-sha256 2^26, 8 partitions, 3 GPU workers, replayed synthesis (the GPU
#               stage alone: 16 cores cannot synthesize 2^26 partitions fast enough): none, all x3
#   mulchain24  mul-chain 2^24, 10 partitions: none, all x3
#   merkle27    merkle-sha256 2^27 (the PoRep partition size), 6 partitions, replayed: all x3
#   porep32     the real 32 GiB PoRep partition (StackedDrg32GiBV1_1's circuit, placeholder
#               vanilla proofs, timing-only parameters of its exact counts; ADR 0019), one
#               proof's 10 partitions, replayed synthesis (partition 0 from the R1CS matrices
#               and its native witness), 3 runs, the plan's own workers: the GPU stage alone
#   porep32-synth  the same, synthesized (one wave of partition workers; synthesis-bound)
#   porep32-parallel  the same, synthesized from the R1CS matrices with each partition's
#               challenges on every core (ADR 0023, 0038), partition 0's synthesis alone 3
#               times first (wall and CPU seconds), then 3 runs after a one-partition warm-up
#   post32      one 32 GiB WindowPoSt partition (StackedDrgWindow32GiBV1_2, placeholder vanilla
#               proofs, timing-only parameters) from its R1CS matrices and native witness
#               (ADR 0040): its synthesis alone 3 times, then 3 runs after a warm-up
#   post32-one-pass  the same partition in one pass (the gadgets, sectors on every core), 1 run
# TIMEOUT (default 300) bounds each step.
set -uo pipefail
out=${1:?usage: gpu-perf.sh OUT_DIR [STEP ...]}
shift
steps=("$@")
[[ ${#steps[@]} == 0 ]] && steps=(kernels prove merkle24 merkle26)
mkdir -p "$out"
work=$(mktemp -d)
bin=${BIN_DIR:-device-bin}
prover="$bin/proofpipe-prover"
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:/usr/local/nvidia/lib64"
export RUST_LOG=${RUST_LOG:-info}
summary="$out/summary.txt"
: > "$summary"
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used,clocks.sm,clocks.max.sm --format=csv
    nproc
    free -g
    cat /sys/fs/cgroup/memory.max 2>/dev/null
} > "$work/machine.txt" 2>&1
cat "$work/machine.txt" >> "$summary"
status=0

# run NAME COMMAND...: output in $work/NAME.txt, log in NAME.log, an nvidia-smi trace beside.
run() {
    local name=$1
    shift
    nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv,noheader -lms 200 \
        > "$work/$name.smi.csv" 2>/dev/null &
    local smi=$! start
    start=$(date +%s)
    timeout "${TIMEOUT:-300}" "$@" > "$work/$name.txt" 2> "$work/$name.log"
    local rc=$?
    kill "$smi" 2>/dev/null
    [[ $rc != 0 ]] && status=1
    local peak
    peak=$(awk -F', ' '{gsub(/ MiB/,"",$2); if ($2+0 > m) m = $2+0} END {print m}' "$work/$name.smi.csv")
    {
        echo "== $name rc=$rc $(( $(date +%s) - start ))s nvidia-smi-peak-MiB=$peak"
        grep -E '^(test result|summary|synthesis alone|[a-z+]+ +[0-9]+ +[0-9.]+ \(|steady|plan|memory|REPLAYED|GPU memory|pipeline|prover|\{"outcome|proved|verified)' "$work/$name.txt" \
            | grep -v '^{' | cut -c1-400
        grep -E 'GPU stage backend|panicked|error' "$work/$name.log" | head -5 | cut -c1-300
        [[ $rc != 0 ]] && tail -5 "$work/$name.log" | cut -c1-300
    } >> "$summary"
    tail -1 "$summary"
}

bench() {
    local name=$1
    shift
    run "$name" "$prover" bench --timing-only-params --stock-partitions 0 --json \
        --plot "$work/$name.svg" "$@"
}

for step in "${steps[@]}"; do
    case $step in
    kernels)
        run kernels env PROOFPIPE_REQUIRE_GPU=1 "$bin/kernels-tests" --test-threads=1 ;;
    prove)
        run prove-mul-chain "$prover" prove --circuit mul-chain --constraints 65536 --partitions 4 \
            --params-dir /tmp/proofpipe-params --json
        run prove-merkle "$prover" prove --circuit merkle-sha256 --constraints 65536 --partitions 4 \
            --params-dir /tmp/proofpipe-params --json ;;
    merkle24)
        bench merkle24 --circuit merkle-sha256 --constraints 16777216 --partitions 20 --gpu-workers 3 \
            --gpu-variants none,split,split+h,all,all,all ;;
    merkle26)
        bench merkle26 --circuit merkle-sha256 --constraints 67108864 --partitions 8 --gpu-workers 3 \
            --replay-synthesis --no-warmup --gpu-variants none,all,all,all ;;
    mulchain24)
        bench mulchain24 --circuit mul-chain --constraints 16777216 --partitions 10 \
            --gpu-variants none,all,all,all ;;
    merkle27)
        bench merkle27 --circuit merkle-sha256 --constraints 134217728 --partitions 6 --gpu-workers 3 \
            --replay-synthesis --no-warmup --gpu-variants all,all,all ;;
    porep32)
        run porep32-plan "$prover" plan --porep-shape 32GiB
        bench porep32 --porep-shape 32GiB --synthesis matrices --replay-synthesis --runs 3 ;;
    porep32-synth)
        bench porep32-synth --porep-shape 32GiB --runs 1 ;;
    porep32-parallel)
        bench porep32-parallel --porep-shape 32GiB --synthesis matrices --synthesis-alone 3 \
            --runs 3 ;;
    post32)
        bench post32 --post-shape StackedDrgWindow32GiBV1_2 --synthesis matrices \
            --synthesis-alone 3 --runs 3 ;;
    post32-one-pass)
        bench post32-one-pass --post-shape StackedDrgWindow32GiBV1_2 --runs 1 --no-warmup ;;
    *)
        echo "unknown step $step" >> "$summary"
        status=1 ;;
    esac
done
tar czf "$out/logs.tar.gz" -C "$work" .
cat "$summary"
exit $status
