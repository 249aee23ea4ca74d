# syntax=docker/dockerfile:1
# The proofpipe-gateway image: curio's gRPC API (cuzk.v1.ProvingEngine) over ProofJobs.
# Build from the repository root (docs/images.md):
#   docker build -f docker/gateway.Dockerfile -t registry.example/proofpipe-gateway:0.1.0 .
# The chart runs it as `proofpipe-gateway --listen 0.0.0.0:9820 --metrics-listen
# 0.0.0.0:9821 --pool ... --artifacts ...` with uid 65532 and a read-only root filesystem:
# the gateway writes only to its artifact store (S3, or a mounted volume for file://).
# The .proto is compiled by protox during the build: no protoc needed.

ARG RUST_VERSION=1.95

FROM rust:${RUST_VERSION}-bookworm AS build
WORKDIR /src
COPY . .
# Cache mounts keep the registry and target between builds; the binary is copied out of the
# cached target so that the next stage can see it.
RUN --mount=type=cache,target=/usr/local/cargo/registry \
    --mount=type=cache,target=/src/target \
    cargo build --release --locked -p proofpipe-gateway \
 && install -D -m 0755 target/release/proofpipe-gateway /out/proofpipe-gateway

# glibc, libgcc and the CA bundle (which the S3 client's TLS checks against; the API
# server's CA comes with the ServiceAccount token), no shell, user nonroot (65532).
FROM gcr.io/distroless/cc-debian12:nonroot
COPY --from=build /out/proofpipe-gateway /usr/local/bin/proofpipe-gateway
USER 65532:65532
# gRPC (cuzk.v1.ProvingEngine), then /metrics and /healthz.
EXPOSE 9820 9821
ENTRYPOINT ["/usr/local/bin/proofpipe-gateway"]
