//! GPU against CPU, bit for bit, at 2^10 to 2^16. They need a GPU: without one they say so
//! and pass, unless PROOFPIPE_REQUIRE_GPU=1 (set it where a GPU must be there).

use std::sync::Arc;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

use super::{CudaBackend, unpoisoned};
use crate::{
    Bases, CpuBackend, Density, DensityTracker, EvalAlloc, Evaluations, ProvingBackend,
    QuotientBuffers, Reservation, evaluations,
};

const THREE: QuotientBuffers = QuotientBuffers::Three;

/// `values` as evaluations in `alloc`, reserved to the domain size as synthesis reserves them.
fn ev(alloc: &EvalAlloc, values: &[Fr]) -> Evaluations {
    let mut e = evaluations(crate::domain_size(values.len()), alloc);
    e.extend_from_slice(values);
    e
}

fn gpu() -> Option<CudaBackend> {
    match CudaBackend::new() {
        Ok(b) => Some(b),
        Err(e) => {
            if std::env::var("PROOFPIPE_REQUIRE_GPU").is_ok_and(|v| v == "1") {
                panic!("PROOFPIPE_REQUIRE_GPU=1 but {e}");
            }
            eprintln!("skipped: {e}");
            None
        }
    }
}

/// Random points, cheaply: multiples of one random point by consecutive small steps.
fn points<G: Group + Curve<AffineRepr: Clone>>(
    rng: &mut ChaCha8Rng,
    n: usize,
) -> Vec<G::AffineRepr> {
    let step = G::random(&mut *rng);
    let mut p = G::random(&mut *rng);
    let mut proj = Vec::with_capacity(n);
    for _ in 0..n {
        proj.push(p);
        p += step;
    }
    let mut out = vec![G::identity().to_affine(); n];
    G::batch_normalize(&proj, &mut out);
    out
}

fn scalars(rng: &mut ChaCha8Rng, n: usize) -> Arc<Vec<Fr>> {
    // Mix of random, zero, one and small scalars, as real witnesses have, and r - 1 (the
    // largest; all of them go to the GPU in Montgomery form and are converted there).
    Arc::new(
        (0..n)
            .map(|i| match i % 7 {
                0 => Fr::ZERO,
                1 => Fr::ONE,
                2 => Fr::from(i as u64),
                3 => -Fr::ONE,
                _ => Fr::random(&mut *rng),
            })
            .collect(),
    )
}

fn sparse(n: usize) -> (Arc<DensityTracker>, usize) {
    let mut t = DensityTracker::new();
    let mut used = 0;
    for i in 0..n {
        t.add_element();
        if i % 3 != 1 {
            t.inc(i);
            used += 1;
        }
    }
    (Arc::new(t), used)
}

#[test]
fn msm_g1_matches_cpu_2_10_to_2_16() {
    let Some(gpu) = gpu() else { return };
    let cpu = CpuBackend::new();
    let mut rng = ChaCha8Rng::seed_from_u64(1);
    for lg in [10, 13, 16] {
        let n = 1usize << lg;
        let pts = Arc::new(points::<G1Projective>(&mut rng, n + 5));
        let exps = scalars(&mut rng, n);
        for skip in [0, 5] {
            let bases = Bases::new(pts.clone(), skip);
            let want = cpu.msm_g1(&bases, &Density::Full, &exps).unwrap();
            let got = gpu.msm_g1(&bases, &Density::Full, &exps).unwrap();
            assert_eq!(
                got.to_affine(),
                want.to_affine(),
                "G1 full 2^{lg} skip {skip}"
            );
            eprintln!("G1 full 2^{lg} skip {skip}: GPU = CPU");
        }
        let (d, used) = sparse(n);
        let bases = Bases::new(Arc::new(pts[..used + 2].to_vec()), 2);
        let want = cpu
            .msm_g1(&bases, &Density::Sparse(d.clone()), &exps)
            .unwrap();
        let got = gpu.msm_g1(&bases, &Density::Sparse(d), &exps).unwrap();
        assert_eq!(got.to_affine(), want.to_affine(), "G1 sparse 2^{lg}");
    }
    let uploads = |gpu: &CudaBackend| {
        gpu.kernel_stats()
            .iter()
            .find(|(k, _)| *k == "upload_bases")
            .unwrap()
            .1
            .calls
    };
    // Three base ranges per size (full from 0, full from 5, sparse).
    assert_eq!(uploads(&gpu), 9, "one upload per distinct base range");
    // The same resident bases with other scalars: still right, nothing re-uploaded.
    let pts = Arc::new(points::<G1Projective>(&mut rng, 1 << 12));
    let bases = Bases::new(pts, 0);
    for seed in 0..3 {
        let exps = scalars(&mut ChaCha8Rng::seed_from_u64(100 + seed), 1 << 12);
        let want = cpu.msm_g1(&bases, &Density::Full, &exps).unwrap();
        let got = gpu.msm_g1(&bases, &Density::Full, &exps).unwrap();
        assert_eq!(
            got.to_affine(),
            want.to_affine(),
            "G1 resident reuse {seed}"
        );
    }
    assert_eq!(uploads(&gpu), 10);
}

#[test]
fn msm_g2_matches_cpu_2_10_to_2_16() {
    let Some(gpu) = gpu() else { return };
    let cpu = CpuBackend::new();
    let mut rng = ChaCha8Rng::seed_from_u64(2);
    for lg in [10, 16] {
        let n = 1usize << lg;
        let pts: Arc<Vec<G2Affine>> = Arc::new(points::<G2Projective>(&mut rng, n + 1));
        let exps = scalars(&mut rng, n);
        let bases = Bases::new(pts.clone(), 1);
        let want = cpu.msm_g2(&bases, &Density::Full, &exps).unwrap();
        let got = gpu.msm_g2(&bases, &Density::Full, &exps).unwrap();
        assert_eq!(got.to_affine(), want.to_affine(), "G2 full 2^{lg}");
        eprintln!("G2 full 2^{lg}: GPU = CPU");
        let (d, used) = sparse(n);
        let bases = Bases::new(Arc::new(pts[..used].to_vec()), 0);
        let want = cpu
            .msm_g2(&bases, &Density::Sparse(d.clone()), &exps)
            .unwrap();
        let got = gpu.msm_g2(&bases, &Density::Sparse(d), &exps).unwrap();
        assert_eq!(got.to_affine(), want.to_affine(), "G2 sparse 2^{lg}");
    }
}

#[test]
fn quotient_matches_cpu_2_10_to_2_16() {
    let Some(gpu) = gpu() else { return };
    let cpu = CpuBackend::new();
    let mut rng = ChaCha8Rng::seed_from_u64(3);
    // Sizes that are and are not powers of two (the domain is padded).
    for n in [1usize << 10, (1 << 13) - 3, 1 << 16] {
        let a: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
        let b: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
        // c = a*b except in a few places: a quotient that is not a trivial one.
        let c: Vec<Fr> = a
            .iter()
            .zip(&b)
            .enumerate()
            .map(|(i, (x, y))| {
                if i % 5 == 0 {
                    Fr::random(&mut rng)
                } else {
                    x * y
                }
            })
            .collect();
        let heap = EvalAlloc::heap();
        let want = cpu
            .quotient(ev(&heap, &a), ev(&heap, &b), ev(&heap, &c), THREE)
            .unwrap();
        for buffers in [THREE, QuotientBuffers::Two, QuotientBuffers::One] {
            // In the GPU's own (page-locked) evaluations, as synthesis makes them for it.
            let pinned = gpu.evaluation_alloc();
            assert!(pinned.is_pooled());
            let got = gpu
                .quotient(ev(&pinned, &a), ev(&pinned, &b), ev(&pinned, &c), buffers)
                .unwrap();
            assert!(
                unpoisoned(&gpu.evaluations.live).is_empty(),
                "the page-locked blocks went back to the pool"
            );
            let got_heap = gpu
                .quotient(ev(&heap, &a), ev(&heap, &b), ev(&heap, &c), buffers)
                .unwrap();
            assert!(
                got_heap == want,
                "quotient from ordinary memory differs at n={n}, {buffers:?}"
            );
            assert_eq!(got.len(), want.len(), "n={n}");
            assert!(got == want, "quotient differs at n={n}, {buffers:?}");
            eprintln!("quotient n={n}, {buffers:?} buffers: GPU = CPU");
        }
    }
}

/// What a pipeline reserves before its first partition is what its partitions then use: the
/// quotient takes a reserved page-locked block and workspace, and nothing new is allocated.
#[test]
fn reserved_blocks_and_workspaces_are_the_ones_partitions_use() {
    let Some(gpu) = gpu() else { return };
    // Blocks of at least EvalAlloc::POOL_FROM (1 MiB) come from the pool: 2^15 elements.
    let n = (1usize << 15) - 5;
    let m = crate::domain_size(n);
    let bytes = m * size_of::<Fr>();
    assert!(bytes >= crate::EvalAlloc::POOL_FROM);
    let reservation = Reservation {
        evaluation_bytes: bytes,
        evaluation_blocks: 6,
        domain_lg: m.trailing_zeros(),
        quotient_buffers: QuotientBuffers::Two,
        workers_per_device: 2,
    };
    gpu.reserve(&reservation).unwrap();
    let workspaces = || unpoisoned(&gpu.devices[0].quotient_workspaces).len();
    assert_eq!(gpu.evaluations.idle_blocks(bytes), 6);
    assert_eq!(workspaces(), 2);
    let held = gpu.device_memory_held();
    // Reserving again finds it all made.
    gpu.reserve(&reservation).unwrap();
    assert_eq!((gpu.evaluations.idle_blocks(bytes), workspaces()), (6, 2));
    assert_eq!(gpu.device_memory_held(), held);

    let mut rng = ChaCha8Rng::seed_from_u64(41);
    let v = |rng: &mut ChaCha8Rng| (0..n).map(|_| Fr::random(&mut *rng)).collect::<Vec<_>>();
    let (a, b, c) = (v(&mut rng), v(&mut rng), v(&mut rng));
    let pinned = gpu.evaluation_alloc();
    let (ea, eb, ec) = (ev(&pinned, &a), ev(&pinned, &b), ev(&pinned, &c));
    assert_eq!(
        gpu.evaluations.idle_blocks(bytes),
        3,
        "synthesis took reserved blocks"
    );
    let heap = EvalAlloc::heap();
    let want = CpuBackend::new()
        .quotient(ev(&heap, &a), ev(&heap, &b), ev(&heap, &c), THREE)
        .unwrap();
    let got = gpu.quotient(ea, eb, ec, QuotientBuffers::Two).unwrap();
    assert!(got == want);
    assert_eq!((gpu.evaluations.idle_blocks(bytes), workspaces()), (6, 2));
    assert_eq!(
        gpu.device_memory_held(),
        held,
        "no device memory beyond the reservation"
    );
}

#[test]
fn empty_and_mismatched_inputs() {
    let Some(gpu) = gpu() else { return };
    let exps = Arc::new(Vec::<Fr>::new());
    let bases = Bases::new(Arc::new(vec![G1Affine::generator()]), 0);
    assert_eq!(
        gpu.msm_g1(&bases, &Density::Full, &exps).unwrap(),
        G1Projective::identity()
    );
    let short = Arc::new(vec![Fr::ONE; 3]);
    assert!(gpu.msm_g1(&bases, &Density::Full, &short).is_err());
    assert!(
        gpu.quotient(
            ev(&EvalAlloc::heap(), &[Fr::ONE; 3]),
            ev(&EvalAlloc::heap(), &[Fr::ONE; 2]),
            ev(&EvalAlloc::heap(), &[Fr::ONE; 3]),
            THREE
        )
        .is_err()
    );
}

/// Scalars as boolean-heavy witnesses have them: mostly 0 and 1, a share `tail_per_mille`
/// of other values (random, small, -1).
fn boolean_heavy(rng: &mut ChaCha8Rng, n: usize, tail_per_mille: u32) -> Arc<Vec<Fr>> {
    use rand_core::RngCore;
    Arc::new(
        (0..n)
            .map(|_| {
                let r = rng.next_u32() % 1000;
                if r < tail_per_mille {
                    match r % 3 {
                        0 => Fr::random(&mut *rng),
                        1 => Fr::from(2 + u64::from(r)),
                        _ => -Fr::ONE,
                    }
                } else if r.is_multiple_of(2) {
                    Fr::ONE
                } else {
                    Fr::ZERO
                }
            })
            .collect(),
    )
}

fn stat(gpu: &CudaBackend, kind: &str) -> crate::KernelStat {
    gpu.kernel_stats()
        .into_iter()
        .find(|(k, _)| *k == kind)
        .unwrap_or_else(|| panic!("no kernel stat {kind}"))
        .1
}

fn without_split() -> Option<CudaBackend> {
    gpu().map(|_| {
        CudaBackend::with_options(crate::GpuOptions {
            split_msm: false,
            h_on_device: false,
            pinned_evaluations: false,
        })
        .unwrap()
    })
}

/// The split MSM (bitmap batch addition of the ones + Pippenger over the tail) gives the
/// CPU's answer for G1 and G2, at sizes that are and are not multiples of the bitmap's
/// 32-bit words and 1024-bit chunks, with and without a tail, full and sparse; and it is the
/// split path that ran (the statistics count its ones and tail exactly).
#[test]
fn split_msm_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    assert!(gpu.options().split_msm, "split MSM is on by default");
    let plain = without_split().unwrap();
    let cpu = CpuBackend::new();
    let mut rng = ChaCha8Rng::seed_from_u64(11);
    let mut expect_ones = 0u64;
    let mut expect_tail = 0u64;
    let mut expect_calls = 0u64;
    for (n, tail) in [
        (1usize << 10, 0),
        ((1 << 13) + 17, 30),
        (1 << 16, 100),
        ((1 << 16) - 1, 200),
        (1000, 1),
    ] {
        let pts = Arc::new(points::<G1Projective>(&mut rng, n + 3));
        let exps = boolean_heavy(&mut rng, n, tail);
        let bases = Bases::new(pts.clone(), 3);
        let want = cpu.msm_g1(&bases, &Density::Full, &exps).unwrap();
        let got = gpu.msm_g1(&bases, &Density::Full, &exps).unwrap();
        assert_eq!(
            got.to_affine(),
            want.to_affine(),
            "G1 split n={n} tail={tail}"
        );
        let got_plain = plain.msm_g1(&bases, &Density::Full, &exps).unwrap();
        assert_eq!(got_plain.to_affine(), want.to_affine(), "G1 plain n={n}");
        expect_ones += exps.iter().filter(|e| **e == Fr::ONE).count() as u64;
        expect_tail += exps
            .iter()
            .filter(|e| **e != Fr::ONE && !bool::from(e.is_zero()))
            .count() as u64;
        expect_calls += 1;
        eprintln!("G1 split n={n} tail {tail}/1000: GPU = CPU");
    }
    let ones = stat(&gpu, "msm_g1_split_ones");
    let tail = stat(&gpu, "msm_g1_split_tail");
    assert_eq!(
        ones.calls, expect_calls,
        "every boolean-heavy MSM was split"
    );
    assert_eq!(ones.elements, expect_ones);
    assert_eq!(tail.elements, expect_tail);
    assert_eq!(stat(&plain, "msm_g1_split_ones").calls, 0);

    // Sparse: the gathered exponents are split the same way.
    let n = 1 << 14;
    let pts = Arc::new(points::<G1Projective>(&mut rng, n));
    let exps = boolean_heavy(&mut rng, n, 50);
    let (d, used) = sparse(n);
    let bases = Bases::new(Arc::new(pts[..used].to_vec()), 0);
    let want = cpu
        .msm_g1(&bases, &Density::Sparse(d.clone()), &exps)
        .unwrap();
    let got = gpu.msm_g1(&bases, &Density::Sparse(d), &exps).unwrap();
    assert_eq!(got.to_affine(), want.to_affine(), "G1 sparse split");

    // G2, with a tail and without.
    for (n, tail) in [((1usize << 12) + 5, 0), (1 << 14, 120)] {
        let pts: Arc<Vec<G2Affine>> = Arc::new(points::<G2Projective>(&mut rng, n));
        let exps = boolean_heavy(&mut rng, n, tail);
        let bases = Bases::new(pts, 0);
        let want = cpu.msm_g2(&bases, &Density::Full, &exps).unwrap();
        let got = gpu.msm_g2(&bases, &Density::Full, &exps).unwrap();
        assert_eq!(
            got.to_affine(),
            want.to_affine(),
            "G2 split n={n} tail={tail}"
        );
        eprintln!("G2 split n={n} tail {tail}/1000: GPU = CPU");
    }
    assert_eq!(stat(&gpu, "msm_g2_split_ones").calls, 2);
}

/// Where a split would not pay (random scalars: no ones; all zero; a tail over a quarter;
/// all ones but one), the MSM still gives the CPU's answer, split or not as the rule says.
#[test]
fn split_msm_edge_cases_match_cpu() {
    let Some(gpu) = gpu() else { return };
    let cpu = CpuBackend::new();
    let mut rng = ChaCha8Rng::seed_from_u64(12);
    let n = (1 << 12) + 3;
    let pts = Arc::new(points::<G1Projective>(&mut rng, n));
    let bases = Bases::new(pts, 0);
    let cases: Vec<(&str, Vec<Fr>, bool)> = vec![
        (
            "random",
            (0..n).map(|_| Fr::random(&mut rng)).collect(),
            false,
        ),
        ("zero", vec![Fr::ZERO; n], false),
        ("ones", vec![Fr::ONE; n], true),
        (
            "ones but the last",
            (0..n)
                .map(|i| if i + 1 == n { Fr::from(7u64) } else { Fr::ONE })
                .collect(),
            true,
        ),
        ("tail 40%", boolean_heavy(&mut rng, n, 400).to_vec(), false),
    ];
    for (name, exps, splits) in cases {
        let before = stat(&gpu, "msm_g1_split_ones").calls;
        let exps = Arc::new(exps);
        let want = cpu.msm_g1(&bases, &Density::Full, &exps).unwrap();
        let got = gpu.msm_g1(&bases, &Density::Full, &exps).unwrap();
        assert_eq!(got.to_affine(), want.to_affine(), "{name}");
        let split = stat(&gpu, "msm_g1_split_ones").calls > before;
        assert_eq!(split, splits, "{name}: split {split}, expected {splits}");
    }
}

/// The H term with h kept on the device equals the CPU's quotient-then-MSM, and so does the
/// path that brings h back to the host.
#[test]
fn h_msm_matches_cpu() {
    let Some(gpu) = gpu() else { return };
    let plain = without_split().unwrap();
    let cpu = CpuBackend::new();
    let mut rng = ChaCha8Rng::seed_from_u64(13);
    for n in [(1usize << 12) - 7, 1 << 15] {
        let m = crate::domain_size(n);
        let a: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
        let b: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
        let c: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
        let bases = Bases::new(Arc::new(points::<G1Projective>(&mut rng, m - 1)), 0);
        let heap = EvalAlloc::heap();
        let want = cpu
            .h_msm(ev(&heap, &a), ev(&heap, &b), ev(&heap, &c), &bases, THREE)
            .unwrap();
        for buffers in [THREE, QuotientBuffers::Two, QuotientBuffers::One] {
            let pinned = gpu.evaluation_alloc();
            let got = gpu
                .h_msm(
                    ev(&pinned, &a),
                    ev(&pinned, &b),
                    ev(&pinned, &c),
                    &bases,
                    buffers,
                )
                .unwrap();
            assert_eq!(
                got.to_affine(),
                want.to_affine(),
                "h on device, n={n}, {buffers:?}"
            );
        }
        let got = plain
            .h_msm(ev(&heap, &a), ev(&heap, &b), ev(&heap, &c), &bases, THREE)
            .unwrap();
        assert_eq!(got.to_affine(), want.to_affine(), "h via the host, n={n}");
        eprintln!("H term n={n}: GPU = CPU");
    }
    // Too few h bases: refused before anything runs.
    let short = Bases::new(Arc::new(points::<G1Projective>(&mut rng, 10)), 0);
    let one = |n| ev(&EvalAlloc::heap(), &vec![Fr::ONE; n]);
    assert!(gpu.h_msm(one(64), one(64), one(64), &short, THREE).is_err());
}

/// An engine of 2^12 points (10-bit windows): from ~87k points on, a streamed MSM runs in
/// several slices (2^18 points: 4, 2^20: 16).
const SMALL_ENGINE: usize = 1 << 12;

fn gpu_with(memory: crate::GpuMemoryConfig) -> Option<CudaBackend> {
    gpu().map(|_| CudaBackend::with_memory(crate::GpuOptions::ALL, memory).unwrap())
}

fn small_engine(cap: Option<u64>) -> crate::GpuMemoryConfig {
    crate::GpuMemoryConfig {
        cap,
        stream_engine_points: SMALL_ENGINE,
    }
}

/// Streamed bases give what resident bases and the CPU (resident, and summed over the same
/// slices) give, for G1 and G2, full and sparse, in one slice and in several with a short
/// last one; and they are counted as streamed, page-locked once per vector.
#[test]
fn streamed_msm_matches_resident_and_cpu() {
    let Some(gpu) = gpu_with(small_engine(None)) else {
        return;
    };
    let cpu = CpuBackend::with_stream_engine_points(SMALL_ENGINE);
    let mut rng = ChaCha8Rng::seed_from_u64(31);
    let (mut g1_calls, mut g1_points) = (0, 0);
    for n in [5000usize, (1 << 17) + 1001, 1 << 18, (1 << 20) - 3] {
        let pts = Arc::new(points::<G1Projective>(&mut rng, n + 3));
        let exps = scalars(&mut rng, n);
        let slices = crate::stream_batches(n, SMALL_ENGINE).len();
        let resident = Bases::new(pts.clone(), 3);
        let streamed = Bases::streamed(pts.clone(), 3);
        let want = cpu.msm_g1(&resident, &Density::Full, &exps).unwrap();
        let cpu_streamed = cpu.msm_g1(&streamed, &Density::Full, &exps).unwrap();
        let got_resident = gpu.msm_g1(&resident, &Density::Full, &exps).unwrap();
        let got = gpu.msm_g1(&streamed, &Density::Full, &exps).unwrap();
        assert_eq!(cpu_streamed.to_affine(), want.to_affine(), "CPU G1 n={n}");
        assert_eq!(
            got_resident.to_affine(),
            want.to_affine(),
            "G1 resident n={n}"
        );
        assert_eq!(got.to_affine(), want.to_affine(), "G1 streamed n={n}");
        (g1_calls, g1_points) = (g1_calls + 1, g1_points + n as u64);
        eprintln!("G1 streamed n={n} in {slices} slices: GPU = CPU");
    }
    // Sparse: the used scalars against bases[skip..skip + used], in several slices.
    let n = 1 << 18;
    let exps = scalars(&mut rng, n);
    let (d, used) = sparse(n);
    assert!(crate::stream_batches(used, SMALL_ENGINE).len() > 1);
    let pts = Arc::new(points::<G1Projective>(&mut rng, used + 2));
    let streamed = Bases::streamed(pts.clone(), 2);
    let want = cpu
        .msm_g1(&Bases::new(pts, 2), &Density::Sparse(d.clone()), &exps)
        .unwrap();
    let got = gpu
        .msm_g1(&streamed, &Density::Sparse(d.clone()), &exps)
        .unwrap();
    assert_eq!(got.to_affine(), want.to_affine(), "G1 sparse streamed");
    (g1_calls, g1_points) = (g1_calls + 1, g1_points + used as u64);

    let (mut g2_calls, mut g2_points) = (0, 0);
    for n in [3000usize, (1 << 17) + 5] {
        let pts: Arc<Vec<G2Affine>> = Arc::new(points::<G2Projective>(&mut rng, n + 1));
        let exps = scalars(&mut rng, n);
        let want = cpu
            .msm_g2(&Bases::new(pts.clone(), 1), &Density::Full, &exps)
            .unwrap();
        let got = gpu
            .msm_g2(&Bases::streamed(pts.clone(), 1), &Density::Full, &exps)
            .unwrap();
        assert_eq!(got.to_affine(), want.to_affine(), "G2 streamed n={n}");
        (g2_calls, g2_points) = (g2_calls + 1, g2_points + n as u64);
        eprintln!("G2 streamed n={n}: GPU = CPU");
    }
    let pts: Arc<Vec<G2Affine>> = Arc::new(points::<G2Projective>(&mut rng, used));
    let want = cpu
        .msm_g2(
            &Bases::new(pts.clone(), 0),
            &Density::Sparse(d.clone()),
            &exps,
        )
        .unwrap();
    let got = gpu
        .msm_g2(&Bases::streamed(pts, 0), &Density::Sparse(d), &exps)
        .unwrap();
    assert_eq!(got.to_affine(), want.to_affine(), "G2 sparse streamed");
    (g2_calls, g2_points) = (g2_calls + 1, g2_points + used as u64);

    let s1 = stat(&gpu, "msm_g1_streamed");
    let s2 = stat(&gpu, "msm_g2_streamed");
    assert_eq!((s1.calls, s1.elements), (g1_calls, g1_points));
    assert_eq!((s2.calls, s2.elements), (g2_calls, g2_points));
    // One registration per streamed vector (5 G1, 3 G2); the resident ones uploaded.
    assert_eq!(stat(&gpu, "host_register").calls, 8);
    assert_eq!(stat(&gpu, "upload_bases").calls, 4);
    // Streaming engines held, no MSM temporaries left.
    let ledger = gpu.ledger()[0];
    let sms = gpu.gpu_devices()[0].sm_count;
    assert_eq!(
        ledger.stream_engine_bytes,
        crate::msm_engine_device_bytes(SMALL_ENGINE, 96, sms)
            + crate::msm_engine_device_bytes(SMALL_ENGINE, 192, sms)
    );
    assert_eq!(ledger.msm_temp_bytes, 0);
    assert_eq!(gpu.device_memory_held()[0], ledger.held());
}

/// The H term over streamed h bases, with h on the device (device scalars against host
/// points) and through the host, equals the CPU's.
#[test]
fn streamed_h_msm_matches_cpu() {
    let Some(gpu) = gpu_with(small_engine(None)) else {
        return;
    };
    let plain = CudaBackend::with_memory(crate::GpuOptions::NONE, small_engine(None)).unwrap();
    let cpu = CpuBackend::new();
    let mut rng = ChaCha8Rng::seed_from_u64(32);
    for n in [(1usize << 12) - 7, 1 << 17] {
        let m = crate::domain_size(n);
        let a: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
        let b: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
        let c: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
        let pts = Arc::new(points::<G1Projective>(&mut rng, m - 1));
        let heap = EvalAlloc::heap();
        let want = cpu
            .h_msm(
                ev(&heap, &a),
                ev(&heap, &b),
                ev(&heap, &c),
                &Bases::new(pts.clone(), 0),
                THREE,
            )
            .unwrap();
        let streamed = Bases::streamed(pts, 0);
        let pinned = gpu.evaluation_alloc();
        let got = gpu
            .h_msm(
                ev(&pinned, &a),
                ev(&pinned, &b),
                ev(&pinned, &c),
                &streamed,
                THREE,
            )
            .unwrap();
        assert_eq!(
            got.to_affine(),
            want.to_affine(),
            "streamed h on device, n={n}"
        );
        let got = plain
            .h_msm(
                ev(&heap, &a),
                ev(&heap, &b),
                ev(&heap, &c),
                &streamed,
                THREE,
            )
            .unwrap();
        assert_eq!(
            got.to_affine(),
            want.to_affine(),
            "streamed h via host, n={n}"
        );
        eprintln!(
            "streamed H n={n} in {} slices: GPU = CPU",
            crate::stream_batches(m - 1, SMALL_ENGINE).len()
        );
    }
    assert_eq!(stat(&gpu, "msm_g1_streamed").calls, 2);
    assert_eq!(stat(&gpu, "upload_bases").calls, 0);
}

/// One backend, some queries resident and some streamed (also one vector both ways): every
/// result is the CPU's, and only the resident ones take device memory for points.
#[test]
fn resident_and_streamed_queries_mix() {
    let Some(gpu) = gpu_with(small_engine(None)) else {
        return;
    };
    let cpu = CpuBackend::new();
    let mut rng = ChaCha8Rng::seed_from_u64(33);
    let n = (1 << 18) + 77;
    let a = Arc::new(points::<G1Projective>(&mut rng, n));
    let l = Arc::new(points::<G1Projective>(&mut rng, n));
    let b2: Arc<Vec<G2Affine>> = Arc::new(points::<G2Projective>(&mut rng, 1 << 16));
    for round in 0..2 {
        let exps = scalars(&mut rng, n);
        let queries = [
            Bases::new(a.clone(), 0),
            Bases::streamed(l.clone(), 0),
            Bases::streamed(a.clone(), 0),
        ];
        for (i, bases) in queries.iter().enumerate() {
            let want = cpu.msm_g1(&Bases::new(bases.points.clone(), 0), &Density::Full, &exps);
            let got = gpu.msm_g1(bases, &Density::Full, &exps).unwrap();
            assert_eq!(
                got.to_affine(),
                want.unwrap().to_affine(),
                "round {round} query {i}"
            );
        }
        let exps2 = scalars(&mut rng, 1 << 16);
        let want = cpu.msm_g2(&Bases::new(b2.clone(), 0), &Density::Full, &exps2);
        let got = gpu.msm_g2(&Bases::new(b2.clone(), 0), &Density::Full, &exps2);
        assert_eq!(
            got.unwrap().to_affine(),
            want.unwrap().to_affine(),
            "round {round} G2"
        );
    }
    assert_eq!(stat(&gpu, "upload_bases").calls, 2, "a and b2, once each");
    assert_eq!(stat(&gpu, "msm_g1_streamed").calls, 4);
    assert_eq!(stat(&gpu, "host_register").calls, 2, "l and a, once each");
    assert_eq!(
        gpu.resident_bytes()[0],
        (n * 96 + (1 << 16) * 192) as u64,
        "streamed points take no resident memory"
    );
}

/// Under a cap (PROOFPIPE_GPU_MEMORY), devices report the cap, a resident upload that would
/// pass it is refused with the cap error (nothing left held), the same query streams within
/// it, and an upload that fits only without idle bases evicts them.
#[test]
fn memory_cap_refuses_over_cap_uploads() {
    let Some(probe) = gpu() else { return };
    let sms = probe.gpu_devices()[0].sm_count;
    drop(probe);
    let mut rng = ChaCha8Rng::seed_from_u64(34);
    let n = 1 << 18;
    let cpu = CpuBackend::new();
    // Room for the context, the G1 streaming engine and one streamed MSM's temporaries,
    // not for 2^18 resident points (24 MiB).
    let streamed_bytes = crate::msm_engine_device_bytes(SMALL_ENGINE, 96, sms)
        + crate::msm_temp_device_bytes(n, SMALL_ENGINE, 96, true, false);
    let cap = crate::GPU_CONTEXT_BYTES + streamed_bytes + (256 << 10);
    assert!(cap < crate::GPU_CONTEXT_BYTES + (n as u64) * 96);
    let gpu = gpu_with(small_engine(Some(cap))).unwrap();
    assert!(
        gpu.gpu_devices()
            .iter()
            .all(|d| d.total_bytes == cap && d.free_bytes <= cap)
    );
    let pts = Arc::new(points::<G1Projective>(&mut rng, n));
    let exps = scalars(&mut rng, n);
    let err = gpu
        .msm_g1(&Bases::new(pts.clone(), 0), &Density::Full, &exps)
        .unwrap_err();
    assert!(
        matches!(err, crate::KernelError::GpuMemoryCap { cap: c, .. } if c == cap),
        "{err}"
    );
    let text = err.to_string();
    assert!(
        text.contains("PROOFPIPE_GPU_MEMORY") && text.contains("stream"),
        "{text}"
    );
    assert_eq!(gpu.device_memory_held()[0], crate::GPU_CONTEXT_BYTES);
    assert_eq!(stat(&gpu, "upload_bases").calls, 0);
    let want = cpu
        .msm_g1(&Bases::new(pts.clone(), 0), &Density::Full, &exps)
        .unwrap();
    let got = gpu
        .msm_g1(&Bases::streamed(pts, 0), &Density::Full, &exps)
        .unwrap();
    assert_eq!(got.to_affine(), want.to_affine(), "streamed under the cap");
    assert!(gpu.device_memory_held()[0] <= cap);

    // Room for one resident set of 2^14 points and its MSM, not two: the idle one goes.
    let m = 1 << 14;
    let one = m as u64 * 96
        + crate::msm_engine_device_bytes(m, 96, sms)
        + super::split_msm_temp_bytes(m, 96, false);
    let gpu = gpu_with(small_engine(Some(
        crate::GPU_CONTEXT_BYTES + one + (1 << 20),
    )))
    .unwrap();
    let first = Arc::new(points::<G1Projective>(&mut rng, m));
    let second = Arc::new(points::<G1Projective>(&mut rng, m));
    let exps = scalars(&mut rng, m);
    for (i, pts) in [&first, &second, &first].into_iter().enumerate() {
        let bases = Bases::new(pts.clone(), 0);
        let want = cpu.msm_g1(&bases, &Density::Full, &exps).unwrap();
        let got = gpu.msm_g1(&bases, &Density::Full, &exps).unwrap();
        assert_eq!(got.to_affine(), want.to_affine(), "eviction round {i}");
        assert_eq!(gpu.resident_bytes()[0], m as u64 * 96, "one set resident");
    }
    assert_eq!(stat(&gpu, "upload_bases").calls, 3);
}
