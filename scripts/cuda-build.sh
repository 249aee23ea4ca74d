#!/usr/bin/env bash
# Builds proofpipe-prover with the `cuda` feature on a machine that has no CUDA toolkit.
#
#   scripts/cuda-build.sh            # toolkit into .cuda-toolkit/, release build, binary into device-bin/
#   scripts/cuda-build.sh --env      # only prepare the toolkit and print the variables to export
#   CUDA_BUILD_TESTS=1 scripts/cuda-build.sh   # also build the kernels' GPU tests into device-bin/
#   scripts/cuda-build.sh --stock-gpu  # also device-bin/proofpipe-prover-stock-gpu: the same
#                                      # prover whose `bench` baseline is stock bellperson with
#                                      # its own CUDA kernels (ec-gpu-gen); bench builds only
#
# What it sets up (all under the git-ignored .cuda-toolkit/):
#   - nvcc 13.0 from PyPI wheels in a venv (matches the H200 machine's CUDA 13.0 driver);
#   - nothing else: the kernels link the CUDA runtime statically (cudart_static), which
#     dlopens the driver (libcuda.so.1) at run time, so no libcuda link library is needed
#     and the binary starts on a machine with no driver at all (it then proves on the CPU).
# Kernels are compiled for sm_80, sm_89 and sm_90 machine code plus compute_90 PTX.
# --stock-gpu additionally needs libcuda's link library (bellperson's GPU code links -lcuda,
# so that binary needs a driver to start): no wheel has it, so libcuda1 is unpacked from
# Debian's non-free archive into .cuda-toolkit/libcuda (used for linking only; at run time
# the GPU machine's own driver library is loaded).
set -euo pipefail
root=$(cd "$(dirname "$0")/.." && pwd)
tk="$root/.cuda-toolkit"
venv="$tk/venv"
mkdir -p "$tk"

if [[ ! -x "$venv/bin/python" ]]; then
    python3 -m venv "$venv"
fi
site=$("$venv/bin/python" -c 'import sysconfig; print(sysconfig.get_paths()["purelib"])')
if [[ ! -x "$site/nvidia/cu13/bin/nvcc" ]]; then
    "$venv/bin/pip" install -q \
        nvidia-cuda-nvcc==13.0.88 nvidia-cuda-crt==13.0.88 nvidia-nvvm==13.0.88 \
        nvidia-cuda-runtime==13.0.96 nvidia-cuda-cccl==13.0.85
fi
cuda="$site/nvidia/cu13"
# The wheels lay the toolkit out as include/ and lib/; the cc crate looks for cudart_static
# where a toolkit keeps it, <cuda>/targets/x86_64-linux/lib, and once that folder exists nvcc
# looks for its headers beside it: link both.
if [[ ! -e "$cuda/targets/x86_64-linux/lib" ]]; then
    mkdir -p "$cuda/targets/x86_64-linux"
    ln -s ../../lib "$cuda/targets/x86_64-linux/lib"
    ln -s ../../include "$cuda/targets/x86_64-linux/include"
fi

export CUDA_HOME="$cuda" CUDA_PATH="$cuda" NVCC="$cuda/bin/nvcc"
export PATH="$cuda/bin:$PATH"
if [[ "${1:-}" == "--env" ]]; then
    echo "export CUDA_HOME=$cuda CUDA_PATH=$cuda NVCC=$cuda/bin/nvcc PATH=$cuda/bin:\$PATH"
    exit 0
fi
"$NVCC" --version | tail -2

cd "$root"
# The commit the binary is built from, in every bench report it writes ("-dirty": with
# uncommitted changes).
PROOFPIPE_GIT_COMMIT="$(git rev-parse HEAD 2>/dev/null || echo unknown)$(git diff --quiet HEAD 2>/dev/null || echo -dirty)"
export PROOFPIPE_GIT_COMMIT
# Honour CARGO_TARGET_DIR (a separate one keeps this release build from waiting on, or
# invalidating, a debug build in target/).
target_dir="${CARGO_TARGET_DIR:-target}"
if [[ "${1:-}" == "--stock-gpu" ]]; then
    libcuda="$tk/libcuda"
    if [[ ! -e "$libcuda/lib64/libcuda.so" ]]; then
        apt_dir="$tk/apt"
        mkdir -p "$apt_dir/lists/partial" "$apt_dir/archives/partial" "$libcuda/lib64"
        echo "deb [signed-by=/usr/share/keyrings/debian-archive-keyring.gpg] http://deb.debian.org/debian bookworm non-free" \
            > "$apt_dir/sources.list"
        apt_opts=(-o "Dir::Etc::SourceList=$apt_dir/sources.list" -o "Dir::Etc::SourceParts=-"
            -o "Dir::State::Lists=$apt_dir/lists" -o "Dir::Cache::Archives=$apt_dir/archives"
            -o "Debug::NoLocking=1")
        apt-get "${apt_opts[@]}" update -qq
        (cd "$apt_dir" && apt-get "${apt_opts[@]}" download libcuda1)
        dpkg -x "$apt_dir"/libcuda1_*.deb "$apt_dir/unpacked"
        so=$(find "$apt_dir/unpacked" -name 'libcuda.so.5*' | head -1)
        cp "$so" "$libcuda/lib64/"
        ln -sf "$(basename "$so")" "$libcuda/lib64/libcuda.so.1"
        ln -sf libcuda.so.1 "$libcuda/lib64/libcuda.so"
    fi
    # ec-gpu-gen's default targets stop at sm_86; the H200 is sm_90.
    EC_GPU_CUDA_NVCC_ARGS="--optimize=6 --threads=0 --fatbin --gpu-architecture=sm_90 --generate-code=arch=compute_90,code=sm_90 --generate-code=arch=compute_90,code=compute_90" \
    CUDA_LIBRARY_PATH="$libcuda" \
        cargo build --release -p proofpipe-prover --features cuda,stock-gpu
    mkdir -p device-bin
    cp "$target_dir/release/proofpipe-prover" device-bin/proofpipe-prover-stock-gpu
    strip device-bin/proofpipe-prover-stock-gpu
fi
cargo build --release -p proofpipe-prover --features cuda
mkdir -p device-bin
cp "$target_dir/release/proofpipe-prover" device-bin/
# Without the line tables the binary is ~18 MB instead of ~110 (the run tool carries 64 MiB).
strip device-bin/proofpipe-prover
if [[ "${CUDA_BUILD_TESTS:-0}" == 1 ]]; then
    exe=$(cargo test --release -p proofpipe-kernels --features cuda --no-run --message-format=json 2>/dev/null \
        | python3 -c 'import sys,json
for l in sys.stdin:
    m=json.loads(l)
    if m.get("reason")=="compiler-artifact" and m.get("executable") and m["target"]["name"]=="proofpipe_kernels": print(m["executable"])' | tail -1)
    cp "$exe" device-bin/kernels-tests
    strip device-bin/kernels-tests
fi
ls -la device-bin
