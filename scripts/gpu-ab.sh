#!/usr/bin/env bash
# On the GPU machine: a baseline build of the prover and the current one on the same shape
# and card in one call, so that their ratio is of one machine (two H100 hosts can differ by
# 1.5x).
#
#   BASE=/path/to/baseline/proofpipe-prover scripts/gpu-ab.sh OUT_DIR
#
# 1. The kernels' GPU tests (device-bin/kernels-tests), unless KERNEL_TESTS=0.
# 2. scripts/gpu-streamed.sh with PROVER=$BASE at the caps of BASE_CAPS (none: the whole card),
#    into OUT_DIR/base; skipped when BASE is empty.
# 3. scripts/gpu-streamed.sh with device-bin/proofpipe-prover at the caps of NEW_CAPS
#    (none,12GiB), into OUT_DIR/new.
# Each folder is packed into OUT_DIR/<name>.tgz (the machine returns at most 8 files); both
# tables are printed. SHAPE, FEED (empty: synthesize every partition), RUNS (3) and SYNTHESIS
# are passed on; BASE_TIMEOUT and NEW_TIMEOUT (seconds, 0 for none) cut a bench short and keep
# the runs it finished.
set -uo pipefail
out=${1:?usage: BASE=... scripts/gpu-ab.sh OUT_DIR}
here=$(dirname "$0")
mkdir -p "$out"
export SHAPE=${SHAPE:-porep} FEED=${FEED-} RUNS=${RUNS:-3}
status=0
if [[ ${KERNEL_TESTS:-1} != 0 && -x device-bin/kernels-tests ]]; then
    started=$(date +%s)
    source "$here/gpu-machine.sh" "$out" > /dev/null
    PROOFPIPE_REQUIRE_GPU=1 device-bin/kernels-tests --test-threads=1 cuda:: \
        > "$out/kernels-tests.txt" 2>&1
    rc=$?
    echo "kernels GPU tests: exit $rc in $(( $(date +%s) - started )) s"
    grep -E "^test |test result" "$out/kernels-tests.txt" | tail -20
    [[ $rc == 0 ]] || status=1
fi
run() {
    local name=$1 prover=$2 caps=$3 limit=$4
    echo "== $name: $prover, caps $caps"
    PROVER=$prover CAPS=$caps KERNEL_TESTS=0 BENCH_TIMEOUT=$limit \
        bash "$here/gpu-streamed.sh" "$out/$name" > "$out/$name.out" 2>&1 || status=1
    grep -E "^bench:|^command:" "$out/$name.out"
    cat "$out/$name/summary.txt"
    mv "$out/$name.out" "$out/$name/"
    tar czf "$out/$name.tgz" -C "$out" "$name" && rm -rf "${out:?}/$name"
}
if [[ -n ${BASE:-} ]]; then
    run base "$BASE" "${BASE_CAPS:-none}" "${BASE_TIMEOUT:-0}"
fi
run new device-bin/proofpipe-prover "${NEW_CAPS:-none,12GiB}" "${NEW_TIMEOUT:-0}"
exit $status
