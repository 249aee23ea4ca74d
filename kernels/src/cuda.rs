//! The CUDA backend: sppark's NTT, Pippenger MSM and bitmap batch-addition kernels
//! (cuda/proofpipe.cu) behind [`ProvingBackend`].
//!
//! - Base points stay resident: each query's range of a proving-key vector,
//!   `points[skip..skip + used]`, is uploaded to a device once per process (keyed by the
//!   vector's `Arc`, which the cache keeps alive so the key cannot be reused, the skip and the
//!   count, all fixed per circuit) into a device buffer of ours, with one sppark `msm_t`
//!   engine per range; every later MSM over it reads it in place.
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
//! - The CUDA runtime is linked statically and loads the driver at run time: a binary built
//!   with this backend starts on a machine without a GPU or driver, and [`CudaBackend::new`]
//!   then reports why it cannot be used.

use std::any::Any;
use std::cell::Cell;
use std::collections::HashMap;
use std::ffi::c_void;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex, MutexGuard};
use std::time::{Duration, Instant};

use blst::{blst_fr, blst_p1, blst_p2};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::{Field, PrimeField};
use group::Group;
use rayon::prelude::*;

use crate::{
    Bases, Density, EvalAlloc, Evaluations, GpuDevice, GpuOptions, KernelError, KernelStat,
    ProvingBackend,
    gather::{SparseGather, check_bases, on_host_pool},
};

mod ffi;
mod pinned;

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

/// Locks a mutex whose data stays consistent even if a holder panicked (pools, statistics,
/// the device turn): a panicking GPU-stage worker must not stop the others.
fn unpoisoned<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}

/// sppark's NTT tables cover domains up to 2^28.
const MAX_LG_DOMAIN: u32 = 28;

/// Base points of one query range, resident on a device (pp_bases: our device buffer and
/// the sppark `msm_t` engine that runs every MSM over it).
struct Resident {
    handle: *mut c_void,
    g2: bool,
    bytes: usize,
    /// Keeps the host vector alive, so its address (part of the cache key) is not reused.
    _host: Arc<dyn Any + Send + Sync>,
}

// SAFETY: the handle is only used under the device's lock, through the CUDA runtime.
unsafe impl Send for Resident {}

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
    /// The statistics the MSM counts in: all of its calls, and its split ones' ones and tail.
    fn stat(s: &mut Stats) -> &mut KernelStat;
    fn split_stats(s: &mut Stats) -> (&mut KernelStat, &mut KernelStat);
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
    fn stat(s: &mut Stats) -> &mut KernelStat {
        &mut s.msm_g1
    }
    fn split_stats(s: &mut Stats) -> (&mut KernelStat, &mut KernelStat) {
        (&mut s.msm_g1_split_ones, &mut s.msm_g1_split_tail)
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
    fn stat(s: &mut Stats) -> &mut KernelStat {
        &mut s.msm_g2
    }
    fn split_stats(s: &mut Stats) -> (&mut KernelStat, &mut KernelStat) {
        (&mut s.msm_g2_split_ones, &mut s.msm_g2_split_tail)
    }
}

#[derive(Default)]
struct Stats {
    quotient: KernelStat,
    quotient_transfers: KernelStat,
    msm_staging_transfers: KernelStat,
    msm_g1: KernelStat,
    msm_g2: KernelStat,
    /// Split MSMs: their calls, and the scalars summed by the batch addition (ones) or sent
    /// through Pippenger (tail) as elements. Their time is in msm_g1 / msm_g2.
    msm_g1_split_ones: KernelStat,
    msm_g1_split_tail: KernelStat,
    msm_g2_split_ones: KernelStat,
    msm_g2_split_tail: KernelStat,
    upload: KernelStat,
    /// Host work of the GPU stage outside the device: gathering a sparse query's scalars, and
    /// waiting for the device lock (calls: every lock taken).
    host_msm_gather: KernelStat,
    host_device_lock_wait: KernelStat,
}

struct Device {
    info: GpuDevice,
    /// Held while a kernel sequence runs: workers of one device take turns in memory.
    busy: Mutex<()>,
    resident: Mutex<HashMap<ResidentKey, Resident>>,
    /// Idle quotient workspaces (a stream and a/b/c buffers each); a worker takes one per
    /// quotient, so there are as many as workers ever ran one at once.
    quotient_workspaces: Mutex<Vec<QuotientWorkspace>>,
    /// Idle page-locked staging buffers for MSM scalars, one per worker that ran an MSM.
    pinned: Mutex<Vec<Pinned>>,
}

/// An MSM's scalars on the host: staged in a page-locked buffer (its first `n` elements), or
/// read where they are.
enum Scalars<'a> {
    Staged(Pinned, usize),
    Host(std::borrow::Cow<'a, [Fr]>),
}

impl Scalars<'_> {
    fn len(&self) -> usize {
        match self {
            Self::Staged(_, n) => *n,
            Self::Host(v) => v.len(),
        }
    }

    fn ptr(&self) -> *const Fr {
        match self {
            Self::Staged(buf, _) => buf.ptr.cast::<Fr>().cast_const(),
            Self::Host(v) => v.as_ptr(),
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

/// A stream and three device buffers of 2^lg elements for one quotient at a time.
struct QuotientWorkspace {
    handle: *mut c_void,
    lg: u32,
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

/// a, b, c of one partition on the device, in a workspace the worker holds.
struct Uploaded {
    ws: QuotientWorkspace,
    lg: u32,
    upload_seconds: Duration,
}

/// Runs the quotient's NTTs and the G1/G2 MSMs on CUDA GPUs.
pub struct CudaBackend {
    devices: Vec<Device>,
    next_device: AtomicUsize,
    stats: Mutex<Stats>,
    options: GpuOptions,
    evaluations: Arc<EvalPool>,
}

thread_local! {
    static THREAD_DEVICE: Cell<Option<usize>> = const { Cell::new(None) };
}

impl CudaBackend {
    /// Finds the usable devices (compute capability 7.0 or newer, cooperative launch), with
    /// the options from the environment ([`GpuOptions::from_env`]). Fails, with the reason,
    /// if there are none or no driver.
    pub fn new() -> Result<Self, KernelError> {
        Self::with_options(GpuOptions::from_env())
    }

    /// As [`CudaBackend::new`], with these options.
    pub fn with_options(options: GpuOptions) -> Result<Self, KernelError> {
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
                    total_bytes: total as u64,
                    free_bytes: free as u64,
                    compute_capability: (major as u32, minor as u32),
                    sm_count: sms as u32,
                },
                busy: Mutex::new(()),
                resident: Mutex::new(HashMap::new()),
                quotient_workspaces: Mutex::new(Vec::new()),
                pinned: Mutex::new(Vec::new()),
            });
        }
        Ok(Self {
            devices,
            next_device: AtomicUsize::new(0),
            stats: Mutex::new(Stats::default()),
            options,
            evaluations: Arc::new(EvalPool::default()),
        })
    }

    pub fn options(&self) -> GpuOptions {
        self.options
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
    fn resident<G: GpuGroup>(
        &self,
        dev: usize,
        points: &Arc<Vec<G>>,
        skip: usize,
        n: usize,
    ) -> Result<*mut c_void, KernelError> {
        let key = (Arc::as_ptr(points) as usize, skip, n);
        let mut map = unpoisoned(&self.devices[dev].resident);
        if let Some(r) = map.get(&key) {
            return Ok(r.handle);
        }
        let range = &points[skip..skip + n];
        let bytes = std::mem::size_of_val(range);
        let start = Instant::now();
        let mut handle = std::ptr::null_mut();
        let busy = self.lock(dev);
        // SAFETY: `range` is live host memory of n points; `handle` is an out-pointer.
        check("uploading base points", dev, unsafe {
            G::upload(dev as i32, range.as_ptr(), n, &mut handle)
        })?;
        drop(busy);
        self.record(|s| &mut s.upload, start.elapsed(), n);
        tracing::debug!(
            device = dev,
            bytes,
            skip,
            n,
            "base points resident on the GPU"
        );
        map.insert(
            key,
            Resident {
                handle,
                g2: G::G2,
                bytes,
                _host: points.clone(),
            },
        );
        Ok(handle)
    }

    /// The MSM of G1 or G2: the used exponents over the resident bases, on the calling
    /// worker's device. Large scalar sets go through a page-locked buffer of the worker's, so
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
                if exponents.len() >= STAGE_FROM {
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
        let n = scalars.len();
        if n == 0 {
            scalars.release(self, dev);
            return Ok(G::Projective::identity());
        }
        let handle = self.resident(dev, &bases.points, bases.skip, n);
        let result = handle.and_then(|handle| {
            let _busy = self.lock(dev);
            // SAFETY: the resident buffer holds >= n points; `scalars.ptr()` points at n live
            // host Fr (staged or in place), `#[repr(transparent)]` over blst_fr (Montgomery
            // form, which pp_msm_g*_run tells sppark to convert).
            unsafe { self.run_locked::<G>(dev, handle, scalars.ptr(), n, false, true) }
        });
        scalars.release(self, dev);
        result
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

    /// An idle quotient workspace for domains of 2^lg on `dev`, made if none is idle. Idle
    /// ones of other sizes are freed first (the pipeline moved to another circuit size).
    fn take_workspace(&self, dev: usize, lg: u32) -> Result<QuotientWorkspace, KernelError> {
        {
            let mut pool = unpoisoned(&self.devices[dev].quotient_workspaces);
            pool.retain(|ws| ws.lg == lg);
            if let Some(ws) = pool.pop() {
                return Ok(ws);
            }
        }
        let mut handle = std::ptr::null_mut();
        // SAFETY: `handle` is an out-pointer.
        check("allocating the quotient's buffers", dev, unsafe {
            ffi::pp_quotient_ws_new(dev as i32, lg, &mut handle)
        })?;
        Ok(QuotientWorkspace { handle, lg })
    }

    fn return_workspace(&self, dev: usize, ws: QuotientWorkspace) {
        unpoisoned(&self.devices[dev].quotient_workspaces).push(ws);
    }

    /// a, b, c padded to the evaluation domain and uploaded into a workspace of `dev`, on the
    /// worker's own stream and outside the device lock (the copies overlap the other workers'
    /// kernels; only the NTTs hold the device): a DMA when they are page-locked (from
    /// [`ProvingBackend::evaluation_alloc`]). The host vectors are freed here.
    fn upload_evaluations(
        &self,
        dev: usize,
        mut a: Evaluations,
        mut b: Evaluations,
        mut c: Evaluations,
    ) -> Result<Uploaded, KernelError> {
        if a.len() != b.len() || b.len() != c.len() {
            return Err(KernelError::MismatchedEvaluations {
                a: a.len(),
                b: b.len(),
                c: c.len(),
            });
        }
        let n = a.len();
        let m = crate::domain_size(n);
        let lg = m.trailing_zeros();
        if lg > MAX_LG_DOMAIN {
            return Err(KernelError::DomainTooLarge(n));
        }
        for v in [&mut a, &mut b, &mut c] {
            v.resize(m, Fr::ZERO);
        }
        let ws = self.take_workspace(dev, lg)?;
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
        Ok(Uploaded {
            ws,
            lg,
            upload_seconds: copies.elapsed(),
        })
    }

    /// The quotient's NTTs on uploaded evaluations; h is left in the workspace. The caller
    /// holds `dev`'s lock.
    fn compute_quotient_locked(&self, dev: usize, up: &Uploaded) -> Result<(), KernelError> {
        let m = 1u64 << up.lg;
        // h = (a*b - c) / z on the coset g*H, z(g*w^i) = g^m - 1 for every i.
        let g = Fr::MULTIPLICATIVE_GENERATOR;
        let zinv = Option::<Fr>::from((g.pow_vartime([m]) - Fr::ONE).invert())
            .expect("g^m != 1 for the multiplicative generator");
        let start = Instant::now();
        // SAFETY: the workspace holds the uploaded a, b, c of 2^lg elements.
        check("quotient NTTs", dev, unsafe {
            ffi::pp_quotient_compute(up.ws.handle, up.lg, (&zinv as *const Fr).cast())
        })?;
        self.record(|s| &mut s.quotient, start.elapsed(), m as usize);
        Ok(())
    }

    /// Bytes of base points resident on each device.
    pub fn resident_bytes(&self) -> Vec<u64> {
        self.devices
            .iter()
            .map(|d| {
                let map = unpoisoned(&d.resident);
                map.values().map(|r| r.bytes as u64).sum()
            })
            .collect()
    }
}

impl Drop for CudaBackend {
    fn drop(&mut self) {
        for d in self.devices.iter_mut() {
            let map = d.resident.get_mut().unwrap_or_else(|p| p.into_inner());
            for (_, r) in map.drain() {
                // SAFETY: made by pp_bases_g*_new, freed once.
                unsafe {
                    if r.g2 {
                        ffi::pp_bases_g2_free(r.handle)
                    } else {
                        ffi::pp_bases_g1_free(r.handle)
                    }
                };
            }
        }
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

    fn quotient(
        &self,
        a: Evaluations,
        b: Evaluations,
        c: Evaluations,
    ) -> Result<Vec<Fr>, KernelError> {
        let dev = self.device();
        let up = self.upload_evaluations(dev, a, b, c)?;
        {
            let _busy = self.lock(dev);
            self.compute_quotient_locked(dev, &up)?;
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
    ) -> Result<G1Projective, KernelError> {
        if !self.options.h_on_device {
            let h = Arc::new(self.quotient(a, b, c)?);
            return self.msm(bases, &Density::Full, &h);
        }
        let dev = self.device();
        // The h query has m - 1 points; the top coefficient of h is zero.
        let used = crate::domain_size(a.len()) - 1;
        check_bases(bases, used)?;
        // Uploads on first use (under the lock itself), so before this worker takes it.
        let handle = self.resident(dev, &bases.points, bases.skip, used)?;
        let up = self.upload_evaluations(dev, a, b, c)?;
        let h = {
            let _busy = self.lock(dev);
            self.compute_quotient_locked(dev, &up)?;
            // SAFETY: h is on `dev`, in the workspace we hold, with m >= used elements
            // (Montgomery form); the resident bases hold `used` points.
            let h = unsafe { ffi::pp_quotient_h(up.ws.handle) };
            unsafe { self.run_locked::<G1Affine>(dev, handle, h.cast(), used, true, false)? }
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

    fn kernel_stats(&self) -> Vec<(&'static str, KernelStat)> {
        let s = unpoisoned(&self.stats);
        vec![
            ("quotient", s.quotient),
            ("quotient_transfers", s.quotient_transfers),
            ("msm_staging_transfers", s.msm_staging_transfers),
            ("msm_g1", s.msm_g1),
            ("msm_g2", s.msm_g2),
            ("msm_g1_split_ones", s.msm_g1_split_ones),
            ("msm_g1_split_tail", s.msm_g1_split_tail),
            ("msm_g2_split_ones", s.msm_g2_split_ones),
            ("msm_g2_split_tail", s.msm_g2_split_tail),
            ("upload_bases", s.upload),
            ("host_msm_gather", s.host_msm_gather),
            ("host_device_lock_wait", s.host_device_lock_wait),
        ]
    }
}

#[cfg(test)]
mod tests;
