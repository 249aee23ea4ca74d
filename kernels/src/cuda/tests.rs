//! GPU against CPU, bit for bit, at 2^10 to 2^16. They need a GPU: without one they say so
//! and pass, unless PROOFPIPE_REQUIRE_GPU=1 (set it where a GPU must be there).

use std::sync::Arc;

use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rand_chacha::ChaCha8Rng;
use rand_core::SeedableRng;

use super::CudaBackend;
use crate::{Bases, CpuBackend, Density, DensityTracker, ProvingBackend};

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
        let want = cpu.quotient(a.clone(), b.clone(), c.clone()).unwrap();
        let got = gpu.quotient(a, b, c).unwrap();
        assert_eq!(got.len(), want.len(), "n={n}");
        assert!(got == want, "quotient differs at n={n}");
        eprintln!("quotient n={n}: GPU = CPU");
    }
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
        gpu.quotient(vec![Fr::ONE; 3], vec![Fr::ONE; 2], vec![Fr::ONE; 3])
            .is_err()
    );
}
