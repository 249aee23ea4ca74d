# syntax=docker/dockerfile:1
# The proofpipe-operator image. Build from the repository root (docs/images.md):
#   docker build -f docker/operator.Dockerfile -t registry.example/proofpipe-operator:0.1.0 .
# The chart runs it as `proofpipe-operator run --listen 0.0.0.0:8080` with uid 65532 and a
# read-only root filesystem: the operator writes no files.

ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-bookworm AS build
WORKDIR /src
COPY . .
# Cache mounts keep the registry and target between builds; the binary is copied out of the
# cached target so that the next stage can see it.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p proofpipe-operator \
 && install -D -m 0755 target/release/proofpipe-operator /out/proofpipe-operator

# glibc and libgcc only, no shell, user nonroot (65532).
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/proofpipe-operator /usr/local/bin/proofpipe-operator
USER 65532:65532
EXPOSE 8080
ENTRYPOINT ["/usr/local/bin/proofpipe-operator"]
CMD ["run"]
