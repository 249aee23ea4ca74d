//! Streamed MSM bases: sppark's batch schedule and device memory, and the GPU memory settings.
//!
//! A streamed MSM hands sppark's `msm_t::invoke` (msm/pippenger.cuh, sppark 0.1.16) base
//! points in page-locked host memory. It copies them to the device in `batch` slices of
//! `stride` points, double-buffered (the copy of slice i+1 overlaps the kernels of slice i),
//! with the window width `wbits` of the engine, fixed when the engine is made for
//! `engine_points` points. The functions here are that arithmetic, line by line, so the CPU
//! backend can run the same schedule and planners can size device memory without a GPU.

use std::ops::Range;

use crate::error::KernelError;

/// Points the streaming engine is made for, unless [`STREAM_ENGINE_POINTS_ENV`] says
/// otherwise: 16-bit windows, and a 2^27-point MSM streams in 32 slices of 2^22 points (two
/// G1 slices on the device: 768 MiB).
pub const DEFAULT_STREAM_ENGINE_POINTS: usize = 1 << 24;

/// Overrides [`DEFAULT_STREAM_ENGINE_POINTS`] (a point count), for measurement.
pub const STREAM_ENGINE_POINTS_ENV: &str = "PROOFPIPE_CUDA_STREAM_ENGINE_POINTS";

/// Caps the device memory a GPU backend uses per GPU (a size such as `24GiB`), so that a
/// large card proves as a smaller one would.
pub const GPU_MEMORY_ENV: &str = "PROOFPIPE_GPU_MEMORY";

/// The CUDA context and sppark's NTT tables per device, as the memory model counts them
/// (model's `GPU_CONTEXT_BYTES`).
pub const GPU_CONTEXT_BYTES: u64 = 1 << 30;

/// sppark's `WARP_SZ`: point counts and strides are rounded up to it.
const WARP: usize = 32;
/// Bits of BLS12-381's Fr (`scalar_t::bit_length()`).
const SCALAR_BITS: u32 = 255;
/// `BATCH_ADD_BLOCK_SIZE / WARP_SZ`: the batch addition's extra buckets per SM.
const BATCH_ADD_BUCKETS_PER_SM: u64 = 256 / 32;
/// SMs assumed where the device is not known (H100/H200 have 132): the batch-addition
/// buckets are < 1 MiB, so a bound costs nothing.
pub const MAX_SM_COUNT: u32 = 256;

fn round_warp(n: usize) -> usize {
    n.div_ceil(WARP) * WARP
}

/// sppark's `lg2`: floor(log2(n)), 0 for 0.
fn lg2(n: usize) -> u32 {
    n.checked_ilog2().unwrap_or(0)
}

/// The window width of an `msm_t` made for `engine_points` points (its constructor).
pub fn msm_window_bits(engine_points: usize) -> u32 {
    let np = round_warp(engine_points);
    if np > 192 {
        (lg2(np + np / 2).saturating_sub(8)).clamp(10, 18)
    } else if np > 0 {
        10
    } else {
        17
    }
}

/// Windows of `wbits` over a 255-bit scalar.
fn windows(wbits: u32) -> u32 {
    (SCALAR_BITS - 1) / wbits + 1
}

/// sppark's slicing of an `n`-point MSM on an engine made for `engine_points`: (batches,
/// stride). `batch = max(1, 2^(max(lg2(1.5n), wbits) - wbits) / 64)`,
/// `stride = roundup32(ceil(n / batch))`.
pub(crate) fn stream_schedule(n: usize, engine_points: usize) -> (usize, usize) {
    let wbits = msm_window_bits(engine_points);
    let lg = lg2(n + n / 2);
    let batch = ((1usize << (lg.max(wbits) - wbits)) >> 6).max(1);
    (batch, round_warp(n.div_ceil(batch)))
}

/// The slices of point indices (of the points the MSM uses) that sppark copies and sums one
/// after another in an `n`-point streamed MSM on an engine made for `engine_points` points;
/// they cover `0..n` in order, each `stride` points but the last. Empty for `n == 0`.
///
/// Where `(batch - 1) * stride >= n` sppark would run past the points; only the non-empty
/// slices are returned, and [`stream_schedule_fits`] tells such cases apart (they need an
/// engine of fewer than 2^17 points and an MSM of more than ~2^26).
pub fn stream_batches(n: usize, engine_points: usize) -> Vec<Range<usize>> {
    if n == 0 {
        return Vec::new();
    }
    let (batch, stride) = stream_schedule(n, engine_points);
    (0..batch)
        .map(|i| (i * stride).min(n)..((i + 1) * stride).min(n))
        .filter(|r| !r.is_empty())
        .collect()
}

/// Whether sppark's schedule for `n` points stays within them (every slice non-empty).
pub fn stream_schedule_fits(n: usize, engine_points: usize) -> bool {
    let (batch, stride) = stream_schedule(n, engine_points);
    n == 0 || (batch - 1) * stride < n
}

/// Device memory an `msm_t` engine made without points holds for its life (one `cudaMalloc`
/// in its constructor): `nwins * 2^(wbits-1) + sm_count * 8` buckets (xyzz: 4 coordinates,
/// `2 * point_bytes` each) and a histogram of `nwins * 2^(wbits-1)` u32.
pub fn msm_engine_device_bytes(engine_points: usize, point_bytes: usize, sm_count: u32) -> u64 {
    let wbits = msm_window_bits(engine_points);
    let row = 1u64 << (wbits - 1);
    let nwins = u64::from(windows(wbits));
    let buckets = nwins * row + u64::from(sm_count) * BATCH_ADD_BUCKETS_PER_SM;
    buckets * 2 * point_bytes as u64 + nwins * row * 4
}

/// The device memory one `invoke` of `n` points allocates for its duration (`d_temp`, one
/// `cudaMallocAsync`): per slice of `stride` points, the scalars (32 B each, unless already
/// on the device) or the sort's temporaries (16 B each), whichever is larger; the signed
/// digits (`nwins` u32 each); and, for host points, the points (`point_bytes` each) twice
/// when there are several slices (double buffering), once otherwise. Rounded up to 32 bytes
/// as `dev_ptr_t` does. Device points (resident bases) need no slice buffer.
pub fn msm_temp_device_bytes(
    n: usize,
    engine_points: usize,
    point_bytes: usize,
    host_points: bool,
    scalars_on_device: bool,
) -> u64 {
    if n == 0 {
        return 0;
    }
    let (batch, stride) = stream_schedule(n, engine_points);
    let stride = stride as u64;
    let scalar = if scalars_on_device { 0 } else { 32 };
    let temp = stride * scalar.max(16);
    let digits = u64::from(windows(msm_window_bits(engine_points))) * stride * 4;
    let points = match (host_points, batch > 1) {
        (false, _) => 0,
        (true, false) => stride,
        (true, true) => 2 * stride,
    } * point_bytes as u64;
    (temp + digits + points).div_ceil(WARP as u64) * WARP as u64
}

/// Device memory of an `n`-point streamed MSM: the streaming engine's buckets
/// ([`msm_engine_device_bytes`], at [`MAX_SM_COUNT`] SMs; the engine is kept across MSMs, one
/// per device and group) plus the call's temporaries ([`msm_temp_device_bytes`] with host
/// points). `point_bytes`: 96 for G1, 192 for G2. Not counted: the CUDA allocator's
/// rounding (2 MiB pages) and its stream-ordered pool.
pub fn streamed_msm_device_bytes(
    n: usize,
    engine_points: usize,
    point_bytes: usize,
    scalars_on_device: bool,
) -> u64 {
    msm_engine_device_bytes(engine_points, point_bytes, MAX_SM_COUNT)
        + msm_temp_device_bytes(n, engine_points, point_bytes, true, scalars_on_device)
}

/// A GPU backend's device-memory settings.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct GpuMemoryConfig {
    /// At most this much device memory per GPU ([`GPU_MEMORY_ENV`]); none: the card's.
    pub cap: Option<u64>,
    /// Points the streaming engine is made for ([`STREAM_ENGINE_POINTS_ENV`]).
    pub stream_engine_points: usize,
}

impl Default for GpuMemoryConfig {
    fn default() -> Self {
        Self {
            cap: None,
            stream_engine_points: DEFAULT_STREAM_ENGINE_POINTS,
        }
    }
}

impl GpuMemoryConfig {
    /// The settings from [`GPU_MEMORY_ENV`] and [`STREAM_ENGINE_POINTS_ENV`] (defaults where
    /// unset); an error naming the variable for a value that does not parse.
    pub fn from_env() -> Result<Self, KernelError> {
        Ok(Self {
            cap: gpu_memory_cap_from_env()?,
            stream_engine_points: stream_engine_points_from_env()?,
        })
    }
}

fn env_value(var: &str) -> Option<String> {
    std::env::var(var)
        .ok()
        .map(|v| v.trim().to_string())
        .filter(|v| !v.is_empty())
}

/// The cap of [`GPU_MEMORY_ENV`], if set.
pub fn gpu_memory_cap_from_env() -> Result<Option<u64>, KernelError> {
    env_value(GPU_MEMORY_ENV)
        .map(|v| parse_gpu_memory(&v))
        .transpose()
}

/// A device-memory size such as `24GiB`, `16 GB` or `25769803776` (bytes; `bytesize`'s
/// syntax), at least 1 MiB.
pub fn parse_gpu_memory(value: &str) -> Result<u64, KernelError> {
    let bad = |reason: String| KernelError::BadSetting {
        var: GPU_MEMORY_ENV,
        value: value.to_string(),
        reason,
    };
    let bytes = value
        .trim()
        .parse::<bytesize::ByteSize>()
        .map_err(|e| bad(format!("not a size such as 24GiB ({e})")))?
        .as_u64();
    if bytes < 1 << 20 {
        return Err(bad("below 1 MiB".into()));
    }
    Ok(bytes)
}

/// The engine size of [`STREAM_ENGINE_POINTS_ENV`], else [`DEFAULT_STREAM_ENGINE_POINTS`].
pub fn stream_engine_points_from_env() -> Result<usize, KernelError> {
    let Some(v) = env_value(STREAM_ENGINE_POINTS_ENV) else {
        return Ok(DEFAULT_STREAM_ENGINE_POINTS);
    };
    match v.parse::<usize>() {
        Ok(p) if (1..=1 << 32).contains(&p) => Ok(p),
        _ => Err(KernelError::BadSetting {
            var: STREAM_ENGINE_POINTS_ENV,
            value: v,
            reason: "not a point count between 1 and 2^32".into(),
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The schedule of sppark's formula, recomputed here from the brief's statement of it.
    fn check_cover(n: usize, engine: usize) {
        let ranges = stream_batches(n, engine);
        let (batch, stride) = stream_schedule(n, engine);
        let mut next = 0;
        for (i, r) in ranges.iter().enumerate() {
            assert_eq!(r.start, next, "n={n} engine={engine}: slices in order");
            assert!(!r.is_empty());
            if i + 1 < ranges.len() {
                assert_eq!(r.len(), stride, "n={n} engine={engine}");
            } else {
                assert!(r.len() <= stride);
            }
            next = r.end;
        }
        assert_eq!(next, n, "n={n} engine={engine}: slices cover 0..n");
        if n > 0 && stream_schedule_fits(n, engine) {
            assert_eq!(ranges.len(), batch, "n={n} engine={engine}");
        }
        assert_eq!(stride % 32, 0);
    }

    #[test]
    fn window_bits_follow_the_engine_size() {
        assert_eq!(msm_window_bits(0), 17);
        assert_eq!(msm_window_bits(1), 10);
        assert_eq!(msm_window_bits(1 << 12), 10);
        assert_eq!(msm_window_bits(1 << 20), 12);
        assert_eq!(msm_window_bits(1 << 24), 16);
        assert_eq!(msm_window_bits(1 << 26), 18);
        assert_eq!(msm_window_bits(1 << 30), 18);
        assert_eq!(windows(16), 16);
        assert_eq!(windows(10), 26);
    }

    #[test]
    fn stream_batches_cover_the_points_in_order() {
        for engine in [1usize, 1 << 10, 1 << 12, 1 << 17, 1 << 20, 1 << 24] {
            for n in [
                0usize,
                1,
                31,
                33,
                1000,
                87_381,
                87_382,
                100_000,
                200_003,
                (1 << 20) + 7,
                (1 << 22) - 1,
            ] {
                check_cover(n, engine);
            }
        }
        assert!(stream_batches(0, 1 << 24).is_empty());
        // Smaller than one slice: a single one.
        assert_eq!(stream_batches(1000, 1 << 10), vec![0..1000]);
        // Two slices at wbits 10: stride = roundup32(50000).
        assert_eq!(
            stream_batches(100_000, 1 << 10),
            vec![0..50_016, 50_016..100_000]
        );
    }

    #[test]
    fn a_32gib_porep_query_streams_in_32_slices_of_2_22() {
        let n = 1 << 27;
        let ranges = stream_batches(n, DEFAULT_STREAM_ENGINE_POINTS);
        assert_eq!(ranges.len(), 32);
        assert!(ranges.iter().all(|r| r.len() == 1 << 22));
        // Two G1 slices on the device: 768 MiB; digits 16 windows x 2^22 x 4 B: 256 MiB;
        // host scalars 2^22 x 32 B: 128 MiB.
        let temp = msm_temp_device_bytes(n, 1 << 24, 96, true, false);
        assert_eq!(temp, (768 + 256 + 128) << 20);
        // h on the device: the sort's 16 B per point instead of the scalars' 32.
        let temp_dev = msm_temp_device_bytes(n, 1 << 24, 96, true, true);
        assert_eq!(temp_dev, (768 + 256 + 64) << 20);
        // G1 engine: 16 windows x 2^15 buckets of 192 B, their u32 histogram, and the
        // batch addition's buckets.
        let engine = msm_engine_device_bytes(1 << 24, 96, 132);
        assert_eq!(
            engine,
            (16 * (1 << 15) + 132 * 8) * 192 + 16 * (1 << 15) * 4
        );
        assert_eq!(
            streamed_msm_device_bytes(n, 1 << 24, 96, false),
            msm_engine_device_bytes(1 << 24, 96, MAX_SM_COUNT) + temp
        );
        // A resident MSM of its own engine needs no slice buffer, and one slice is a
        // single copy.
        assert_eq!(
            msm_temp_device_bytes(n, n, 96, false, false),
            msm_temp_device_bytes(n, n, 0, true, false)
        );
        assert!(stream_schedule_fits(n, 1 << 24));
        assert_eq!(msm_temp_device_bytes(0, 1 << 24, 96, true, false), 0);
    }

    #[test]
    fn gpu_memory_sizes_parse() {
        assert_eq!(parse_gpu_memory("24GiB").unwrap(), 24 << 30);
        assert_eq!(parse_gpu_memory(" 16 GiB ").unwrap(), 16 << 30);
        assert_eq!(parse_gpu_memory("16GB").unwrap(), 16_000_000_000);
        assert_eq!(parse_gpu_memory("1073741824").unwrap(), 1 << 30);
        for bad in ["", "lots", "24 parsecs", "12"] {
            let err = parse_gpu_memory(bad).unwrap_err();
            assert!(
                matches!(err, KernelError::BadSetting { var, .. } if var == GPU_MEMORY_ENV),
                "{bad}: {err}"
            );
            assert!(err.to_string().contains(GPU_MEMORY_ENV), "{err}");
        }
    }
}
