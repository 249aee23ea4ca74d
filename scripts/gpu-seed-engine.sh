#!/usr/bin/env bash
# On the GPU machine: cuzk, curio's GPU proving engine (filecoin-project/curio, extern/cuzk),
# beside proofpipe's bench on the same card, on the same 32 GiB PoRep C2 shape: the timing-only
# parameters and placeholder partitions `bench --porep-shape 32GiB` times, written for cuzk as
# Filecoin's .params/.vk and curio's commit-2 JSON (`proofpipe-prover cuzk-inputs`). Nothing
# verifies: cuzk proves each proof whole, then its self-check (verify_seal, which cannot be
# turned off) fails it, so every cuzk proof reports FAILED after its full proving time.
#
#   scripts/gpu-seed-engine.sh OUT_DIR [PHASE...]
#
# PHASEs (default: all of them, in this order). One device call runs 10 minutes at most, so
# run them over calls on one warm machine (WORK keeps the state between calls), e.g.
#   call 1: scripts/gpu-seed-engine.sh "$OUT" inputs ours      (~3 + ~5 min)
#   call 2: scripts/gpu-seed-engine.sh "$OUT" cuzk-pce         (~9 min)
#   call 3: scripts/gpu-seed-engine.sh "$OUT" cuzk-nopce clean (~9 min)
#   inputs       the .params (~47 GB) and .vk into WORK/params, the C1 into WORK/c1.json
#   cuzk-pce     cuzk-daemon in pipeline mode, N proofs sent at once by cuzk-bench batch; the
#                PCE (pre-compiled constraint evaluator) extracted in the background during the
#                first proof and used by the partitions synthesized after it
#   cuzk-nopce   the same with CUZK_DISABLE_PCE=1 (the PCE is still extracted in the
#                background, during the first proof, but never used)
#   ours         device-bin/proofpipe-prover bench --porep-shape 32GiB --synthesis matrices
#                --runs RUNS --json (OURS_PARTITIONS=30: three proofs' partitions through one
#                pipeline per run, the steady state across proofs that cuzk's run measures)
#   clean        delete the parameters, the C1 and the binaries from WORK (results are kept)
# Every call ends with the table of what WORK/results holds so far (OUT_DIR/table.md): per
# proof steady seconds, GPU memory peak (nvidia-smi, the whole card, sampled every second),
# host memory peak (the process's VmHWM), for each engine and mode.
#
# Binaries: cuzk-daemon and cuzk-bench from .seed-engine/bin/*.xz (built on the development
# machine from curio's public source; carried, git-ignored), decompressed into WORK/bin;
# PROVER (default device-bin/proofpipe-prover, or .seed-engine/bin/proofpipe-prover.xz where
# that one predates `cuzk-inputs`; PROVER.xz is decompressed when PROVER is not there) must
# have `cuzk-inputs`. Carry them: run(carry=[".seed-engine/bin"]) (and "device-bin" for its).
#
# Disk: the GPU machine has 64 GiB. The parameters take 44.1 GiB; cuzk saves its extracted
# PCE (25.7 GiB) beside them, which would not fit: a directory named as its temporary file
# makes that save fail at once (cuzk logs it as non-fatal) and the PCE stays in memory only.
#
# Env: WORK (a folder outside OUT_DIR on the largest disk: /var/tmp/seed-engine-work), N
# (proofs per cuzk run, 5), RUNS (our bench's runs, 3), PROVER, CUZK_TIMEOUT (s per cuzk run,
# 500: the proofs done by then are still counted, from the daemon's log), BENCH_TIMEOUT (s,
# 540), BUDGET_MARGIN_GIB (cuzk's memory budget is the cgroup limit, or MemTotal, less this:
# 10), CUZK_GPU_WORKERS (gpus.gpu_workers_per_device: 2, cuzk's default), SIZE (32GiB; cuzk
# proves 32 GiB only, a smaller size is for trying the inputs and ours phases on any machine).
set -uo pipefail
out=${1:?usage: scripts/gpu-seed-engine.sh OUT_DIR [inputs|cuzk-pce|cuzk-nopce|ours|clean ...]}
shift
phases=("$@")
[[ ${#phases[@]} -gt 0 ]] || phases=(inputs cuzk-pce cuzk-nopce ours)
root=$(cd "$(dirname "$0")/.." && pwd)
work=${WORK:-/var/tmp/seed-engine-work}
n=${N:-5}
runs=${RUNS:-3}
# device-bin's prover, unless it predates cuzk-inputs and .seed-engine/bin has one that has it.
prover=${PROVER:-$root/device-bin/proofpipe-prover}
if [[ -z ${PROVER:-} && -f $root/.seed-engine/bin/proofpipe-prover.xz ]] \
    && ! "$prover" cuzk-inputs --help > /dev/null 2>&1; then
    prover=$root/.seed-engine/bin/proofpipe-prover
fi
mkdir -p "$out" "$work/results" "$work/bin"
source "$(dirname "$0")/gpu-machine.sh" "$out"
echo "command: N=$n RUNS=$runs WORK=$work scripts/gpu-seed-engine.sh OUT ${phases[*]}" | tee -a "$out/machine.txt"
df -h "$work" | tee -a "$out/machine.txt"
status=0

unpack() { # NAME SOURCE.xz -> WORK/bin/NAME
    local dst="$work/bin/$1"
    if [[ ! -x $dst || $2 -nt $dst ]]; then
        xz -dc "$2" > "$dst.partial" && chmod +x "$dst.partial" && mv "$dst.partial" "$dst"
    fi
    echo "$dst"
}
if [[ ! -x $prover && -f $prover.xz ]]; then prover=$(unpack proofpipe-prover "$prover.xz"); fi
echo "prover: $prover ($("$prover" --version 2>&1))" | tee -a "$out/machine.txt"
cat "$root/.seed-engine/bin/BUILD.txt" >> "$out/machine.txt" 2>/dev/null

# Samplers: the card's memory in use every second (nvidia-smi), and the process's resident
# memory every second plus its high-water mark (VmHWM) at the end.
start_sampling() { # TAG PID
    nvidia-smi --query-gpu=timestamp,memory.used --format=csv,noheader,nounits -l 1 \
        > "$work/results/$1.smi.csv" 2>&1 &
    smi_pid=$!
    (
        while kill -0 "$2" 2>/dev/null; do
            # time, VmHWM, VmRSS (kB), in /proc's order
            echo "$(date +%s) $(awk '/^VmHWM|^VmRSS/ {printf "%s ", $2}' "/proc/$2/status" 2>/dev/null)"
            sleep 1
        done
    ) > "$work/results/$1.rss.txt" &
    rss_pid=$!
}
stop_sampling() {
    kill "$smi_pid" 2>/dev/null
    wait "$rss_pid" 2>/dev/null
}
gpu_baseline() {
    nvidia-smi --query-gpu=memory.used --format=csv,noheader,nounits | head -1
}

phase_inputs() {
    if ! "$prover" cuzk-inputs --help > /dev/null 2>&1; then
        echo "$prover has no cuzk-inputs: rebuild it from this commit (scripts/cuda-build.sh)"
        return 1
    fi
    rm -rf "$work/params" "$work/c1.json"
    mkdir -p "$work/params"
    local started=$(date +%s)
    "$prover" cuzk-inputs --porep-shape "${SIZE:-32GiB}" --c1 "$work/c1.json" --params-dir "$work/params" \
        --json > "$work/results/inputs.json" 2> "$out/inputs.log"
    local rc=$?
    echo "inputs: exit $rc in $(( $(date +%s) - started )) s"
    cat "$work/results/inputs.json"
    ls -l "$work/params" "$work/c1.json"
    df -h "$work"
    return $rc
}

phase_cuzk() { # pce | nopce
    local mode=$1 tag="cuzk-$1"
    [[ -s $work/c1.json ]] || { echo "$tag: no inputs in $work (run the inputs phase)"; return 1; }
    local daemon bench
    daemon=$(unpack cuzk-daemon "$root/.seed-engine/bin/cuzk-daemon.xz") || return 1
    bench=$(unpack cuzk-bench "$root/.seed-engine/bin/cuzk-bench.xz") || return 1
    # No PCE file on disk (a 25.7 GiB save would not fit beside the parameters), none loaded.
    rm -f "$work/params"/pce-*.bin
    mkdir -p "$work/params/pce-porep-32g.tmp"
    local limit total
    limit=$(cat /sys/fs/cgroup/memory.max 2>/dev/null)
    total=$(( $(awk '/^MemTotal/ {print $2}' /proc/meminfo) * 1024 ))
    [[ $limit =~ ^[0-9]+$ && $limit -lt $total ]] || limit=$total
    local budget_gib=$(( limit / 1024**3 - ${BUDGET_MARGIN_GIB:-10} ))
    local sock="$work/cuzk.sock"
    cat > "$work/$tag.toml" <<EOF
# cuzk's defaults but for: a unix socket (nothing listens on the network), the parameter
# directory, and the memory budget from this machine's limit ("auto" reads MemTotal only).
[daemon]
listen = "unix://$sock"
[srs]
param_cache = "$work/params"
[memory]
total_budget = "${budget_gib}GiB"
[gpus]
gpu_workers_per_device = ${CUZK_GPU_WORKERS:-2}
[pipeline]
enabled = true
EOF
    cp "$work/$tag.toml" "$work/results/$tag.toml"
    local env=(FIL_PROOFS_PARAMETER_CACHE="$work/params" RUST_LOG=info)
    [[ $mode == nopce ]] && env+=(CUZK_DISABLE_PCE=1)
    local base started
    base=$(gpu_baseline)
    started=$(date +%s)
    env "${env[@]}" "$daemon" --config "$work/$tag.toml" > "$work/results/$tag.daemon.log" 2>&1 &
    local pid=$!
    start_sampling "$tag" "$pid"
    for _ in $(seq 60); do [[ -S $sock ]] && break; kill -0 $pid 2>/dev/null || break; sleep 1; done
    if [[ ! -S $sock ]]; then
        echo "$tag: the daemon did not start"; tail -20 "$work/results/$tag.daemon.log"
        kill $pid 2>/dev/null; stop_sampling; return 1
    fi
    timeout "${CUZK_TIMEOUT:-500}" "$bench" --addr "unix://$sock" batch -t porep \
        --c1 "$work/c1.json" -c "$n" -j "$n" > "$work/results/$tag.batch.txt" 2>&1
    local rc=$?
    awk '/^VmHWM/ {print $2 * 1024}' "/proc/$pid/status" > "$work/results/$tag.hwm" 2>/dev/null
    kill -INT $pid 2>/dev/null
    for _ in $(seq 10); do kill -0 $pid 2>/dev/null || break; sleep 1; done
    kill -9 $pid 2>/dev/null
    wait $pid 2>/dev/null
    stop_sampling
    echo "$base" > "$work/results/$tag.smi-base"
    echo "$tag: cuzk-bench exit $rc in $(( $(date +%s) - started )) s"
    grep -E '^\s+\[|^(total time|completed|failed)' "$work/results/$tag.batch.txt"
    grep -E 'SRS loaded|PCE extraction|PCE cached|failed to save PCE|self-check FAILED|panick|ERROR' \
        "$work/results/$tag.daemon.log" | sed 's/\x1b\[[0-9;]*m//g' | sort | uniq -c | sort -rn | head -12
    # A proof ran to its end when the daemon assembled it (its self-check then fails it, as
    # timing-only inputs must).
    local whole
    whole=$(grep -c "proof assembled" "$work/results/$tag.daemon.log")
    echo "$tag: $whole of $n proofs proved whole"
    [[ $rc == 0 && $whole == "$n" ]]
}

phase_ours() {
    local base started
    base=$(gpu_baseline)
    started=$(date +%s)
    # shellcheck disable=SC2086
    "$prover" bench --porep-shape "${SIZE:-32GiB}" --synthesis matrices --runs "$runs" --json \
        ${OURS_PARTITIONS:+--partitions "$OURS_PARTITIONS"} > "$work/results/ours.bench.txt" 2> "$work/results/ours.bench.log" &
    local pid=$!
    start_sampling ours "$pid"
    ( sleep "${BENCH_TIMEOUT:-540}"; kill "$pid" 2>/dev/null ) &
    local watchdog=$!
    wait $pid
    local rc=$?
    kill $watchdog 2>/dev/null
    stop_sampling
    # The process is gone: its high-water mark is the last one sampled.
    awk 'NF >= 2 && $2 > m {m = $2} END {print m * 1024}' "$work/results/ours.rss.txt" \
        > "$work/results/ours.hwm"
    echo "$base" > "$work/results/ours.smi-base"
    echo "ours: bench exit $rc in $(( $(date +%s) - started )) s"
    [[ $rc == 0 ]] || tail -5 "$work/results/ours.bench.log"
    return $rc
}

for phase in "${phases[@]}"; do
    case $phase in
        inputs) phase_inputs || status=1 ;;
        cuzk-pce) phase_cuzk pce || status=1 ;;
        cuzk-nopce) phase_cuzk nopce || status=1 ;;
        ours) phase_ours || status=1 ;;
        clean) rm -rf "$work/params" "$work/c1.json" "$work/bin" "$work/cuzk.sock"; df -h "$work" ;;
        *) echo "unknown phase $phase"; status=1 ;;
    esac
done

python3 - "$work/results" > "$out/table.md" <<'EOF' || echo "(no table)" > "$out/table.md"
import datetime, json, os, re, statistics, sys
d = sys.argv[1]
def read(name):
    p = os.path.join(d, name)
    return open(p, errors="replace").read() if os.path.exists(p) else None
def gpu_peak(tag):
    csv, base = read(tag + ".smi.csv"), read(tag + ".smi-base")
    if not csv:
        return "-"
    used = [int(l.split(",")[1]) for l in csv.splitlines() if l.count(",") == 1 and l.split(",")[1].strip().isdigit()]
    if not used:
        return "-"
    b = int(base) if base and base.strip().isdigit() else 0
    return "%.1f (card %.1f)" % ((max(used) - b) / 1024, max(used) / 1024)
def host_peak(tag):
    h = read(tag + ".hwm")
    return "%.1f" % (int(float(h)) / 2**30) if h and h.strip() else "-"
rows = []
for mode in ("pce", "nopce"):
    tag = "cuzk-" + mode
    text = read(tag + ".batch.txt")
    if text is None:
        continue
    log = re.sub(r"\x1b\[[0-9;]*m", "", read(tag + ".daemon.log") or "")
    # Completions from the daemon's log (there even when cuzk-bench was cut short: it prints
    # only once every proof is back), as seconds since the first request arrived; else from
    # cuzk-bench's lines (each request's own time, all sent at once).
    def stamps(pattern):
        out = []
        for line in log.splitlines():
            m = re.match(r"(\d{4}-\d\d-\d\dT\d\d:\d\d:\d\d(?:\.\d+)?)Z", line)
            if m and re.search(pattern, line):
                out.append(datetime.datetime.strptime(m.group(1)[:26], "%Y-%m-%dT%H:%M:%S.%f" if "." in m.group(1) else "%Y-%m-%dT%H:%M:%S"))
        return out
    sent, assembled = stamps(r"service: Prove\b"), stamps(r"proof assembled")
    if sent:
        # Only proofs proved whole count (their self-check fails after that, as expected).
        done = sorted((t - min(sent)).total_seconds() for t in assembled)
    else:
        done = sorted(float(m.group(2)) for m in re.finditer(r"\[\d+/\d+\] (\w+) \S+ ([\d.]+)s", text))
    errors = len(re.findall(r" ERROR .*(?:parse/SRS load failed|GPU proving failed|panick)", log))
    pce_parts = log.count("using PCE fast path")
    std_parts = log.count("using standard synthesis path")
    # Proofs sent at once: the k-th completion at done[k-1] s. Steady: the intervals after the
    # first proof (which includes the SRS load and, with PCE, its extraction).
    gaps = [b - a for a, b in zip(done[1:], done[2:])] if len(done) >= 3 else []
    steady = "%.1f (median of %d intervals; mean %.1f)" % (statistics.median(gaps), len(gaps), (done[-1] - done[1]) / (len(done) - 2)) if gaps else "-"
    rows.append(("cuzk, " + ("PCE" if mode == "pce" else "no PCE (CUZK_DISABLE_PCE=1)"),
                 "%d of %d sent" % (len(done), len(sent) or int((re.search(r"count:\s+(\d+)", text) or [0, 0])[1])),
                 steady, "%.1f" % done[0] if done else "-", gpu_peak(tag), host_peak(tag),
                 "partitions synthesized: %d with PCE, %d without%s" % (pce_parts, std_parts, "; %d errors in the daemon's log" % errors if errors else "")))
text = read("ours.bench.txt")
if text:
    runs = [json.loads(l) for l in text.splitlines() if l.startswith("{")]
    # A run is one job of `partitions` partitions (by default a proof's own: 10 at 32 GiB):
    # pipeline.seconds is the whole job, ramp-up included; steady.seconds_per_proof is the
    # interval between partitions leaving the GPU stage once the pipeline is full, so a
    # proof's steady time is that times the proof's partitions.
    per = lambda r: r.get("porep_shape", {}).get("partition", {}).get("partitions", 10)
    whole = [r["pipeline"]["seconds"] * per(r) / r["partitions"] for r in runs]
    steady = [r["pipeline"]["steady"]["seconds_per_proof"] * per(r) for r in runs if r["pipeline"].get("steady")]
    rss = max((r["pipeline"].get("peak_rss_bytes") or 0) for r in runs) / 2**30 if runs else 0
    rows.append(("proofpipe bench --synthesis matrices", "%d runs of %s partitions" % (len(runs), runs[0]["partitions"] if runs else "?"),
                 "%.1f (a proof's partitions x the median run's partition interval)" % statistics.median(steady) if steady else "-",
                 "%.1f (median whole proof, ramp-up included: %s)" % (statistics.median(whole), ", ".join("%.1f" % w for w in whole)) if whole else "-",
                 gpu_peak("ours"), host_peak("ours"),
                 "bench's own peak RSS %.1f GiB" % rss))
print("| engine | proofs | s per proof, steady | one proof s (cuzk: the first, sent with the rest, SRS load included) | GPU memory peak GiB (over idle; card) | host memory peak GiB (VmHWM) | notes |")
print("|---|---|---|---|---|---|---|")
for r in rows:
    print("| " + " | ".join(r) + " |")
EOF
cat "$out/table.md"
cp "$work/results"/*.{txt,json,toml,log,csv,hwm,smi-base} "$out/" 2>/dev/null
exit $status
