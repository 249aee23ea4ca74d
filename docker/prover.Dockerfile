# syntax=docker/dockerfile:1
# The proofpipe-prover image, the container of every prover pod. Build from the repository
# root (docs/images.md):
#   docker build -f docker/prover.Dockerfile -t registry.example/proofpipe-prover:0.1.0-cuda13.0 .
#   docker build -f docker/prover.Dockerfile --build-arg VARIANT=cpu \
#     -t registry.example/proofpipe-prover:0.1.0-cpu .
# The operator starts it with args ["daemon", ...template.args] and no command, so the
# entrypoint is the binary. VARIANT=cuda builds with the `cuda` cargo feature of
# proofpipe-prover (the sppark kernels of proofpipe-kernels, compiled by nvcc; the CUDA
# runtime is linked statically and the driver, libcuda.so.1, comes from the node through
# the NVIDIA container toolkit). Without a GPU the cuda build proves on the CPU backend.

ARG VARIANT=cuda
ARG RUST_VERSION=1.95
ARG CUDA_VERSION=13.0.0
ARG UBUNTU=ubuntu24.04

# ---- build, GPU: nvcc from the CUDA devel image, Rust from rustup ----------------------
FROM nvidia/cuda:${CUDA_VERSION}-devel-${UBUNTU} AS build-cuda
ARG RUST_VERSION
SHELL ["/bin/bash", "-o", "pipefail", "-c"]
# Ubuntu's package versions move with the base image's CUDA tag, which is what is pinned.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates curl build-essential pkg-config \
 && rm -rf /var/lib/apt/lists/* \
 && curl -sSf https://sh.rustup.rs | sh -s -- -y --profile minimal --default-toolchain "${RUST_VERSION}"
ENV PATH=/root/.cargo/bin:/usr/local/cuda/bin:${PATH} \
    CUDA_HOME=/usr/local/cuda \
    NVCC=/usr/local/cuda/bin/nvcc \
    CARGO_FEATURES=cuda
# sm_80, sm_89, sm_90 machine code and compute_90 PTX (kernels/build.rs); set
# PROOFPIPE_CUDA_ARCHS=90 for an H100/H200-only image that builds faster.
ARG PROOFPIPE_CUDA_ARCHS=80,89,90
ENV PROOFPIPE_CUDA_ARCHS=${PROOFPIPE_CUDA_ARCHS}

# ---- build, CPU only ----------------------------------------------------------------
FROM rust:${RUST_VERSION}-bookworm AS build-cpu
ENV CARGO_FEATURES=""

# ---- the build of the chosen variant ------------------------------------------------
# (a stage of this file, picked by VARIANT: nothing to tag)
# hadolint ignore=DL3006
FROM build-${VARIANT} AS build
WORKDIR /src
COPY . .
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/root/.cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p proofpipe-prover ${CARGO_FEATURES:+--features ${CARGO_FEATURES}} \
 && install -D -m 0755 target/release/proofpipe-prover /out/proofpipe-prover

# ---- runtime, GPU -------------------------------------------------------------------
FROM nvidia/cuda:${CUDA_VERSION}-runtime-${UBUNTU} AS runtime-cuda
# Tells the NVIDIA container toolkit to mount the driver and the GPU the pod was given.
ENV NVIDIA_VISIBLE_DEVICES=all NVIDIA_DRIVER_CAPABILITIES=compute,utility

# ---- runtime, CPU -------------------------------------------------------------------
FROM debian:bookworm-slim AS runtime-cpu

# ---- the image ----------------------------------------------------------------------
# hadolint ignore=DL3006
FROM runtime-${VARIANT}
# The CA bundle that rustls' native roots read (https:// artifact stores, and `params fetch`
# from https://proofs.filecoin.io: the chart's paramsFetch Job runs the cpu build; Ubuntu's
# and Debian's package versions move with the pinned base images). A non-root user with a
# home: the parameter cache (~/.cache/proofpipe/params) lives there unless
# PROOFPIPE_PARAMS_DIR points at a volume.
# hadolint ignore=DL3008
RUN apt-get update \
 && apt-get install -y --no-install-recommends ca-certificates \
 && rm -rf /var/lib/apt/lists/* \
 && groupadd --gid 65532 proofpipe \
 && useradd --uid 65532 --gid 65532 --create-home --home-dir /home/proofpipe --shell /usr/sbin/nologin proofpipe \
 && mkdir -p /home/proofpipe/.cache/proofpipe/params \
 && chown -R 65532:65532 /home/proofpipe
COPY --from=build /out/proofpipe-prover /usr/local/bin/proofpipe-prover
USER 65532:65532
ENV HOME=/home/proofpipe
WORKDIR /home/proofpipe
# /metrics, /healthz, /readyz of the daemon (the operator's probes and the PodMonitor).
EXPOSE 9100
ENTRYPOINT ["/usr/local/bin/proofpipe-prover"]
CMD ["daemon"]
