//! The CUDA backend: sppark's NTT, Pippenger MSM and bitmap batch-addition kernels
//! (cuda/proofpipe.cu) behind [`ProvingBackend`].
//!
//! - Base points stay resident: each query's range of a proving-key vector,
//!   `points[skip..skip + used]`, is uploaded to a device on first use (keyed by the vector's
//!   address, kept unique by a `Weak` to it, the skip and the count, all fixed per circuit)
//!   into a device buffer of ours, with one sppark `msm_t` engine per range; every later MSM
//!   over it reads it in place. Once the prover drops the vector (a parameter set it no
//!   longer keeps) the device copy is freed; an upload that finds the device full evicts idle
//!   bases, least recently used first.
//! - Exponents go to the device as blstrs stores them, in Montgomery form (`Fr` is
//!   `#[repr(transparent)]` over `blst_fr`, the layout of sppark's `fr_t`); sppark converts
//!   them on the device (`msm_t::invoke` with `mont = true`), so a full query costs no host
//!   work per exponent.
//! - The H term ([`ProvingBackend::h_msm`]): the quotient's h stays on the device and is the
//!   H MSM's scalars there: no download of h, no upload of it back (`GpuOptions::h_on_device`).
//! - Split MSMs (`GpuOptions::split_msm`): an assignment's scalars are mostly 0 or 1 in
//!   boolean-heavy circuits (PoRep, SHA-256). On the device they are classified into a bitmap
//!   of ones and a compacted "tail" of the rest; the ones' bases are summed by sppark's bitmap
//!   batch addition (one point addition each, against ~15 per point in Pippenger) and only
//!   the tail goes through Pippenger. An MSM with few ones or a large tail runs plain.
//! - Sparse queries: the exponents of the variables a query uses are gathered on the host
//!   (`gather::SparseGather`, on the GPU stage's own host pool, straight into the worker's
//!   page-locked staging buffer); the bases of a sparse query are already dense, so the MSM
//!   runs over the resident points as they are.
//! - G1 and G2 run through one generic MSM (`CudaBackend::msm`) over `GpuGroup`, which names
//!   each group's FFI calls, output point type and statistics.
//! - GPU-stage workers are spread over the visible devices (a worker thread keeps the device
//!   it first got); workers of one device take turns on it through an in-process lock, so
//!   one worker's host-side work (gathering, staging, copies) overlaps another's kernels. No
//!   file lock.
//! - Transfers bound a large partition, so the lock covers as little as it can: the
//!   quotient's a/b/c upload (and, without h on the device, the h download) run on the
//!   worker's own stream and workspace (kept across partitions) outside it, only kernels
//!   inside; MSM scalars (from `STAGE_FROM` up) are first copied in parallel into a
//!   page-locked buffer of the worker's, so sppark's upload under the lock is a full-speed
//!   DMA. Both show in `kernel_stats` as `*_transfers` (time outside the lock).
//! - Streamed bases ([`Placement::Streamed`]): no device copy; each MSM hands sppark the
//!   points in host memory, page-locked once per host vector (`cudaHostRegister`, kept while
//!   the vector lives), and sppark copies them in slices ([`crate::stream_batches`]) while
//!   the previous slice's kernels run, through one engine per device and group made for
//!   `GpuMemoryConfig::stream_engine_points`. Streamed MSMs run plain Pippenger (the split's
//!   batch addition reads resident points). Resident and streamed queries mix freely.
//! - A device-memory cap (`PROOFPIPE_GPU_MEMORY`, [`GpuMemoryConfig`]): the backend reports
//!   its GPUs as that large and holds its own allocations to it with a per-device ledger
//!   ([`DeviceLedger`]: the context, resident bases with their engines, quotient workspaces,
//!   streaming engines, the running MSM's temporaries); an allocation that would pass it
//!   evicts idle resident bases first, then fails with [`KernelError::GpuMemoryCap`].
//! - The CUDA runtime is linked statically and loads the driver at run time: a binary built
//!   with this backend starts on a machine without a GPU or driver, and [`CudaBackend::new`]
//!   then reports why it cannot be used.

use std::any::Any;
use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard, Weak};
use std::time::{Duration, Instant};

use blst::{blst_fr, blst_p1, blst_p2};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::{Field, PrimeField};
use group::Group;
use rayon::prelude::*;

use crate::backend::{
    Bases, Density, GpuDevice, KernelStat, Placement, ProvingBackend, QuotientBuffers, Reservation,
};
use crate::domain::domain_size;
use crate::error::KernelError;
use crate::gather::{SparseGather, check_bases, on_host_pool};
use crate::gpu_options::GpuOptions;
use crate::host_memory::{EvalAlloc, Evaluations};
use crate::ledger::{Charge, DeviceLedger, Held, Ledger};
use crate::split::Classified;
use crate::stream::{
    GPU_CONTEXT_BYTES, GpuMemoryConfig, STREAM_ENGINE_POINTS_ENV, msm_engine_device_bytes,
    msm_temp_device_bytes, stream_schedule_fits,
};

mod ffi;
mod lock;
mod pinned;

use lock::unpoisoned;
use pinned::{EvalPool, Pinned};

fn check(what: &'static str, device: usize, e: sppark::Error) -> Result<(), KernelError> {
    if e.code == 0 {
        Ok(())
    } else {
        // A device that is gone (or a poisoned context) is told apart from an error of
        // this call: the prover then stops taking work instead of failing job after job.
        Err(KernelError::cuda(what, device, e.code, e.to_string()))
    }
}

/// The device memory a resident MSM that may split allocates for its duration, at most
/// (pp_msm_run): the scalars' upload (unless on the device), the bitmaps, then either plain
/// Pippenger's temporaries or a tail of at most n/4 points and scalars with its scan and its
/// Pippenger's temporaries. The tail engines' buckets (kept per size class) are not counted.
fn split_msm_temp_bytes(n: usize, point_bytes: usize, on_device: bool) -> u64 {
    let r32 = |k: usize| k.div_ceil(32) as u64 * 32;
    let words = n.div_ceil(1024) * 32;
    let upload = if on_device { 0 } else { r32(n) * 32 };
    let bitmaps = r32(3 * words) * 4 + r32(2) * 8;
    let tail = n / 4;
    let tail_bytes = r32(words) * 4
        + r32(words.div_ceil(1024)) * 4
        + r32(tail) * (point_bytes as u64 + 32)
        + msm_temp_device_bytes(tail, tail.next_power_of_two(), point_bytes, false, true);
    let plain = msm_temp_device_bytes(n, n, point_bytes, false, true);
    upload + bitmaps + plain.max(tail_bytes)
}

/// sppark's NTT tables cover domains up to 2^28.
const MAX_LG_DOMAIN: u32 = 28;

/// Base points of one query range, resident on a device (pp_bases: our device buffer and
/// the sppark `msm_t` engine that runs every MSM over it). Freed when dropped: an MSM holds
/// its bases' `Arc` while it runs, so bases in use are never freed under it.
struct Resident {
    handle: *mut c_void,
    g2: bool,
    bytes: usize,
    /// The host vector the points came from. While any `Weak` to it lives its allocation
    /// does too, so its address (part of the key) cannot be reused by another vector; once
    /// the prover has dropped the vector (a parameter set it no longer keeps), the device
    /// copy is freed. Holding an `Arc` here would keep both copies forever.
    host: Weak<dyn Any + Send + Sync>,
    /// The points and the engine's buckets in the device's ledger (last: given back after
    /// the free).
    _charge: Charge,
}

// SAFETY: the handle is only used through the CUDA runtime (thread-safe), to run an MSM
// under the device's lock, or to free it once no MSM holds it.
unsafe impl Send for Resident {}
unsafe impl Sync for Resident {}

impl Drop for Resident {
    fn drop(&mut self) {
        // SAFETY: made by pp_bases_g*_new, freed once, and no MSM holds it (see above).
        unsafe {
            if self.g2 {
                ffi::pp_bases_g2_free(self.handle)
            } else {
                ffi::pp_bases_g1_free(self.handle)
            }
        }
    }
}

/// A device's resident bases, with when each was last used (the least recently used are
/// evicted first when an upload finds the device full).
struct ResidentSlot {
    bases: Arc<Resident>,
    last_used: Instant,
}

impl ResidentSlot {
    /// No MSM runs over these bases now.
    fn idle(&self) -> bool {
        Arc::strong_count(&self.bases) == 1
    }
}

/// cudaErrorMemoryAllocation: the device is out of memory (not a lost device).
const CUDA_OUT_OF_MEMORY: i32 = 2;

/// cudaErrorHostMemoryAlreadyRegistered: the range is page-locked already (not by us).
const CUDA_HOST_MEMORY_ALREADY_REGISTERED: i32 = 712;

/// A streaming `msm_t` engine of one device and group (pp_stream: buckets for
/// `stream_engine_points`), kept for the backend's life.
struct StreamEngine {
    handle: *mut c_void,
    g2: bool,
    _charge: Charge,
}

// SAFETY: as for Resident: used through the CUDA runtime, under the device lock, and freed
// once no MSM holds it.
unsafe impl Send for StreamEngine {}
unsafe impl Sync for StreamEngine {}

impl Drop for StreamEngine {
    fn drop(&mut self) {
        // SAFETY: made by pp_stream_g*_new, freed once, no MSM holds it.
        unsafe {
            if self.g2 {
                ffi::pp_stream_g2_free(self.handle)
            } else {
                ffi::pp_stream_g1_free(self.handle)
            }
        }
    }
}

/// A streamed host vector, page-locked (`cudaHostRegister`, portable: for every device).
/// It holds the vector (an `Arc`, not a `Weak`): freeing page-locked memory before
/// unregistering it would leave the driver's mapping of the freed pages in place (a later
/// allocation at that address would be copied from the stale pages, or fail to register).
/// So a registration whose vector nobody else holds is unregistered first and the vector
/// freed after (`CudaBackend::sweep_registrations`, at every MSM and when the backend drops).
struct HostRegistration {
    ptr: *mut c_void,
    /// Registered by us (else it was page-locked already, or could not be).
    owned: bool,
    host: Arc<dyn Any + Send + Sync>,
}

// SAFETY: the pointer is only handed to cudaHostUnregister, once.
unsafe impl Send for HostRegistration {}

impl Drop for HostRegistration {
    fn drop(&mut self) {
        if self.owned {
            // SAFETY: registered by pp_host_register; `host` (dropped after this) keeps the
            // memory alive until then.
            unsafe { ffi::pp_host_unregister(self.ptr) }
        }
    }
}

/// An MSM's bases, ready to run: resident, or a streaming engine and the host points; with
/// the MSM's temporaries admitted in the ledger.
enum Prepared {
    Resident {
        bases: Arc<Resident>,
        _temp: Charge,
    },
    Streamed {
        engine: Arc<StreamEngine>,
        points: *const c_void,
        _temp: Charge,
    },
}

/// (host vector address, skip, points used): fixed per circuit and query.
type ResidentKey = (usize, usize, usize);

// The layouts the FFI relies on: blstrs' types are `#[repr(transparent)]` over blst's, which
// are sppark's (affine points of 2 x 48 and 2 x 96 bytes, scalars of 32 in Montgomery form).
const _: () = assert!(size_of::<G1Affine>() == 96);
const _: () = assert!(size_of::<G2Affine>() == 192);
const _: () = assert!(size_of::<Fr>() == size_of::<blst_fr>() && size_of::<Fr>() == 32);

/// A group the MSM kernels exist for (its affine base points are `Self`).
trait GpuGroup: Send + Sync + Sized + 'static {
    const G2: bool;
    /// What a failed MSM is reported as ("G1 MSM").
    const MSM: &'static str;
    /// blst's projective point, which the MSM writes.
    type Raw: Default;
    /// The blstrs point the backend returns, a `#[repr(transparent)]` wrapper of `Raw`.
    type Projective: Group + AsMut<Self::Raw>;
    /// Uploads `n` points and returns the resident bases' handle.
    unsafe fn upload(dev: i32, host: *const Self, n: usize, out: *mut *mut c_void)
    -> sppark::Error;
    /// Runs the MSM of `n` scalars (Montgomery form; on the host, or on the device with
    /// `on_device`) over the points resident in `h`, split when `split`.
    unsafe fn run(
        h: *mut c_void,
        out: *mut Self::Raw,
        n: usize,
        s: *const blst_fr,
        on_device: bool,
        split: bool,
        info: *mut ffi::MsmInfo,
    ) -> sppark::Error;
    /// Runs the split MSM of scalars the host classified over the points resident in `h`.
    unsafe fn run_classified(h: *mut c_void, out: *mut Self::Raw, c: &Classified) -> sppark::Error;
    /// Makes a streaming engine for `np` points.
    unsafe fn stream_new(dev: i32, np: usize, out: *mut *mut c_void) -> sppark::Error;
    /// Runs the MSM of `n` scalars (as for `run`) over `n` page-locked host points.
    unsafe fn run_streamed(
        h: *mut c_void,
        points: *const Self,
        n: usize,
        s: *const blst_fr,
        on_device: bool,
        out: *mut Self::Raw,
    ) -> sppark::Error;
    /// The statistics the MSM counts in: all of its calls, and its split ones' ones and tail.
    fn stat(s: &mut Stats) -> &mut KernelStat;
    fn split_stats(s: &mut Stats) -> (&mut KernelStat, &mut KernelStat);
    fn streamed_stat(s: &mut Stats) -> &mut KernelStat;
}

impl GpuGroup for G1Affine {
    const G2: bool = false;
    const MSM: &'static str = "G1 MSM";
    type Raw = blst_p1;
    type Projective = G1Projective;
    unsafe fn upload(
        dev: i32,
        host: *const Self,
        n: usize,
        out: *mut *mut c_void,
    ) -> sppark::Error {
        unsafe { ffi::pp_bases_g1_new(dev, host.cast(), n, out) }
    }
    unsafe fn run(
        h: *mut c_void,
        out: *mut blst_p1,
        n: usize,
        s: *const blst_fr,
        on_device: bool,
        split: bool,
        info: *mut ffi::MsmInfo,
    ) -> sppark::Error {
        let one: *const Fr = &Fr::ONE;
        unsafe { ffi::pp_msm_g1_run(h, out, n, s, on_device, split, one.cast(), info) }
    }
    unsafe fn run_classified(h: *mut c_void, out: *mut blst_p1, c: &Classified) -> sppark::Error {
        unsafe {
            ffi::pp_msm_g1_classified(
                h,
                out,
                c.n,
                c.ones.as_ptr(),
                c.tails.as_ptr(),
                c.tail_start.as_ptr(),
                c.words(),
                c.tail.as_ptr().cast(),
                c.tail.len(),
                c.n_ones,
            )
        }
    }
    fn stat(s: &mut Stats) -> &mut KernelStat {
        &mut s.msm_g1
    }
    fn split_stats(s: &mut Stats) -> (&mut KernelStat, &mut KernelStat) {
        (&mut s.msm_g1_split_ones, &mut s.msm_g1_split_tail)
    }
    unsafe fn stream_new(dev: i32, np: usize, out: *mut *mut c_void) -> sppark::Error {
        unsafe { ffi::pp_stream_g1_new(dev, np, out) }
    }
    unsafe fn run_streamed(
        h: *mut c_void,
        points: *const Self,
        n: usize,
        s: *const blst_fr,
        on_device: bool,
        out: *mut blst_p1,
    ) -> sppark::Error {
        unsafe { ffi::pp_msm_streamed_g1(h, points.cast(), n, s, on_device, out) }
    }
    fn streamed_stat(s: &mut Stats) -> &mut KernelStat {
        &mut s.msm_g1_streamed
    }
}

impl GpuGroup for G2Affine {
    const G2: bool = true;
    const MSM: &'static str = "G2 MSM";
    type Raw = blst_p2;
    type Projective = G2Projective;
    unsafe fn upload(
        dev: i32,
        host: *const Self,
        n: usize,
        out: *mut *mut c_void,
    ) -> sppark::Error {
        unsafe { ffi::pp_bases_g2_new(dev, host.cast(), n, out) }
    }
    unsafe fn run(
        h: *mut c_void,
        out: *mut blst_p2,
        n: usize,
        s: *const blst_fr,
        on_device: bool,
        split: bool,
        info: *mut ffi::MsmInfo,
    ) -> sppark::Error {
        let one: *const Fr = &Fr::ONE;
        unsafe { ffi::pp_msm_g2_run(h, out, n, s, on_device, split, one.cast(), info) }
    }
    unsafe fn run_classified(h: *mut c_void, out: *mut blst_p2, c: &Classified) -> sppark::Error {
        unsafe {
            ffi::pp_msm_g2_classified(
                h,
                out,
                c.n,
                c.ones.as_ptr(),
                c.tails.as_ptr(),
                c.tail_start.as_ptr(),
                c.words(),
                c.tail.as_ptr().cast(),
                c.tail.len(),
                c.n_ones,
            )
        }
    }
    fn stat(s: &mut Stats) -> &mut KernelStat {
        &mut s.msm_g2
    }
    fn split_stats(s: &mut Stats) -> (&mut KernelStat, &mut KernelStat) {
        (&mut s.msm_g2_split_ones, &mut s.msm_g2_split_tail)
    }
    unsafe fn stream_new(dev: i32, np: usize, out: *mut *mut c_void) -> sppark::Error {
        unsafe { ffi::pp_stream_g2_new(dev, np, out) }
    }
    unsafe fn run_streamed(
        h: *mut c_void,
        points: *const Self,
        n: usize,
        s: *const blst_fr,
        on_device: bool,
        out: *mut blst_p2,
    ) -> sppark::Error {
        unsafe { ffi::pp_msm_streamed_g2(h, points.cast(), n, s, on_device, out) }
    }
    fn streamed_stat(s: &mut Stats) -> &mut KernelStat {
        &mut s.msm_g2_streamed
    }
}

#[derive(Default)]
struct Stats {
    quotient: KernelStat,
    quotient_transfers: KernelStat,
    msm_staging_transfers: KernelStat,
    msm_g1: KernelStat,
    /// The H MSMs alone (full-width scalars, h on the device): also counted in msm_g1 or
    /// msm_g1_streamed.
    msm_g1_h: KernelStat,
    msm_g2: KernelStat,
    /// Split MSMs: their calls, and the scalars summed by the batch addition (ones) or sent
    /// through Pippenger (tail) as elements. Their time is in msm_g1 / msm_g2.
    msm_g1_split_ones: KernelStat,
    msm_g1_split_tail: KernelStat,
    msm_g2_split_ones: KernelStat,
    msm_g2_split_tail: KernelStat,
    /// MSMs over streamed bases (their time is not in msm_g1 / msm_g2).
    msm_g1_streamed: KernelStat,
    msm_g2_streamed: KernelStat,
    upload: KernelStat,
    /// Page-locking streamed host vectors (elements: points), outside the device lock.
    host_register: KernelStat,
    /// Host work of the GPU stage outside the device: gathering a sparse query's scalars, and
    /// waiting for the device lock (calls: every lock taken).
    host_msm_gather: KernelStat,
    /// Classifying an assignment MSM's scalars into ones and tail on the host (elements: the
    /// scalars), outside the device lock.
    host_msm_classify: KernelStat,
    host_device_lock_wait: KernelStat,
}

struct Device {
    info: GpuDevice,
    /// Held while a kernel sequence runs: workers of one device take turns in memory.
    busy: Mutex<()>,
    resident: Mutex<HashMap<ResidentKey, ResidentSlot>>,
    /// Idle quotient workspaces (a stream and a/b/c buffers each); a worker takes one per
    /// quotient, so there are as many as workers ever ran one at once.
    quotient_workspaces: Mutex<Vec<QuotientWorkspace>>,
    /// Idle page-locked staging buffers for MSM scalars, one per worker that ran an MSM.
    pinned: Mutex<Vec<Pinned>>,
    /// This device's memory as the backend counts it, against the cap.
    ledger: Arc<Mutex<Ledger>>,
    /// Streaming engines, G1 and G2, made on first use.
    stream_engines: Mutex<[Option<Arc<StreamEngine>>; 2]>,
}

/// An MSM's scalars on the host: staged in a page-locked buffer (its first `n` elements), or
/// read where they are.
enum Scalars<'a> {
    Staged(Pinned, usize),
    Host(std::borrow::Cow<'a, [Fr]>),
    /// Classified for a split MSM on the host: only their bitmaps and tail go to the device.
    Classified(Classified),
}

impl Scalars<'_> {
    fn len(&self) -> usize {
        match self {
            Self::Staged(_, n) => *n,
            Self::Host(v) => v.len(),
            Self::Classified(c) => c.n,
        }
    }

    fn ptr(&self) -> *const Fr {
        match self {
            Self::Staged(buf, _) => buf.ptr.cast::<Fr>().cast_const(),
            Self::Host(v) => v.as_ptr(),
            Self::Classified(c) => c.tail.as_ptr(),
        }
    }

    /// The scalars, staged or in place (none for classified ones).
    fn as_slice(&self) -> &[Fr] {
        match self {
            // SAFETY: the first n elements of the staging buffer were written.
            Self::Staged(buf, n) => unsafe {
                std::slice::from_raw_parts(buf.ptr.cast::<Fr>().cast_const(), *n)
            },
            Self::Host(v) => v,
            Self::Classified(_) => &[],
        }
    }

    /// Gives a staging buffer back to `dev`'s pool.
    fn release(self, backend: &CudaBackend, dev: usize) {
        if let Self::Staged(buf, _) = self {
            backend.return_pinned(dev, buf);
        }
    }
}

/// MSMs over fewer scalars read them in place: staging would cost more than it saves.
const STAGE_FROM: usize = 1 << 16;

/// A stream and three, two or one device buffers of 2^lg elements for one quotient at a time.
struct QuotientWorkspace {
    handle: *mut c_void,
    lg: u32,
    buffers: QuotientBuffers,
    _charge: Charge,
}

/// Elements of a one-buffer workspace's staging slice at most (`QUOTIENT_STAGE` in
/// proofpipe.cu; a quarter of the domain below 2^24).
const QUOTIENT_STAGE_ELEMENTS: u64 = 1 << 22;

/// Device bytes of a quotient workspace for domains of 2^lg.
fn quotient_workspace_bytes(lg: u32, buffers: QuotientBuffers) -> u64 {
    let m = 1u64 << lg;
    let stage = match buffers {
        QuotientBuffers::One => (m / 4).clamp(1, QUOTIENT_STAGE_ELEMENTS),
        _ => 0,
    };
    size_of::<Fr>() as u64 * (u64::from(buffers.count()) * m + stage)
}

// SAFETY: a workspace is used by one thread at a time (taken out of the pool), through the
// CUDA runtime, which is thread-safe.
unsafe impl Send for QuotientWorkspace {}

impl Drop for QuotientWorkspace {
    fn drop(&mut self) {
        // SAFETY: made by pp_quotient_ws_new, freed once.
        unsafe { ffi::pp_quotient_ws_free(self.handle) }
    }
}

/// a, b, c of one partition on the device, in a workspace the worker holds; those it has no
/// buffer for stay on the host (all three, a as scratch, with a one-buffer workspace).
struct Uploaded {
    ws: QuotientWorkspace,
    lg: u32,
    upload_seconds: Duration,
    host: Option<[Evaluations; 3]>,
}

/// Runs the quotient's NTTs and the G1/G2 MSMs on CUDA GPUs.
pub struct CudaBackend {
    devices: Vec<Device>,
    next_device: AtomicUsize,
    stats: Mutex<Stats>,
    options: GpuOptions,
    memory: GpuMemoryConfig,
    evaluations: Arc<EvalPool>,
    /// Streamed host vectors, page-locked, by the vector's address.
    registered: Mutex<HashMap<usize, HostRegistration>>,
}

thread_local! {
    static THREAD_DEVICE: Cell<Option<usize>> = const { Cell::new(None) };
}

impl CudaBackend {
    /// Finds the usable devices (compute capability 7.0 or newer, cooperative launch), with
    /// the options and memory settings from the environment ([`GpuOptions::from_env`],
    /// [`GpuMemoryConfig::from_env`]). Fails, with the reason, if there are none or no
    /// driver, or a setting does not parse.
    pub fn new() -> Result<Self, KernelError> {
        Self::with_options(GpuOptions::from_env())
    }

    /// As [`CudaBackend::new`], with these options.
    pub fn with_options(options: GpuOptions) -> Result<Self, KernelError> {
        Self::with_memory(options, GpuMemoryConfig::from_env()?)
    }

    /// As [`CudaBackend::new`], with these options and memory settings: with a cap, every
    /// device reports at most `cap` bytes and the backend's own allocations stay within it.
    pub fn with_memory(options: GpuOptions, memory: GpuMemoryConfig) -> Result<Self, KernelError> {
        if memory.stream_engine_points == 0 {
            return Err(KernelError::BadSetting {
                var: STREAM_ENGINE_POINTS_ENV,
                value: "0".into(),
                reason: "the streaming engine needs at least one point".into(),
            });
        }
        let capped = |bytes: usize| memory.cap.map_or(bytes as u64, |c| c.min(bytes as u64));
        // SAFETY: plain query; sppark swallows a missing driver and reports 0 devices.
        let n = unsafe { ffi::pp_ngpus() };
        if n == 0 {
            return Err(KernelError::NoGpu(
                "no CUDA device found (no GPU, no driver, or none of compute capability 7.0+)"
                    .into(),
            ));
        }
        let mut devices = Vec::with_capacity(n);
        for id in 0..n {
            let (mut free, mut total, mut major, mut minor, mut sms) = (0, 0, 0, 0, 0);
            // SAFETY: out-pointers to locals.
            check("querying the device", id, unsafe {
                ffi::pp_gpu_mem(
                    id as i32, &mut free, &mut total, &mut major, &mut minor, &mut sms,
                )
            })?;
            devices.push(Device {
                info: GpuDevice {
                    id,
                    total_bytes: capped(total),
                    free_bytes: capped(free),
                    compute_capability: (major as u32, minor as u32),
                    sm_count: sms as u32,
                },
                busy: Mutex::new(()),
                resident: Mutex::new(HashMap::new()),
                quotient_workspaces: Mutex::new(Vec::new()),
                pinned: Mutex::new(Vec::new()),
                ledger: Arc::new(Mutex::new(Ledger::new(memory.cap, GPU_CONTEXT_BYTES))),
                stream_engines: Mutex::new([None, None]),
            });
        }
        Ok(Self {
            devices,
            next_device: AtomicUsize::new(0),
            stats: Mutex::new(Stats::default()),
            options,
            memory,
            evaluations: Arc::new(EvalPool::default()),
            registered: Mutex::new(HashMap::new()),
        })
    }

    pub fn options(&self) -> GpuOptions {
        self.options
    }

    pub fn memory_config(&self) -> GpuMemoryConfig {
        self.memory
    }

    /// Each device's memory as the backend counts it.
    pub fn ledger(&self) -> Vec<DeviceLedger> {
        self.devices
            .iter()
            .map(|d| unpoisoned(&d.ledger).snapshot())
            .collect()
    }

    /// Counts `bytes` of `kind` on `dev`'s ledger, evicting idle resident bases (least
    /// recently used first) while that would pass the cap; fails with the cap error when
    /// nothing is left to evict.
    fn charge(
        &self,
        dev: usize,
        kind: Held,
        bytes: u64,
        what: &'static str,
    ) -> Result<Charge, KernelError> {
        if let Ok(charge) = Charge::take(&self.devices[dev].ledger, kind, bytes) {
            return Ok(charge);
        }
        let mut map = unpoisoned(&self.devices[dev].resident);
        self.charge_in(dev, &mut map, kind, bytes, what)
    }

    /// [`CudaBackend::charge`] for a caller that holds `dev`'s resident map.
    fn charge_in(
        &self,
        dev: usize,
        map: &mut HashMap<ResidentKey, ResidentSlot>,
        kind: Held,
        bytes: u64,
        what: &'static str,
    ) -> Result<Charge, KernelError> {
        let ledger = &self.devices[dev].ledger;
        // Bases of host vectors the prover dropped go first.
        map.retain(|_, slot| slot.bases.host.strong_count() > 0 || !slot.idle());
        loop {
            let held = match Charge::take(ledger, kind, bytes) {
                Ok(charge) => return Ok(charge),
                Err(held) => held,
            };
            if !Self::evict_one(dev, map, bytes, "over the device-memory cap") {
                return Err(KernelError::GpuMemoryCap {
                    device: dev,
                    what,
                    asked: bytes,
                    held,
                    cap: self.memory.cap.unwrap_or(u64::MAX),
                });
            }
        }
    }

    /// Frees the least recently used idle resident bases of `map`; false if none is idle.
    fn evict_one(
        dev: usize,
        map: &mut HashMap<ResidentKey, ResidentSlot>,
        needed: u64,
        why: &str,
    ) -> bool {
        let oldest = map
            .iter()
            .filter(|(_, slot)| slot.idle())
            .min_by_key(|(_, slot)| slot.last_used)
            .map(|(key, slot)| (*key, slot.bases.bytes));
        let Some((evicted, freed)) = oldest else {
            return false;
        };
        tracing::info!(
            device = dev,
            needed,
            freed,
            why,
            "evicting the least recently used idle base points"
        );
        map.remove(&evicted);
        true
    }

    /// The device of the calling GPU-stage worker: round-robin on its first call.
    fn device(&self) -> usize {
        THREAD_DEVICE.with(|d| match d.get() {
            Some(i) if i < self.devices.len() => i,
            _ => {
                let i = self.next_device.fetch_add(1, Ordering::Relaxed) % self.devices.len();
                d.set(Some(i));
                i
            }
        })
    }

    fn lock(&self, dev: usize) -> MutexGuard<'_, ()> {
        let waited = Instant::now();
        let guard = unpoisoned(&self.devices[dev].busy);
        self.record(|s| &mut s.host_device_lock_wait, waited.elapsed(), 0);
        guard
    }

    fn record(&self, pick: fn(&mut Stats) -> &mut KernelStat, took: Duration, elements: usize) {
        let mut s = unpoisoned(&self.stats);
        let k = pick(&mut s);
        k.calls += 1;
        k.seconds += took.as_secs_f64();
        k.elements += elements as u64;
    }

    /// The resident bases `points[skip..skip + n]` on device `dev`, uploaded on first use.
    /// Bases whose host vector was dropped are freed first; when the device has no room for
    /// the upload, idle bases are evicted, least recently used first, until it fits (a prover
    /// that moves from one parameter set to another keeps proving instead of failing on
    /// device memory the last set holds).
    fn resident<G: GpuGroup>(
        &self,
        dev: usize,
        points: &Arc<Vec<G>>,
        skip: usize,
        n: usize,
    ) -> Result<Arc<Resident>, KernelError> {
        let key = (Arc::as_ptr(points) as usize, skip, n);
        let mut map = unpoisoned(&self.devices[dev].resident);
        // A hit needs no room; a miss frees the bases of dropped vectors in `charge_in`.
        if let Some(slot) = map.get_mut(&key) {
            slot.last_used = Instant::now();
            return Ok(slot.bases.clone());
        }
        let range = &points[skip..skip + n];
        let bytes = std::mem::size_of_val(range);
        // The points and the engine pp_bases makes for them.
        let device_bytes = bytes as u64
            + msm_engine_device_bytes(n, size_of::<G>(), self.devices[dev].info.sm_count);
        let charge = self.charge_in(
            dev,
            &mut map,
            Held::Resident,
            device_bytes,
            "uploading base points",
        )?;
        let start = Instant::now();
        let busy = self.lock(dev);
        let handle = loop {
            let mut handle = std::ptr::null_mut();
            // SAFETY: `range` is live host memory of n points; `handle` is an out-pointer.
            let e = unsafe { G::upload(dev as i32, range.as_ptr(), n, &mut handle) };
            if e.code == 0 {
                break handle;
            }
            if e.code != CUDA_OUT_OF_MEMORY
                || !Self::evict_one(dev, &mut map, device_bytes, "device memory full")
            {
                let message = e.to_string();
                return Err(KernelError::cuda(
                    "uploading base points",
                    dev,
                    e.code,
                    message,
                ));
            }
        };
        drop(busy);
        self.record(|s| &mut s.upload, start.elapsed(), n);
        tracing::debug!(
            device = dev,
            bytes,
            skip,
            n,
            "base points resident on the GPU"
        );
        let host: Weak<Vec<G>> = Arc::downgrade(points);
        let bases = Arc::new(Resident {
            handle,
            g2: G::G2,
            bytes,
            host,
            _charge: charge,
        });
        map.insert(
            key,
            ResidentSlot {
                bases: bases.clone(),
                last_used: Instant::now(),
            },
        );
        Ok(bases)
    }

    /// The MSM of G1 or G2: the used exponents over the resident or streamed bases, on the
    /// calling worker's device. Large scalar sets go through a page-locked buffer of the worker's, so
    /// the upload under the device lock is a full-speed DMA: a sparse query's used exponents
    /// are gathered straight into it, a full query's copied in (both in parallel on the GPU
    /// stage's host pool, outside the lock); small ones are read where they are.
    fn msm<G: GpuGroup>(
        &self,
        bases: &Bases<G>,
        density: &Density,
        exponents: &Arc<Vec<Fr>>,
    ) -> Result<G::Projective, KernelError> {
        let dev = self.device();
        let started = Instant::now();
        // Resident bases take a split MSM classified on the host; streamed ones run plain
        // (the batch addition reads resident points).
        let classify = self.options.split_msm && bases.placement == Placement::Resident;
        let scalars = match density {
            Density::Sparse(d) => {
                let gather = on_host_pool(|| SparseGather::new(d, exponents.len()));
                check_bases(bases, gather.used())?;
                let scalars = if gather.used() >= STAGE_FROM {
                    let buf = self.take_pinned(dev, gather.used() * size_of::<Fr>())?;
                    // SAFETY: the buffer holds at least `used` Fr and is ours alone until
                    // returned; every element is written by `fill` before it is read.
                    let dst = unsafe { buf.uninit::<Fr>(gather.used()) };
                    on_host_pool(|| gather.fill(dst, exponents, &|e| *e));
                    Scalars::Staged(buf, gather.used())
                } else {
                    Scalars::Host(gather.collect(exponents, &|e| *e).into())
                };
                self.record(|s| &mut s.host_msm_gather, started.elapsed(), gather.used());
                scalars
            }
            Density::Full => {
                check_bases(bases, exponents.len())?;
                // Classified where they are: a split needs only the classification on the
                // device, so nothing is staged.
                let classified = classify.then(|| self.classify(exponents)).flatten();
                if let Some(c) = classified {
                    Scalars::Classified(c)
                } else if exponents.len() >= STAGE_FROM {
                    let buf = self.take_pinned(dev, size_of_val(&exponents[..]))?;
                    // SAFETY: as above; every element is written by the copy.
                    let dst = unsafe { buf.uninit::<Fr>(exponents.len()) };
                    on_host_pool(|| {
                        dst.par_chunks_mut(STAGE_FROM)
                            .zip(exponents.par_chunks(STAGE_FROM))
                            .for_each(|(d, s)| {
                                for (d, s) in d.iter_mut().zip(s) {
                                    d.write(*s);
                                }
                            })
                    });
                    self.record(
                        |s| &mut s.msm_staging_transfers,
                        started.elapsed(),
                        exponents.len(),
                    );
                    Scalars::Staged(buf, exponents.len())
                } else {
                    Scalars::Host(exponents[..].into())
                }
            }
        };
        // A sparse query's gathered scalars classified in their turn. Where a split would not
        // pay the MSM runs plain (the device is not asked to classify again).
        let scalars = match scalars {
            Scalars::Staged(..) | Scalars::Host(..) if classify => {
                match self.classify(scalars.as_slice()) {
                    Some(c) => {
                        scalars.release(self, dev);
                        Scalars::Classified(c)
                    }
                    None => scalars,
                }
            }
            other => other,
        };
        let n = scalars.len();
        if n == 0 {
            scalars.release(self, dev);
            return Ok(G::Projective::identity());
        }
        let split_on_device = !classify;
        let prepared = self.prepare(dev, bases, n, false, true);
        let result = prepared.and_then(|prepared| {
            let _busy = self.lock(dev);
            match &scalars {
                Scalars::Classified(c) => self.run_classified::<G>(dev, &prepared, c),
                // SAFETY: the prepared bases hold >= n points; `scalars.ptr()` points at n
                // live host Fr (staged or in place), `#[repr(transparent)]` over blst_fr
                // (Montgomery form, which pp_msm_* tells sppark to convert).
                _ => unsafe {
                    self.run_prepared::<G>(dev, &prepared, scalars.ptr(), n, false, split_on_device)
                },
            }
        });
        scalars.release(self, dev);
        result
    }

    /// The split MSM's classification of `scalars` on the host pool (outside the device lock),
    /// or None where a split would not pay.
    fn classify(&self, scalars: &[Fr]) -> Option<Classified> {
        if scalars.is_empty() {
            return None;
        }
        let start = Instant::now();
        let classified = on_host_pool(|| Classified::of(scalars));
        self.record(|s| &mut s.host_msm_classify, start.elapsed(), scalars.len());
        classified
    }

    /// Runs a split MSM of host-classified scalars over prepared resident bases while the
    /// caller holds `dev`'s lock.
    fn run_classified<G: GpuGroup>(
        &self,
        dev: usize,
        prepared: &Prepared,
        c: &Classified,
    ) -> Result<G::Projective, KernelError> {
        let Prepared::Resident { bases, .. } = prepared else {
            return Err(KernelError::Msm {
                what: G::MSM,
                message: "a classified split MSM needs resident bases".into(),
            });
        };
        let mut out = G::Raw::default();
        let start = Instant::now();
        // SAFETY: the handle is `dev`'s resident bases of G with at least c.n points; the
        // classification's vectors are live and as long as it says (Classified::of).
        check(G::MSM, dev, unsafe {
            G::run_classified(bases.handle, &mut out, c)
        })?;
        self.record(G::stat, start.elapsed(), c.n);
        {
            let mut s = unpoisoned(&self.stats);
            let (ones, tail) = G::split_stats(&mut s);
            for (k, count) in [(ones, c.n_ones), (tail, c.tail.len())] {
                k.calls += 1;
                k.elements += count as u64;
            }
        }
        let mut sum = G::Projective::identity();
        *sum.as_mut() = out;
        Ok(sum)
    }

    /// The bases of an `n`-point MSM on `dev`, ready to run: uploaded if resident and not
    /// there yet; page-locked, with the streaming engine made, if streamed. Its temporaries
    /// (plain Pippenger's; with `assignment_scalars` and split MSMs on, at most the split's)
    /// are admitted in the ledger. Call without holding `dev`'s lock.
    fn prepare<G: GpuGroup>(
        &self,
        dev: usize,
        bases: &Bases<G>,
        n: usize,
        on_device: bool,
        assignment_scalars: bool,
    ) -> Result<Prepared, KernelError> {
        self.sweep_registrations();
        let point_bytes = size_of::<G>();
        match bases.placement {
            Placement::Resident => {
                let resident = self.resident(dev, &bases.points, bases.skip, n)?;
                let temp = if self.options.split_msm && assignment_scalars {
                    split_msm_temp_bytes(n, point_bytes, on_device)
                } else {
                    msm_temp_device_bytes(n, n, point_bytes, false, on_device)
                };
                let temp = self.charge(dev, Held::MsmTemp, temp, "an MSM's temporaries")?;
                Ok(Prepared::Resident {
                    bases: resident,
                    _temp: temp,
                })
            }
            Placement::Streamed => {
                let engine_points = self.memory.stream_engine_points;
                if !stream_schedule_fits(n, engine_points) {
                    return Err(KernelError::Msm {
                        what: G::MSM,
                        message: format!(
                            "sppark's slices of a streamed MSM of {n} points on an engine of \
                             {engine_points} would run past the points; raise \
                             {STREAM_ENGINE_POINTS_ENV}"
                        ),
                    });
                }
                self.register_host(&bases.points);
                let engine = self.stream_engine::<G>(dev)?;
                let temp = msm_temp_device_bytes(n, engine_points, point_bytes, true, on_device);
                let temp = self.charge(dev, Held::MsmTemp, temp, "a streamed MSM's temporaries")?;
                Ok(Prepared::Streamed {
                    engine,
                    points: bases.points[bases.skip..].as_ptr().cast(),
                    _temp: temp,
                })
            }
        }
    }

    /// Runs a prepared MSM while the caller holds `dev`'s lock.
    ///
    /// # Safety
    /// `prepared` came from [`CudaBackend::prepare`] for `G`, `dev` and at least `n` points,
    /// and its host vector is alive; `scalars` as for [`CudaBackend::run_locked`].
    unsafe fn run_prepared<G: GpuGroup>(
        &self,
        dev: usize,
        prepared: &Prepared,
        scalars: *const Fr,
        n: usize,
        on_device: bool,
        assignment_scalars: bool,
    ) -> Result<G::Projective, KernelError> {
        match prepared {
            Prepared::Resident { bases, .. } => unsafe {
                self.run_locked::<G>(dev, bases.handle, scalars, n, on_device, assignment_scalars)
            },
            Prepared::Streamed { engine, points, .. } => {
                let mut out = G::Raw::default();
                let start = Instant::now();
                // SAFETY: `points` are n live host points of G (page-locked where that
                // worked); the engine is `dev`'s for G; scalars as the caller promises.
                check(G::MSM, dev, unsafe {
                    G::run_streamed(
                        engine.handle,
                        points.cast(),
                        n,
                        scalars.cast(),
                        on_device,
                        &mut out,
                    )
                })?;
                self.record(G::streamed_stat, start.elapsed(), n);
                let mut sum = G::Projective::identity();
                *sum.as_mut() = out;
                Ok(sum)
            }
        }
    }

    /// `dev`'s streaming engine for G, made on first use.
    fn stream_engine<G: GpuGroup>(&self, dev: usize) -> Result<Arc<StreamEngine>, KernelError> {
        let mut engines = unpoisoned(&self.devices[dev].stream_engines);
        let slot = &mut engines[usize::from(G::G2)];
        if let Some(engine) = slot {
            return Ok(engine.clone());
        }
        let np = self.memory.stream_engine_points;
        let bytes = msm_engine_device_bytes(np, size_of::<G>(), self.devices[dev].info.sm_count);
        let charge = self.charge(dev, Held::StreamEngine, bytes, "the streaming MSM engine")?;
        let mut handle = std::ptr::null_mut();
        {
            let _busy = self.lock(dev);
            // SAFETY: `handle` is an out-pointer.
            check("making the streaming MSM engine", dev, unsafe {
                G::stream_new(dev as i32, np, &mut handle)
            })?;
        }
        let engine = Arc::new(StreamEngine {
            handle,
            g2: G::G2,
            _charge: charge,
        });
        *slot = Some(engine.clone());
        Ok(engine)
    }

    /// Page-locks the host vector of streamed bases, once (the whole vector: ranges of it
    /// may overlap, and a range cannot be registered twice). If that fails the MSM still
    /// runs, its copies from pageable memory (slowly).
    fn register_host<G: Send + Sync + 'static>(&self, points: &Arc<Vec<G>>) {
        let key = Arc::as_ptr(points) as usize;
        let mut map = unpoisoned(&self.registered);
        if map.contains_key(&key) {
            return;
        }
        let bytes = size_of_val(&points[..]);
        let ptr = points.as_ptr().cast_mut().cast::<c_void>();
        let start = Instant::now();
        let owned = bytes > 0 && {
            // SAFETY: `bytes` of live host memory, kept alive by the registration.
            let e = unsafe { ffi::pp_host_register(ptr, bytes) };
            if e.code != 0 && e.code != CUDA_HOST_MEMORY_ALREADY_REGISTERED {
                tracing::warn!(
                    bytes,
                    error = %e,
                    "cannot page-lock streamed base points: their copies will be slow"
                );
            }
            e.code == 0
        };
        self.record(|s| &mut s.host_register, start.elapsed(), points.len());
        map.insert(
            key,
            HostRegistration {
                ptr,
                owned,
                host: points.clone(),
            },
        );
    }

    /// Unregisters streamed host vectors that only the backend still holds, then lets them
    /// go (see [`HostRegistration`]).
    fn sweep_registrations(&self) {
        unpoisoned(&self.registered).retain(|_, r| Arc::strong_count(&r.host) > 1);
    }

    /// Runs one MSM on `dev` while the caller holds its lock, and records it.
    ///
    /// # Safety
    /// `handle` holds resident bases of at least `n` points on `dev`; `scalars` points at `n`
    /// live `Fr` in host memory, or in `dev`'s memory when `on_device`.
    unsafe fn run_locked<G: GpuGroup>(
        &self,
        dev: usize,
        handle: *mut c_void,
        scalars: *const Fr,
        n: usize,
        on_device: bool,
        assignment_scalars: bool,
    ) -> Result<G::Projective, KernelError> {
        // Only the assignment's scalars are mostly 0/1; the quotient's (H) are not.
        let split = self.options.split_msm && assignment_scalars;
        let mut out = G::Raw::default();
        let mut info = ffi::MsmInfo::default();
        let start = Instant::now();
        // SAFETY: as the caller promises; `out` and `info` are out-pointers.
        check(G::MSM, dev, unsafe {
            G::run(
                handle,
                &mut out,
                n,
                scalars.cast(),
                on_device,
                split,
                &mut info,
            )
        })?;
        let took = start.elapsed();
        self.record(G::stat, took, n);
        if info.split != 0 {
            let mut s = unpoisoned(&self.stats);
            let (ones, tail) = G::split_stats(&mut s);
            for (k, count) in [(ones, info.ones), (tail, info.tail)] {
                k.calls += 1;
                k.elements += count;
            }
        }
        let mut sum = G::Projective::identity();
        *sum.as_mut() = out;
        Ok(sum)
    }

    /// An idle page-locked buffer of at least `bytes` on `dev`'s pool, made if none is idle
    /// (a power of two, so one buffer serves every query of a circuit size).
    fn take_pinned(&self, dev: usize, bytes: usize) -> Result<Pinned, KernelError> {
        {
            let mut pool = unpoisoned(&self.devices[dev].pinned);
            if let Some(i) = pool.iter().position(|b| b.bytes >= bytes) {
                return Ok(pool.swap_remove(i));
            }
            // Idle buffers too small for this size will not serve it: free them.
            pool.clear();
        }
        let bytes = bytes.next_power_of_two();
        let mut ptr = std::ptr::null_mut();
        // SAFETY: `ptr` is an out-pointer.
        check("allocating page-locked staging", dev, unsafe {
            ffi::pp_pinned_alloc(bytes, &mut ptr)
        })?;
        Ok(Pinned { ptr, bytes })
    }

    fn return_pinned(&self, dev: usize, buf: Pinned) {
        unpoisoned(&self.devices[dev].pinned).push(buf);
    }

    /// An idle quotient workspace of `buffers` for domains of 2^lg on `dev`, made if none is
    /// idle. Idle ones of other shapes are freed first (the pipeline moved to another circuit
    /// size or plan).
    fn take_workspace(
        &self,
        dev: usize,
        lg: u32,
        buffers: QuotientBuffers,
    ) -> Result<QuotientWorkspace, KernelError> {
        {
            let mut pool = unpoisoned(&self.devices[dev].quotient_workspaces);
            pool.retain(|ws| ws.lg == lg && ws.buffers == buffers);
            if let Some(ws) = pool.pop() {
                return Ok(ws);
            }
        }
        let bytes = quotient_workspace_bytes(lg, buffers);
        let charge = self.charge(dev, Held::Workspace, bytes, "a quotient workspace")?;
        let mut handle = std::ptr::null_mut();
        // SAFETY: `handle` is an out-pointer.
        check("allocating the quotient's buffers", dev, unsafe {
            ffi::pp_quotient_ws_new(dev as i32, lg, buffers.count(), &mut handle)
        })?;
        Ok(QuotientWorkspace {
            handle,
            lg,
            buffers,
            _charge: charge,
        })
    }

    fn return_workspace(&self, dev: usize, ws: QuotientWorkspace) {
        unpoisoned(&self.devices[dev].quotient_workspaces).push(ws);
    }

    /// a, b, c padded to the evaluation domain and uploaded into a workspace of `dev`, on the
    /// worker's own stream and outside the device lock (the copies overlap the other workers'
    /// kernels; only the NTTs hold the device): a DMA when they are page-locked (from
    /// [`ProvingBackend::evaluation_alloc`]). With three buffers the host vectors are freed
    /// here; with fewer, those not uploaded are kept for the NTTs, and a as their scratch.
    fn upload_evaluations(
        &self,
        dev: usize,
        mut a: Evaluations,
        mut b: Evaluations,
        mut c: Evaluations,
        buffers: QuotientBuffers,
    ) -> Result<Uploaded, KernelError> {
        if a.len() != b.len() || b.len() != c.len() {
            return Err(KernelError::MismatchedEvaluations {
                a: a.len(),
                b: b.len(),
                c: c.len(),
            });
        }
        let n = a.len();
        let m = domain_size(n);
        let lg = m.trailing_zeros();
        if lg > MAX_LG_DOMAIN {
            return Err(KernelError::DomainTooLarge(n));
        }
        for v in [&mut a, &mut b, &mut c] {
            v.resize(m, Fr::ZERO);
        }
        let ws = self.take_workspace(dev, lg, buffers)?;
        let copies = Instant::now();
        // SAFETY: a, b, c hold m = 2^lg elements; Fr is repr(transparent) over blst_fr
        // (Montgomery form, the layout of sppark's fr_t); the workspace holds 2^lg.
        check("uploading a, b, c", dev, unsafe {
            ffi::pp_quotient_upload(
                ws.handle,
                a.as_ptr().cast(),
                b.as_ptr().cast(),
                c.as_ptr().cast(),
            )
        })?;
        let upload_seconds = copies.elapsed();
        Ok(Uploaded {
            ws,
            lg,
            upload_seconds,
            host: (buffers != QuotientBuffers::Three).then_some([a, b, c]),
        })
    }

    /// The quotient's NTTs on uploaded evaluations; h is left in the workspace. The caller
    /// holds `dev`'s lock.
    fn compute_quotient_locked(&self, dev: usize, up: &mut Uploaded) -> Result<(), KernelError> {
        let m = 1u64 << up.lg;
        // h = (a*b - c) / z on the coset g*H, z(g*w^i) = g^m - 1 for every i.
        let g = Fr::MULTIPLICATIVE_GENERATOR;
        let zinv = Option::<Fr>::from((g.pow_vartime([m]) - Fr::ONE).invert())
            .expect("g^m != 1 for the multiplicative generator");
        let (a, b, c) = match &mut up.host {
            Some([a, b, c]) => (a.as_mut_ptr(), b.as_ptr(), c.as_ptr()),
            None => (std::ptr::null_mut(), std::ptr::null(), std::ptr::null()),
        };
        let start = Instant::now();
        // SAFETY: the workspace holds what was uploaded of a, b, c (2^lg elements each); the
        // rest, when the workspace has fewer than three buffers, are the host vectors kept in
        // `up`, padded to 2^lg, and a is ours to overwrite.
        check("quotient NTTs", dev, unsafe {
            ffi::pp_quotient_compute(
                up.ws.handle,
                up.lg,
                (&zinv as *const Fr).cast(),
                a.cast(),
                b.cast(),
                c.cast(),
            )
        })?;
        // The host vectors go back to their pool now, not when the MSMs are done.
        up.host = None;
        self.record(|s| &mut s.quotient, start.elapsed(), m as usize);
        Ok(())
    }

    /// Bytes of base points resident on each device.
    pub fn resident_bytes(&self) -> Vec<u64> {
        self.devices
            .iter()
            .map(|d| {
                let map = unpoisoned(&d.resident);
                map.values().map(|slot| slot.bases.bytes as u64).sum()
            })
            .collect()
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        for d in self.devices.iter_mut() {
            // Each Resident and StreamEngine frees its device memory as it drops.
            d.resident
                .get_mut()
                .unwrap_or_else(|p| p.into_inner())
                .clear();
            *d.stream_engines
                .get_mut()
                .unwrap_or_else(|p| p.into_inner()) = [None, None];
        }
        // Unregistered before the vectors they hold may be freed.
        self.registered
            .get_mut()
            .unwrap_or_else(|p| p.into_inner())
            .clear();
    }
}

impl ProvingBackend for CudaBackend {
    fn name(&self) -> &'static str {
        "cuda"
    }

    fn evaluation_alloc(&self) -> EvalAlloc {
        if self.options.pinned_evaluations {
            EvalAlloc::pooled(self.evaluations.clone())
        } else {
            EvalAlloc::heap()
        }
    }

    fn reserve(&self, r: &Reservation) -> Result<(), KernelError> {
        if self.options.pinned_evaluations {
            self.evaluations
                .reserve(r.evaluation_bytes, r.evaluation_blocks);
        }
        for dev in 0..self.devices.len() {
            let made = (0..r.workers_per_device)
                .map(|_| self.take_workspace(dev, r.domain_lg, r.quotient_buffers))
                .collect::<Result<Vec<_>, _>>()?;
            for ws in made {
                self.return_workspace(dev, ws);
            }
        }
        Ok(())
    }

    fn quotient(
        &self,
        a: Evaluations,
        b: Evaluations,
        c: Evaluations,
        buffers: QuotientBuffers,
    ) -> Result<Vec<Fr>, KernelError> {
        let dev = self.device();
        let mut up = self.upload_evaluations(dev, a, b, c, buffers)?;
        {
            let _busy = self.lock(dev);
            self.compute_quotient_locked(dev, &mut up)?;
        }
        let m = 1usize << up.lg;
        let mut out = vec![Fr::ZERO; m];
        let copies = Instant::now();
        // SAFETY: out holds m elements of blst_fr layout.
        check("downloading h", dev, unsafe {
            ffi::pp_quotient_download(up.ws.handle, out.as_mut_ptr().cast())
        })?;
        self.record(
            |s| &mut s.quotient_transfers,
            up.upload_seconds + copies.elapsed(),
            4 * m,
        );
        self.return_workspace(dev, up.ws);
        // deg(h) = m - 2: the top coefficient is zero and the h query has m - 1 points.
        out.pop();
        Ok(out)
    }

    fn h_msm(
        &self,
        a: Evaluations,
        b: Evaluations,
        c: Evaluations,
        bases: &Bases<G1Affine>,
        buffers: QuotientBuffers,
    ) -> Result<G1Projective, KernelError> {
        if !self.options.h_on_device {
            let h = Arc::new(self.quotient(a, b, c, buffers)?);
            return self.msm(bases, &Density::Full, &h);
        }
        let dev = self.device();
        // The h query has m - 1 points; the top coefficient of h is zero.
        let used = domain_size(a.len()) - 1;
        check_bases(bases, used)?;
        // Uploads resident bases on first use (under the lock itself), so before this worker
        // takes it.
        let prepared = self.prepare(dev, bases, used, true, false)?;
        let mut up = self.upload_evaluations(dev, a, b, c, buffers)?;
        let h = {
            let _busy = self.lock(dev);
            self.compute_quotient_locked(dev, &mut up)?;
            // SAFETY: h is on `dev`, in the workspace we hold, with m >= used elements
            // (Montgomery form); the prepared bases hold `used` points.
            let h = unsafe { ffi::pp_quotient_h(up.ws.handle) };
            let start = Instant::now();
            let sum = unsafe {
                self.run_prepared::<G1Affine>(dev, &prepared, h.cast(), used, true, false)?
            };
            self.record(|s| &mut s.msm_g1_h, start.elapsed(), used);
            sum
        };
        self.record(
            |s| &mut s.quotient_transfers,
            up.upload_seconds,
            3 * (used + 1),
        );
        self.return_workspace(dev, up.ws);
        Ok(h)
    }

    fn msm_g1(
        &self,
        bases: &Bases<G1Affine>,
        density: &Density,
        exponents: &Arc<Vec<Fr>>,
    ) -> Result<G1Projective, KernelError> {
        self.msm(bases, density, exponents)
    }

    fn msm_g2(
        &self,
        bases: &Bases<G2Affine>,
        density: &Density,
        exponents: &Arc<Vec<Fr>>,
    ) -> Result<G2Projective, KernelError> {
        self.msm(bases, density, exponents)
    }

    fn gpu_devices(&self) -> Vec<GpuDevice> {
        self.devices.iter().map(|d| d.info.clone()).collect()
    }

    fn device_memory_used(&self) -> Vec<u64> {
        (0..self.devices.len())
            .map(|id| {
                let (mut free, mut total, mut major, mut minor, mut sms) = (0, 0, 0, 0, 0);
                // SAFETY: out-pointers to locals.
                let e = unsafe {
                    ffi::pp_gpu_mem(
                        id as i32, &mut free, &mut total, &mut major, &mut minor, &mut sms,
                    )
                };
                if e.code == 0 {
                    total.saturating_sub(free) as u64
                } else {
                    0
                }
            })
            .collect()
    }

    fn device_memory_held(&self) -> Vec<u64> {
        self.ledger().iter().map(DeviceLedger::held).collect()
    }

    fn kernel_stats(&self) -> Vec<(&'static str, KernelStat)> {
        let s = unpoisoned(&self.stats);
        vec![
            ("quotient", s.quotient),
            ("quotient_transfers", s.quotient_transfers),
            ("msm_staging_transfers", s.msm_staging_transfers),
            ("msm_g1", s.msm_g1),
            ("msm_g1_h", s.msm_g1_h),
            ("msm_g2", s.msm_g2),
            ("msm_g1_split_ones", s.msm_g1_split_ones),
            ("msm_g1_split_tail", s.msm_g1_split_tail),
            ("msm_g2_split_ones", s.msm_g2_split_ones),
            ("msm_g2_split_tail", s.msm_g2_split_tail),
            ("msm_g1_streamed", s.msm_g1_streamed),
            ("msm_g2_streamed", s.msm_g2_streamed),
            ("upload_bases", s.upload),
            ("host_register", s.host_register),
            ("host_msm_gather", s.host_msm_gather),
            ("host_msm_classify", s.host_msm_classify),
            ("host_device_lock_wait", s.host_device_lock_wait),
        ]
    }
}

#[cfg(test)]
mod tests;
