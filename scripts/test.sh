#!/usr/bin/env bash
# Runs every test once, slow ones included. Tests that need a Kubernetes API server use
# $KUBECONFIG; when it is unset and ../shared/kube-testenv exists, one is started for the run.
set -euo pipefail
cd "$(dirname "$0")/.."

testenv=../shared/kube-testenv
if [ -z "${KUBECONFIG:-}" ] && [ -x "$testenv/start.sh" ]; then
  eval "$("$testenv/start.sh")"
  trap '"$testenv/stop.sh" "$KUBE_TESTENV_DIR" >/dev/null 2>&1 || true' EXIT
  echo "started kube-testenv: KUBECONFIG=$KUBECONFIG"
fi
if [ -z "${KUBECONFIG:-}" ]; then
  # In CI a cluster test that skips is a test that did not run: refuse.
  if [ "${CI:-}" = true ]; then echo "CI: no API server (../shared/kube-testenv missing or failed to start)" >&2; exit 1; fi
  echo "KUBECONFIG is unset: tests that need an API server will skip" >&2
fi

# Filecoin PoRep test data (parameters from a random setup, a sealed 2 KiB sector), made once.
PROOFPIPE_FILECOIN_TESTDATA="$(scripts/filecoin-testdata.sh)"
# An S3-compatible server (moto, from PyPI) for the cluster scenario's inputs and outputs.
PROOFPIPE_S3_SERVER="$(scripts/s3-test-server.sh)"
# A gRPC client that is not ours (Python grpcio) for the gateway's curio-client test.
PROOFPIPE_GRPC_PYTHON="$(scripts/grpc-test-client.sh)"
export PROOFPIPE_FILECOIN_TESTDATA PROOFPIPE_S3_SERVER PROOFPIPE_GRPC_PYTHON

cargo test --workspace --locked -- --include-ignored
# The Helm chart: lint, render, Kubernetes schemas, and an apply to the same API server.
scripts/chart-check.sh
