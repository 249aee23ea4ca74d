//! Compiles the vendored `cuzk.v1` API (proto/README.md) into Rust: server and client stubs.

fn main() -> Result<(), Box<dyn std::error::Error>> {
    let proto = "proto/cuzk/v1/proving.proto";
    println!("cargo:rerun-if-changed={proto}");
    let descriptors = protox::compile([proto], ["proto"])?;
    tonic_prost_build::configure()
        .build_server(true)
        .build_client(true)
        .compile_fds(descriptors)?;
    Ok(())
}
