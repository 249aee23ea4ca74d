//! The CPU backend: bellperson's FFT, and blst's multi-threaded Pippenger for the MSMs
//! (tens of times faster than ec-gpu-gen's CPU multiexp, which bellperson uses).

use std::sync::Arc;

use bellperson::domain::EvaluationDomain;
use blst::{MultiPoint, blst_p1_affine, blst_p2_affine};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ec_gpu_gen::threadpool::Worker;
use ff::PrimeField;
use group::Group;

use crate::backend::{Bases, Density, Placement, ProvingBackend, QuotientBuffers};
use crate::error::KernelError;
use crate::gather::used_exponents_map;
use crate::host_memory::{Evaluations, into_std_vec};
use crate::stream::{DEFAULT_STREAM_ENGINE_POINTS, stream_batches, stream_engine_points_from_env};

/// Runs every kernel on the CPU thread pool shared by the process.
pub struct CpuBackend {
    worker: Worker,
    /// The streaming engine size whose slices a streamed MSM is summed over.
    stream_engine_points: usize,
}

impl Default for CpuBackend {
    fn default() -> Self {
        Self::new()
    }
}

impl CpuBackend {
    /// With the streaming engine size of `PROOFPIPE_CUDA_STREAM_ENGINE_POINTS` (the default
    /// where unset or invalid).
    pub fn new() -> Self {
        let points = stream_engine_points_from_env().unwrap_or_else(|e| {
            tracing::warn!(error = %e, "using the default streaming engine size");
            DEFAULT_STREAM_ENGINE_POINTS
        });
        Self::with_stream_engine_points(points)
    }

    /// Streamed MSMs summed over the slices of an engine made for `points` points.
    pub fn with_stream_engine_points(points: usize) -> Self {
        Self {
            worker: Worker::new(),
            stream_engine_points: points,
        }
    }

    /// The slices an MSM of `n` used points is summed over: all at once for resident bases;
    /// the GPU's slices for streamed ones, so the CPU runs the schedule the GPU would.
    fn slices(&self, placement: Placement, n: usize) -> Vec<std::ops::Range<usize>> {
        match placement {
            Placement::Resident => std::iter::once(0..n).collect(),
            Placement::Streamed => stream_batches(n, self.stream_engine_points),
        }
    }

    /// The used exponents and the bases they pair with, as blst expects them: the exponents
    /// in canonical little-endian bytes (blst's `mult` takes no Montgomery form), converted
    /// in the same parallel pass that gathers them (`used_exponents_map`).
    fn gather<'a, G>(
        bases: &'a Bases<G>,
        density: &Density,
        exponents: &[Fr],
    ) -> Result<(&'a [G], Vec<[u8; 32]>), KernelError> {
        let exps = used_exponents_map(bases, density, exponents, Fr::to_repr)?;
        Ok((&bases.points[bases.skip..bases.skip + exps.len()], exps))
    }
}

/// Scalars of BLS12-381's Fr are 255 bits wide.
const SCALAR_BITS: usize = 255;

impl ProvingBackend for CpuBackend {
    fn name(&self) -> &'static str {
        "cpu"
    }

    fn quotient(
        &self,
        a: Evaluations,
        b: Evaluations,
        c: Evaluations,
        _buffers: QuotientBuffers,
    ) -> Result<Vec<Fr>, KernelError> {
        if a.len() != b.len() || b.len() != c.len() {
            return Err(KernelError::MismatchedEvaluations {
                a: a.len(),
                b: b.len(),
                c: c.len(),
            });
        }
        let n = a.len();
        // bellperson's domain takes a std Vec: free for heap evaluations.
        let domain = |v| {
            EvaluationDomain::from_coeffs(into_std_vec(v))
                .map_err(|_| KernelError::DomainTooLarge(n))
        };
        let (mut a, mut b, mut c) = (domain(a)?, domain(b)?, domain(c)?);
        let mut no_gpu = None;
        let worker = &self.worker;
        // The GPU-less FFT never fails; the Result only exists for bellperson's GPU path.
        EvaluationDomain::ifft_many(&mut [&mut a, &mut b, &mut c], worker, &mut no_gpu)
            .expect("CPU FFT is infallible");
        EvaluationDomain::coset_fft_many(&mut [&mut a, &mut b, &mut c], worker, &mut no_gpu)
            .expect("CPU FFT is infallible");
        a.mul_assign(worker, &b);
        drop(b);
        a.sub_assign(worker, &c);
        drop(c);
        a.divide_by_z_on_coset(worker);
        a.icoset_fft(worker, &mut no_gpu)
            .expect("CPU FFT is infallible");
        let mut coeffs = a.into_coeffs();
        // deg(h) = m - 2: the top coefficient is zero and the h query has m - 1 points.
        coeffs.pop();
        Ok(coeffs)
    }

    fn msm_g1(
        &self,
        bases: &Bases<G1Affine>,
        density: &Density,
        exponents: &Arc<Vec<Fr>>,
    ) -> Result<G1Projective, KernelError> {
        let (points, exps) = Self::gather(bases, density, exponents)?;
        if exps.is_empty() {
            return Ok(G1Projective::identity());
        }
        // SAFETY: blstrs' G1Affine is `#[repr(transparent)]` over blst_p1_affine.
        let points: &[blst_p1_affine] =
            unsafe { std::slice::from_raw_parts(points.as_ptr().cast(), points.len()) };
        let mut sum = G1Projective::identity();
        for r in self.slices(bases.placement, exps.len()) {
            let mut part = G1Projective::identity();
            *part.as_mut() = points[r.clone()].mult(exps[r].as_flattened(), SCALAR_BITS);
            sum += part;
        }
        Ok(sum)
    }

    fn msm_g2(
        &self,
        bases: &Bases<G2Affine>,
        density: &Density,
        exponents: &Arc<Vec<Fr>>,
    ) -> Result<G2Projective, KernelError> {
        let (points, exps) = Self::gather(bases, density, exponents)?;
        if exps.is_empty() {
            return Ok(G2Projective::identity());
        }
        // SAFETY: blstrs' G2Affine is `#[repr(transparent)]` over blst_p2_affine.
        let points: &[blst_p2_affine] =
            unsafe { std::slice::from_raw_parts(points.as_ptr().cast(), points.len()) };
        let mut sum = G2Projective::identity();
        for r in self.slices(bases.placement, exps.len()) {
            let mut part = G2Projective::identity();
            *part.as_mut() = points[r.clone()].mult(exps[r].as_flattened(), SCALAR_BITS);
            sum += part;
        }
        Ok(sum)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DensityTracker, heap_evaluations};
    use ff::Field;
    use group::Curve;
    use group::prime::PrimeCurveAffine;
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    fn naive_msm(bases: &[G1Affine], scalars: &[Fr]) -> G1Projective {
        bases
            .iter()
            .zip(scalars)
            .map(|(b, s)| b.to_curve() * s)
            .sum()
    }

    #[test]
    fn msm_matches_naive_sum_full_and_sparse() {
        let mut rng = ChaCha8Rng::seed_from_u64(7);
        let n = 100;
        let points: Vec<G1Affine> = (0..n + 3)
            .map(|_| G1Projective::random(&mut rng).to_affine())
            .collect();
        let scalars: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
        let exps = Arc::new(scalars.clone());
        let backend = CpuBackend::new();
        let bases = Bases::new(Arc::new(points.clone()), 3);
        let got = backend.msm_g1(&bases, &Density::Full, &exps).unwrap();
        assert_eq!(got, naive_msm(&points[3..], &scalars));

        // Sparse: only variables that occur get a base; here every even one.
        let mut tracker = DensityTracker::new();
        for i in 0..n {
            tracker.add_element();
            if i % 2 == 0 {
                tracker.inc(i);
            }
        }
        let dense_points: Vec<G1Affine> = points[..n / 2].to_vec();
        let even_scalars: Vec<Fr> = scalars.iter().step_by(2).copied().collect();
        let got = backend
            .msm_g1(
                &Bases::new(Arc::new(dense_points.clone()), 0),
                &Density::Sparse(Arc::new(tracker)),
                &exps,
            )
            .unwrap();
        assert_eq!(got, naive_msm(&dense_points, &even_scalars));
    }

    /// Cheap random points: multiples of a random point by consecutive steps.
    fn stepped_points<G: Group + Curve<AffineRepr: Clone>>(
        rng: &mut ChaCha8Rng,
        n: usize,
    ) -> Vec<G::AffineRepr> {
        let step = G::random(&mut *rng);
        let mut p = G::random(&mut *rng);
        let proj: Vec<G> = (0..n)
            .map(|_| {
                p += step;
                p
            })
            .collect();
        let mut out = vec![G::identity().to_affine(); n];
        G::batch_normalize(&proj, &mut out);
        out
    }

    fn random_scalars(rng: &mut ChaCha8Rng, n: usize) -> Arc<Vec<Fr>> {
        Arc::new(
            (0..n)
                .map(|i| match i % 5 {
                    0 => Fr::ZERO,
                    1 => Fr::ONE,
                    _ => Fr::random(&mut *rng),
                })
                .collect(),
        )
    }

    /// Two of every three variables used: `n` variables, the count used.
    fn two_thirds(n: usize) -> (Density, usize) {
        let mut t = DensityTracker::new();
        let mut used = 0;
        for i in 0..n {
            t.add_element();
            if i % 3 != 1 {
                t.inc(i);
                used += 1;
            }
        }
        (Density::Sparse(Arc::new(t)), used)
    }

    /// An engine of 2^10 points (10-bit windows): from ~87k points on, a streamed MSM runs in
    /// several slices.
    const SMALL_ENGINE: usize = 1 << 10;

    #[test]
    fn streamed_g1_msm_equals_resident() {
        let backend = CpuBackend::with_stream_engine_points(SMALL_ENGINE);
        let mut rng = ChaCha8Rng::seed_from_u64(21);
        // Four slices, the last one short; one slice; sparse over two slices.
        let n = 200_003;
        let points = Arc::new(stepped_points::<G1Projective>(&mut rng, n + 3));
        let exps = random_scalars(&mut rng, n);
        assert_eq!(stream_batches(n, SMALL_ENGINE).len(), 4);
        assert_ne!(n % stream_batches(n, SMALL_ENGINE)[0].len(), 0);
        let (sparse, used) = two_thirds(150_000);
        assert!(stream_batches(used, SMALL_ENGINE).len() > 1);
        assert_eq!(stream_batches(1000, SMALL_ENGINE).len(), 1);
        let cases: [(&str, usize, Density, Arc<Vec<Fr>>); 3] = [
            ("full", 3, Density::Full, exps.clone()),
            ("small", 0, Density::Full, Arc::new(exps[..1000].to_vec())),
            ("sparse", 1, sparse, Arc::new(exps[..150_000].to_vec())),
        ];
        for (name, skip, density, exps) in cases {
            let resident = Bases::new(points.clone(), skip);
            let streamed = Bases::streamed(points.clone(), skip);
            let want = backend.msm_g1(&resident, &density, &exps).unwrap();
            let got = backend.msm_g1(&streamed, &density, &exps).unwrap();
            assert_eq!(
                got.to_affine().to_uncompressed(),
                want.to_affine().to_uncompressed(),
                "G1 {name}"
            );
        }
    }

    #[test]
    fn streamed_g2_msm_equals_resident() {
        let backend = CpuBackend::with_stream_engine_points(SMALL_ENGINE);
        let mut rng = ChaCha8Rng::seed_from_u64(22);
        let n = 132_000;
        let points = Arc::new(stepped_points::<G2Projective>(&mut rng, n + 1));
        let exps = random_scalars(&mut rng, n);
        assert_eq!(stream_batches(n, SMALL_ENGINE).len(), 2);
        let (sparse, used) = two_thirds(n);
        assert_eq!(stream_batches(used, SMALL_ENGINE).len(), 2);
        let cases: [(&str, usize, Density, Arc<Vec<Fr>>); 3] = [
            ("full", 1, Density::Full, exps.clone()),
            ("small", 0, Density::Full, Arc::new(exps[..500].to_vec())),
            ("sparse", 0, sparse, exps.clone()),
        ];
        for (name, skip, density, exps) in cases {
            let resident = Bases::new(points.clone(), skip);
            let streamed = Bases::streamed(points.clone(), skip);
            let want = backend.msm_g2(&resident, &density, &exps).unwrap();
            let got = backend.msm_g2(&streamed, &density, &exps).unwrap();
            assert_eq!(
                got.to_affine().to_uncompressed(),
                want.to_affine().to_uncompressed(),
                "G2 {name}"
            );
        }
    }

    #[test]
    fn msm_rejects_short_bases() {
        let backend = CpuBackend::new();
        let exps = Arc::new(vec![Fr::ONE; 4]);
        let bases = Bases::new(Arc::new(vec![G1Affine::generator(); 4]), 1);
        let err = backend.msm_g1(&bases, &Density::Full, &exps).unwrap_err();
        assert!(matches!(err, KernelError::BasesTooShort { .. }), "{err}");
    }

    #[test]
    fn quotient_of_satisfied_system_is_exact() {
        // a*b = c at every point: the quotient exists and has m - 1 coefficients.
        let mut rng = ChaCha8Rng::seed_from_u64(9);
        let a: Vec<Fr> = (0..5).map(|_| Fr::random(&mut rng)).collect();
        let b: Vec<Fr> = (0..5).map(|_| Fr::random(&mut rng)).collect();
        let c: Vec<Fr> = a.iter().zip(&b).map(|(x, y)| x * y).collect();
        let h = CpuBackend::new()
            .quotient(
                heap_evaluations(a),
                heap_evaluations(b),
                heap_evaluations(c),
                QuotientBuffers::Three,
            )
            .unwrap();
        assert_eq!(h.len(), 8 - 1);
    }

    #[test]
    fn quotient_rejects_mismatched_lengths() {
        let ev = |n| heap_evaluations(vec![Fr::ONE; n]);
        let err = CpuBackend::new().quotient(ev(3), ev(2), ev(3), QuotientBuffers::Three);
        assert!(matches!(
            err,
            Err(KernelError::MismatchedEvaluations { .. })
        ));
    }
}
