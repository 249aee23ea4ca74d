#!/usr/bin/env bash
# Installs an S3-compatible test server (moto's server mode, from PyPI) into .s3-tools/ once,
# and prints the path of its `moto_server` command. Tests start it on a loopback port of their
# own (tests/e2e/tests/scenario_filecoin.rs).
set -euo pipefail
cd "$(dirname "$0")/.."
tools=.s3-tools
requirements="moto[server]==5.2.5"
if [ "$(cat "$tools/installed" 2>/dev/null)" != "$requirements" ]; then
  echo "s3-test-server: installing $requirements into $tools/venv" >&2
  rm -rf "$tools"
  python3 -m venv "$tools/venv"
  "$tools/venv/bin/pip" install --quiet --disable-pip-version-check "$requirements" >&2
  echo "$requirements" >"$tools/installed"
fi
echo "$(pwd)/$tools/venv/bin/moto_server"
