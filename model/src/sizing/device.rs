//! Device memory a GPU holds whatever the placement of the bases: the CUDA context and the
//! running MSM's temporaries, fitted to what nvidia-smi showed on the H200.

/// The CUDA context and sppark's NTT tables, per device (nvidia-smi showed 0.52 GiB in use
/// before any base was uploaded, on the H200; the rest of the GiB covers the fitted
/// intercept of the MSM term, see `measurements.rs`).
pub const GPU_CONTEXT_BYTES: u64 = 1 << 30;

/// Device memory of the MSM that runs (one at a time per device, under its lock): scalars,
/// signed digits, sort temporaries and buckets, per point of the largest MSM. Fitted to
/// nvidia-smi on the H200 at 2^24-2^26 (residuals of 44-70 B per point above the bases, the
/// workspaces and the context; mul-chain, with dense G2, the highest): 64 B.
pub const GPU_MSM_BYTES_PER_POINT: u64 = 64;
