#!/usr/bin/env bash
# Installs a gRPC client that is not ours (Python grpcio, and grpcio-tools to generate stubs
# from the vendored upstream .proto at test time) into .grpc-tools/ once, and prints the path
# of its python. tests/e2e/tests/gateway_curio.rs drives the gateway with it.
set -euo pipefail
cd "$(dirname "$0")/.."
tools=.grpc-tools
requirements="grpcio==1.85.1 grpcio-tools==1.85.1"
if [ "$(cat "$tools/installed" 2>/dev/null)" != "$requirements" ]; then
  echo "grpc-test-client: installing $requirements into $tools/venv" >&2
  rm -rf "$tools"
  python3 -m venv "$tools/venv"
  # shellcheck disable=SC2086
  "$tools/venv/bin/pip" install --quiet --disable-pip-version-check $requirements >&2
  echo "$requirements" >"$tools/installed"
fi
echo "$(pwd)/$tools/venv/bin/python"
