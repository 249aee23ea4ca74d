#!/usr/bin/env bash
# On the GPU machine: the real 32 GiB PoRep partition (filecoin-proofs 19.1's StackedCircuit
# for StackedDrg32GiBV1_1, 130,278,869 constraints, a 2^27 domain) through the pipeline, one
# proof's 10 partitions, with timing-only parameters of its exact query counts and placeholder
# vanilla proofs of its exact shape, both from the committed counts (filecoin/src/shape.rs,
# ADR 0019): no sector and no parameter files needed. No proof verifies; timing only.
#
#   scripts/gpu-porep-shape.sh OUT_DIR        # device-bin/proofpipe-prover from scripts/cuda-build.sh
#
# For each mode of MODES (one pass, then two-pass from the R1CS matrices), RUNS runs of
#   proofpipe-prover bench --porep-shape SIZE --partitions PARTITIONS --synthesis MODE --no-warmup
# each with its JSON report (.json), text (.txt), log (.log), timeline (.svg) and nvidia-smi trace
# (.smi.csv), the plans first (plan-*.txt), a short table at the end (summary.txt).
#
# A run is started only if the last one of its mode fits in what is left of BUDGET seconds
# (the first of a mode: if EST_<MODE> seconds do), and killed at the budget's end.
# One 32 GiB partition takes minutes to synthesize on one core, so a 10-partition run with
# pw=3 (128 GiB) is ~4 synthesis waves: more than one device call. With the bench's replay
# option (REPLAY_FLAG, default: --replay-synthesis when `bench --help` lists it) only the first
# wave is synthesized and later partitions reuse it, so the GPU stage's steady state is
# measured in one call. docs/benchmarks.md ("32 GiB PoRep partition shape") has the estimates.
#
# Env: SIZE (32GiB), PARTITIONS (10), MODES ("one-pass matrices"), RUNS (3), BUDGET (480),
# EST_ONE_PASS / EST_MATRICES (first-run estimates, s), EXTRA (more bench flags), PROVER.
set -uo pipefail
out=${1:?usage: scripts/gpu-porep-shape.sh OUT_DIR}
prover=${PROVER:-device-bin/proofpipe-prover}
size=${SIZE:-32GiB}
partitions=${PARTITIONS:-10}
modes=${MODES:-one-pass matrices}
runs=${RUNS:-3}
budget=${BUDGET:-480}
extra=${EXTRA:-}
mkdir -p "$out"
export LD_LIBRARY_PATH="${LD_LIBRARY_PATH:-}:/usr/local/nvidia/lib64"
export RUST_LOG=${RUST_LOG:-info}
start=$(date +%s)
left() { echo $(( budget - ($(date +%s) - start) )); }

replay=${REPLAY_FLAG-auto}
if [[ "$replay" == auto ]]; then
    replay=""
    "$prover" bench --help 2>/dev/null | grep -q -- '--replay-synthesis' && replay=--replay-synthesis
fi
{
    date -u
    nvidia-smi --query-gpu=name,driver_version,memory.total,memory.used --format=csv
    nproc
    free -g
    cat /sys/fs/cgroup/memory.max 2>/dev/null
    echo "replay flag: ${replay:-none (this binary has no --replay-synthesis)}"
} > "$out/machine.txt" 2>&1
cat "$out/machine.txt"

# The plans, from the committed counts (instant), under the process's own limit.
for mode in $modes; do
    "$prover" plan --porep-shape "$size" --partitions "$partitions" --synthesis "$mode" \
        --gpus 1 > "$out/plan-$mode.txt" 2>&1 || echo "plan for $mode failed: $(tail -1 "$out/plan-$mode.txt")"
done

status=0
for mode in $modes; do
    est_var="EST_$(tr 'a-z-' 'A-Z_' <<< "$mode")"
    last=${!est_var:-$([[ $mode == matrices ]] && echo 420 || echo 330)}
    if ! grep -q '^partition_workers' "$out/plan-$mode.txt"; then
        echo "== $mode: skipped, it does not fit this machine ($(tail -1 "$out/plan-$mode.txt"))"
        continue
    fi
    for run in $(seq 1 "$runs"); do
        remaining=$(left)
        if (( remaining < last )); then
            echo "== $mode run $run: skipped, ${remaining}s left of the budget and a run takes ~${last}s"
            break
        fi
        name="porep-$size-$mode-r$run"
        nvidia-smi --query-gpu=timestamp,memory.used,utilization.gpu --format=csv,noheader -lms 250 \
            > "$out/$name.smi.csv" 2>/dev/null &
        smi=$!
        t0=$(date +%s)
        # shellcheck disable=SC2086 # replay and extra hold flags
        timeout "$remaining" "$prover" bench --porep-shape "$size" --partitions "$partitions" \
            --synthesis "$mode" --no-warmup --plot "$out/$name.svg" --json $replay $extra \
            > "$out/$name.txt" 2> "$out/$name.log"
        rc=$?
        kill "$smi" 2>/dev/null
        last=$(( $(date +%s) - t0 ))
        tail -1 "$out/$name.txt" | grep '^{' > "$out/$name.json"
        smi_peak=$(awk -F', ' '{gsub(/ MiB/,"",$2); if ($2+0 > m) m = $2+0} END {print m}' "$out/$name.smi.csv")
        echo "== $name rc=$rc ${last}s nvidia-smi-peak-MiB=$smi_peak"
        grep -E '^(pipeline|memory|steady|plan|GPU memory)' "$out/$name.txt"
        if [[ $rc != 0 ]]; then
            status=1
            tail -3 "$out/$name.log"
            break
        fi
    done
done

# The table: seconds per partition (whole run and steady state), device busy, peaks.
python3 - "$out" > "$out/summary.txt" <<'EOF' || echo "(no python3: see the .txt files)" > "$out/summary.txt"
import glob, json, os, sys
rows = []
for path in sorted(glob.glob(os.path.join(sys.argv[1], "porep-*.json"))):
    try:
        r = json.load(open(path))
    except ValueError:
        continue
    p, plan, st = r["pipeline"], r["plan"], r["pipeline"].get("steady") or {}
    gib = lambda b: "%.1f" % (b / 2**30) if b else "n/a"
    rows.append([
        os.path.basename(path)[:-5], r["synthesis"], "%d" % p["proofs"],
        "%.2f" % p["seconds_per_proof"], "%.3f" % st.get("seconds_per_proof", float("nan")),
        "%.0f%%" % (100 * (st.get("device_busy") or 0)),
        "%d/%d/%d" % (plan["partition_workers"], plan["channel_capacity"], plan["gpu_workers"]),
        gib(p.get("peak_rss_bytes")), gib(plan["predicted_peak_bytes"]),
        "%.0f" % r.get("params_seconds", 0), "%.0f" % r.get("matrices_seconds", 0),
    ])
head = ["run", "synthesis", "partitions", "s/partition (whole)", "s/partition (steady)",
        "device busy", "pw/cap/gw", "peak RSS GiB", "predicted GiB", "params s", "matrices s"]
print("| " + " | ".join(head) + " |")
print("|" + "---|" * len(head))
for row in rows:
    print("| " + " | ".join(row) + " |")
print("\nseed engine (cuzk, RTX 5070 Ti, ../shared/notes/anchors.md): ~3.7 s per 32 GiB partition, GPU-bound")
EOF
cat "$out/summary.txt"
echo "total $(( $(date +%s) - start ))s"
exit $status
