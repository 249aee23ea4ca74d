#!/usr/bin/env bash
# On the GPU machine: base points streamed from page-locked host memory to a card held to a
# smaller size (PROOFPIPE_GPU_MEMORY, the backend's cap), against the whole card, in one call.
#
#   scripts/gpu-streamed.sh OUT_DIR
#
# 1. The kernels' GPU tests (device-bin/kernels-tests from CUDA_BUILD_TESTS=1
#    scripts/cuda-build.sh): streamed MSMs equal resident and CPU ones, mixed placements, the
#    cap refusing an over-cap upload.
# 2. The 32 GiB PoRep shape's GPU stage (replayed synthesis, timing-only parameters) at each cap
#    of CAPS, one bench call (parameters made once), RUNS runs each, with an nvidia-smi trace.
#    SHAPE=snap benchmarks the SnapDeals update proof's shape instead, SHAPE=window-post one
#    32 GiB WindowPoSt partition (StackedDrgWindow<PROOF>V1_2); both from their R1CS matrices
#    and the native witness, as the daemon proves them (SYNTHESIS=one-pass for the gadgets).
#
# Env: CAPS ("none,24GiB,16GiB"), RUNS (3), SHAPE (porep, snap or window-post), PROOF (32GiB),
# PARTITIONS (the proof's: 10 for PoRep, 16 for SnapDeals, 1 for a WindowPoSt partition),
# SYNTHESIS (matrices), ALONE (0: runs of the first partition's synthesis alone, before the
# pipeline runs: `bench --synthesis-alone`), PROVER, FEED (--replay-synthesis; empty to
# synthesize each partition), KERNEL_TESTS (1; 0 skips step 1), BENCH_TIMEOUT (seconds, 0 for
# none: a bench cut short still leaves the runs it finished, and their table, in OUT_DIR).
set -uo pipefail
out=${1:?usage: scripts/gpu-streamed.sh OUT_DIR}
prover=${PROVER:-device-bin/proofpipe-prover}
caps=${CAPS:-none,24GiB,16GiB}
runs=${RUNS:-3}
proof=${PROOF:-32GiB}
feed=${FEED---replay-synthesis}
synthesis=${SYNTHESIS:-matrices}
case ${SHAPE:-porep} in
    porep) shape_args=(--porep-shape "$proof") ;;
    snap) shape_args=(--snap-shape "$proof") ;;
    window-post) shape_args=(--post-shape "StackedDrgWindow${proof}V1_2") ;;
    *) echo "SHAPE must be porep, snap or window-post, not ${SHAPE}" >&2; exit 2 ;;
esac
shape_args+=(--synthesis "$synthesis" --synthesis-alone "${ALONE:-0}")
mkdir -p "$out"
source "$(dirname "$0")/gpu-machine.sh" "$out"
echo "command: SHAPE=${SHAPE:-porep} CAPS=$caps RUNS=$runs SYNTHESIS=$synthesis ALONE=${ALONE:-0} FEED=$feed ${PARTITIONS:+PARTITIONS=$PARTITIONS }scripts/gpu-streamed.sh" | tee -a "$out/machine.txt"

status=0
if [[ ${KERNEL_TESTS:-1} != 0 && -x device-bin/kernels-tests ]]; then
    started=$(date +%s)
    PROOFPIPE_REQUIRE_GPU=1 device-bin/kernels-tests --test-threads=1 cuda:: \
        > "$out/kernels-tests.txt" 2>&1
    rc=$?
    echo "kernels GPU tests: exit $rc in $(( $(date +%s) - started )) s"
    grep -E "^test |test result" "$out/kernels-tests.txt" | tail -40
    [[ $rc == 0 ]] || status=1
fi

nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader -l 1 > "$out/nvidia-smi.csv" 2>&1 &
smi=$!
started=$(date +%s)
# shellcheck disable=SC2086
timeout "${BENCH_TIMEOUT:-0}" "$prover" bench "${shape_args[@]}" $feed --gpu-memory-caps "$caps" \
    ${PARTITIONS:+--partitions "$PARTITIONS"} \
    --runs "$runs" --json > "$out/bench.txt" 2> "$out/bench.log"
rc=$?
kill $smi 2>/dev/null
echo "bench: exit $rc in $(( $(date +%s) - started )) s"
grep '^{' "$out/bench.txt" > "$out/bench.json" || true
[[ $rc == 0 ]] || { status=1; tail -5 "$out/bench.log"; }

python3 - "$out" > "$out/summary.txt" <<'EOF' || echo "(no summary)" > "$out/summary.txt"
import json, os, statistics, sys
runs = [json.loads(l) for l in open(os.path.join(sys.argv[1], "bench.json")) if l.strip()]
by_cap = {}
for r in runs:
    by_cap.setdefault(r.get("gpu_memory_cap_bytes"), []).append(r)
alone = runs[0].get("synthesis_alone") if runs else None
if alone:
    print("synthesis of partition 0 alone (%d threads): wall %s s, CPU %s core-s" % (
        alone["synthesis_threads"], ", ".join("%.2f" % s for s in alone["wall_seconds"]),
        ", ".join("%.1f" % s for s in alone["cpu_seconds"])))
print("| cap | streamed | quotient buffers | runs | s per proof: median (min-max) | first run s (x median) | steady s/proof | device peak GiB (sampled) | held by the backend GiB | plan GiB | peak RSS GiB (max) | host plan GiB |")
print("|---|---|---|---|---|---|---|---|---|---|---|---|")
base = None
for cap, rs in by_cap.items():
    secs = [r["pipeline"]["seconds_per_proof"] for r in rs]
    steady = [r["pipeline"]["steady"]["seconds_per_proof"] for r in rs if r["pipeline"].get("steady")]
    med = statistics.median(secs)
    base = base or med
    gpu = rs[0]["plan"].get("gpu") or {}
    placement = gpu.get("placement") or {}
    streamed = ",".join(q for q, p in placement.items() if p == "streamed") or "-"
    peak = max(r["pipeline"]["memory"]["at_peak_device"]["device_bytes"] for r in rs) / 2**30
    held = max(max(r.get("device_memory_held_bytes") or [0]) for r in rs) / 2**30
    rss = max(r["pipeline"]["peak_rss_bytes"] for r in rs) / 2**30
    print("| %s | %s | %s | %d | %.3f (%.3f-%.3f), %.2fx | %.3f (%.2fx) | %s | %.1f | %.1f | %.1f | %.2f | %.2f |" % (
        "none" if cap is None else "%.0f GiB" % (cap / 2**30), streamed,
        gpu.get("quotient_buffers", "-"), len(rs), med, min(secs), max(secs), med / base,
        secs[0], secs[0] / med, "%.3f" % statistics.median(steady) if steady else "-", peak, held,
        gpu.get("predicted_device_bytes", 0) / 2**30, rss,
        rs[0]["plan"]["predicted_peak_bytes"] / 2**30))
EOF
cat "$out/summary.txt"
"$prover" --version > "$out/version.txt" 2>&1 || true
exit $status
