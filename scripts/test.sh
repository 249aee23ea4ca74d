#!/usr/bin/env bash
# Runs every test once, slow ones included. Tests that need a Kubernetes API server use
# $KUBECONFIG; when it is unset and ../shared/kube-testenv exists, one is started for the run.
set -euo pipefail
cd "$(dirname "$0")/.."

testenv=../shared/kube-testenv
testdata_pid=
beside_pid=
beside_log=
started_testenv=
step_started=$(date +%s)
step_times=()
# Records the time since the last step under $1 (printed at the end, also on failure).
step() {
  local now
  now=$(date +%s)
  step_times+=("$(printf '%6d s  %s' "$(( now - step_started ))" "$1")")
  step_started=$now
}
cleanup() {
  if [ -n "$testdata_pid" ]; then kill "$testdata_pid" 2>/dev/null || true; fi
  # Its own process group (setsid below): the lints' cargo and rustc go with it.
  if [ -n "$beside_pid" ]; then kill -- "-$beside_pid" 2>/dev/null || true; fi
  if [ -n "$started_testenv" ]; then "$testenv/stop.sh" "$KUBE_TESTENV_DIR" >/dev/null 2>&1 || true; fi
  echo "== scripts/test.sh step times"
  printf '%s\n' "${step_times[@]}"
}
trap cleanup EXIT
if [ -z "${KUBECONFIG:-}" ] && [ -x "$testenv/start.sh" ]; then
  # The admission build: it enforces ValidatingAdmissionPolicies and allows impersonation,
  # so the prover-identity policy is tested on the API server's own CEL
  # (operator/tests/prover_identity_admission.rs) and chart-check applies it.
  eval "$(KUBE_TESTENV_ADMISSION=1 "$testenv/start.sh")"
  started_testenv=1
  echo "started kube-testenv: KUBECONFIG=$KUBECONFIG"
fi
if [ -z "${KUBECONFIG:-}" ]; then
  # In CI a cluster test that skips is a test that did not run: refuse.
  if [ "${CI:-}" = true ]; then echo "CI: no API server (../shared/kube-testenv missing or failed to start)" >&2; exit 1; fi
  echo "KUBECONFIG is unset: tests that need an API server will skip" >&2
fi

# Filecoin test data (parameters from random setups, sealed 2 KiB sectors, SnapDeals and PoSt
# inputs), made once: ~5 min on 2 cores (10 core-minutes, most of it the random setups), so it
# runs with the prover binary while the tests compile (both are CPU-bound, but the compile
# leaves a core idle in its serial stretches).
#
# The data depends only on the generator (the script, the prover's test-data commands) and on
# filecoin-proofs' version (Cargo.lock), so it is kept outside the clone under a key of their
# contents: runs on the same machine share it, a change to any of them makes it anew. Set
# PROOFPIPE_FILECOIN_TESTDATA to use (or make) a directory of your own instead.
testdata_inputs=(scripts/filecoin-testdata.sh Cargo.lock filecoin/src/testdata.rs
  filecoin/src/post_testdata.rs filecoin/src/params.rs prover/src/cli/porep.rs
  prover/src/cli/snap.rs prover/src/cli/post.rs pipeline/src/params/random_setup.rs)
testdata_key=$(cat "${testdata_inputs[@]}" | sha256sum | cut -c1-16)
testdata_cache="${PROOFPIPE_CACHE_DIR:-${XDG_CACHE_HOME:-$HOME/.cache}/proofpipe}/filecoin-testdata"
testdata_dir="${PROOFPIPE_FILECOIN_TESTDATA:-$testdata_cache/$testdata_key}"
testdata_out=$(mktemp)
testdata_log=$(mktemp)
if [ -n "${PROOFPIPE_FILECOIN_TESTDATA:-}" ] || [ ! -f "$testdata_dir/complete" ]; then
  echo "making the Filecoin test data in $testdata_dir (key of ${testdata_inputs[*]})" >&2
  # Built as the workspace's tests build it: `cargo build -p proofpipe-prover` resolves features
  # for the prover alone (tokio, kube, tower and others differ), so every crate above those
  # would be compiled twice (~15 min of a 2-core CI machine). A test target of the workspace
  # build brings the binary with the very units `cargo test --workspace` uses next.
  cargo test --workspace --locked --no-run --test filecoin
  # Older keys' data (~1.8 GB each) goes: it can only be made again, never used again.
  if [ -z "${PROOFPIPE_FILECOIN_TESTDATA:-}" ] && [ -d "$testdata_cache" ]; then
    find "$testdata_cache" -mindepth 1 -maxdepth 1 -type d ! -name "$testdata_key" -exec rm -rf {} +
  fi
  ( PROOFPIPE_PROVER_BIN="$PWD/${CARGO_TARGET_DIR:-target}/debug/proofpipe-prover" \
      scripts/filecoin-testdata.sh "$testdata_dir" && touch "$testdata_dir/complete" ) \
    > "$testdata_out" 2> "$testdata_log" &
  testdata_pid=$!
else
  echo "reusing the Filecoin test data in $testdata_dir" >&2
fi
step "start kube-testenv, build the prover"
cargo test --workspace --locked --no-run
step "build every test (beside the Filecoin test data)"
if [ -n "$testdata_pid" ]; then
  if ! wait "$testdata_pid"; then
    testdata_pid=
    cat "$testdata_log" >&2
    echo "making the Filecoin test data failed (scripts/filecoin-testdata.sh)" >&2
    exit 1
  fi
  testdata_pid=
  cat "$testdata_log" >&2
fi
step "the rest of the Filecoin test data"
PROOFPIPE_FILECOIN_TESTDATA="$testdata_dir"
# An S3-compatible server (moto, from PyPI) for the cluster scenario's inputs and outputs.
PROOFPIPE_S3_SERVER="$(scripts/s3-test-server.sh)"
# A gRPC client that is not ours (Python grpcio) for the gateway's curio-client test.
PROOFPIPE_GRPC_PYTHON="$(scripts/grpc-test-client.sh)"
export PROOFPIPE_FILECOIN_TESTDATA PROOFPIPE_S3_SERVER PROOFPIPE_GRPC_PYTHON
step "install the S3 test server and grpcio"

# PROOFPIPE_BESIDE_TESTS: a command run beside the tests from here on (CI's lints: the cluster
# tests spend much of their time waiting on the API server, with cores idle), waited for and
# judged at the end.
if [ -n "${PROOFPIPE_BESIDE_TESTS:-}" ]; then
  beside_log=$(mktemp)
  # Niced: the tests' own deadlines come first.
  setsid nice -n 10 bash -c "$PROOFPIPE_BESIDE_TESTS" > "$beside_log" 2>&1 &
  beside_pid=$!
fi

# The slow recounts of the 32 GiB and 64 GiB PoRep partitions (~170 s each; the committed 32 GiB
# counts are also held to the seed engine's numbers by a fast test) and PoSt partitions (~8.5 min
# each) run by hand:
#   cargo test -p proofpipe-filecoin --lib -- --ignored counted_shape_of
#   cargo test -p proofpipe-filecoin --lib -- --ignored counted_post_shape_of
#
# The Filecoin scenario and the quickstart page run after them, from the container images'
# root filesystems (below), so they are skipped here.
image_test_names=(--skip a_sealed_sector_is_proved_from_s3_and_verify_seal_accepts_the_proof
  --skip the_filecoin_quickstart_page_runs_from_parameters_to_a_verified_proof)
cargo test --workspace --locked -- --include-ignored \
  --skip shape_of_32gib_matches_a_recount --skip shape_of_64gib_matches_a_recount \
  "${image_test_names[@]}"
step "cargo test (every test)"
# Their executables, as the workspace build made them: `cargo test` with other package or
# target arguments resolves features anew and rebuilds the e2e crate (minutes on 2 cores).
image_test_bins=$(cargo test --workspace --locked --no-run --message-format=json 2>/dev/null \
  | python3 -c '
import json, sys
for line in sys.stdin:
    m = json.loads(line)
    if m.get("reason") == "compiler-artifact" and m.get("executable") \
            and m["target"]["name"] in ("scenario_filecoin", "quickstart_filecoin"):
        print(m["executable"])')
if [ "$(wc -l <<<"$image_test_bins")" != 2 ]; then
  echo "the Filecoin scenario's or the quickstart's test executable is missing: $image_test_bins" >&2
  exit 1
fi
# Runs them as cargo runs an integration test (from its package's directory), with the
# binaries under test in $1 (empty: target/).
run_image_tests() {
  local test_bin
  for test_bin in $image_test_bins; do
    (cd tests/e2e && PROOFPIPE_BIN_DIR="$1" "$test_bin")
  done
}
# The images (docs/images.md), built from the binaries just tested, then the Filecoin scenario
# and the quickstart with the prover, operator and gateway run from the images' root
# filesystems: entrypoint, user, paths and libraries as the images hold them. Without
# Debian's image tools (mmdebstrap, umoci, skopeo, bubblewrap) they run from target/ instead,
# except in CI, which installs them.
image_dir="${CARGO_TARGET_DIR:-target}/images"
if command -v mmdebstrap >/dev/null && command -v umoci >/dev/null && command -v skopeo >/dev/null \
    && command -v bwrap >/dev/null; then
  BIN_DIR="${CARGO_TARGET_DIR:-target}/debug" scripts/images.sh build "$image_dir"
  scripts/images.sh check "$image_dir"
  # The test data is bound into the images' sandboxes wherever it lives (a cache outside
  # $HOME, or PROOFPIPE_FILECOIN_TESTDATA elsewhere).
  IMAGE_BINDS="$(cd "$testdata_dir" && pwd)${IMAGE_BINDS:+:$IMAGE_BINDS}" \
    scripts/images.sh unpack "$image_dir" "$image_dir/bin"
  step "build the images, check and unpack them"
  # Each image once under a real OCI runtime (runc) with the chart's security context: the
  # user, no capabilities, no_new_privs, seccomp, a read-only root (a few seconds).
  if command -v runc >/dev/null && [ "$(id -u)" = 0 ]; then
    scripts/images-run.sh "$image_dir"
    step "the images under runc with the chart's security context"
  elif [ "${CI:-}" = true ]; then
    echo "CI: runc missing or not root: the images cannot be run under an OCI runtime" >&2; exit 1
  else
    echo "runc missing or not root (apt-get install runc): the images are not run under an OCI runtime" >&2
  fi
  run_image_tests "$(cd "$image_dir/bin" && pwd)"
  step "the Filecoin scenario and the quickstart from the images"
else
  if [ "${CI:-}" = true ]; then echo "CI: mmdebstrap, umoci, skopeo or bwrap missing: the images cannot be built" >&2; exit 1; fi
  echo "mmdebstrap, umoci, skopeo or bwrap missing (apt-get install mmdebstrap umoci skopeo bubblewrap): the Filecoin scenario and the quickstart run from target/, not from the images" >&2
  run_image_tests "$(cd "${CARGO_TARGET_DIR:-target}/debug" && pwd)"
  step "the Filecoin scenario and the quickstart (from target/: no image tools)"
fi
# The Helm chart: lint, render, Kubernetes schemas, and an apply to the same API server.
scripts/chart-check.sh
step "scripts/chart-check.sh"
# Every relative link and anchor in the Markdown docs resolves.
python3 scripts/docs-check.py --self-test; python3 scripts/docs-check.py
step "scripts/docs-check.py"
if [ -n "$beside_pid" ]; then
  beside_rc=0
  wait "$beside_pid" || beside_rc=$?
  beside_pid=
  cat "$beside_log"
  step "wait for PROOFPIPE_BESIDE_TESTS"
  if [ "$beside_rc" != 0 ]; then
    echo "PROOFPIPE_BESIDE_TESTS failed (exit $beside_rc): $PROOFPIPE_BESIDE_TESTS" >&2
    exit "$beside_rc"
  fi
fi
