//! Timing-only parameters: the exact shape of a circuit's proving key, filled with points
//! that are cheap to make, so large sizes can be benchmarked without a trusted setup.
//!
//! A real setup at 2^24 constraints takes ~20 minutes on 16 cores (one exponentiation per
//! point); these take seconds. Every query has exactly the point count the circuit's
//! densities need (read from one synthesized partition), so the FFTs and MSMs do the same
//! work as with real parameters. The points are multiples of a fixed point, not evaluations at
//! a secret tau: **proofs made with them do not verify**. The pipeline skips verification for
//! them and every report labels them; they are never written to the parameter cache.

use std::ops::AddAssign;
use std::sync::Arc;
use std::time::Instant;

use bellperson::groth16::{Parameters, VerifyingKey};
use blstrs::{G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::Field;
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rayon::prelude::*;

use super::{CircuitParams, ParamsKind, ProvingKey};
use crate::circuits::{CircuitKind, CircuitShape, QueryCounts, count_r1cs};
use crate::error::ProverError;

/// Counts partition 0's R1CS and reads the query counts from its densities (the same densities
/// every partition has: the circuits' structure does not depend on the witness).
pub fn query_counts(circuit: CircuitKind, constraints: usize) -> Result<QueryCounts, ProverError> {
    let counts =
        count_r1cs(circuit.partition(constraints, 0, 0)?).map_err(|e| ProverError::Synthesis {
            partition: 0,
            message: e.to_string(),
        })?;
    Ok(counts.query_counts())
}

/// `n` distinct affine points `k*base, (k+1)*base, ...`: a running sum per chunk (mixed
/// additions of the affine base), in parallel, normalised in batches: one field inversion per
/// chunk (Montgomery's trick over the Jacobian Z coordinates, `coords` and `affine` giving
/// access to them). blstrs's own `batch_normalize` inverts every point, which made these points
/// ~6 us each (~3 min of 16 cores for a 2^27 Filecoin partition's parameters); this is ~1 us.
fn multiples<G, F>(
    base: G,
    first: u64,
    n: usize,
    coords: fn(&G) -> (F, F, F),
    affine: fn(F, F) -> G::AffineRepr,
) -> Vec<G::AffineRepr>
where
    G: Curve + Group<Scalar = Fr> + for<'a> AddAssign<&'a G::AffineRepr> + Send + Sync,
    G::AffineRepr: Send + Sync + Copy + Default,
    F: Field,
{
    const CHUNK: usize = 1 << 14;
    let step = base.to_affine();
    let mut out = vec![G::AffineRepr::default(); n];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(chunk, dst)| {
            let mut acc = base * Fr::from(first + (chunk * CHUNK) as u64);
            let mut points = Vec::with_capacity(dst.len());
            // prefix[i]: the product of the Z coordinates before point i.
            let mut prefix = Vec::with_capacity(dst.len());
            let mut product = F::ONE;
            for _ in 0..dst.len() {
                let (x, y, z) = coords(&acc);
                points.push((x, y, z));
                prefix.push(product);
                product *= z;
                acc += &step;
            }
            // No point is the identity (multiples below the group order), so no Z is zero.
            let mut inverse = product
                .invert()
                .expect("a product of nonzero Z coordinates");
            for ((x, y, z), (before, dst)) in points
                .into_iter()
                .zip(prefix.into_iter().zip(dst.iter_mut()))
                .rev()
            {
                let z_inv = inverse * before;
                inverse *= z;
                let z_inv2 = z_inv.square();
                *dst = affine(x * z_inv2, y * z_inv2 * z_inv);
            }
        });
    out
}

fn g1_multiples(first: u64, n: usize) -> Vec<G1Affine> {
    multiples(
        G1Projective::generator(),
        first,
        n,
        |p| (p.x(), p.y(), p.z()),
        |x, y| G1Affine::from_raw_unchecked(x, y, false),
    )
}

fn g2_multiples(first: u64, n: usize) -> Vec<G2Affine> {
    multiples(
        G2Projective::generator(),
        first,
        n,
        |p| (p.x(), p.y(), p.z()),
        |x, y| G2Affine::from_raw_unchecked(x, y, false),
    )
}

/// Parameters of the given shape with cheap points. Deterministic; no secret exists, and
/// no proof made with them verifies.
pub fn parameters(counts: QueryCounts) -> Parameters<blstrs::Bls12> {
    let g1 = G1Projective::generator();
    let g2 = G2Projective::generator();
    // Distinct starting multiples per query, so no two queries share points.
    let g1_at = |k: u64| (g1 * Fr::from(k)).to_affine();
    let g2_at = |k: u64| (g2 * Fr::from(k)).to_affine();
    let vk: VerifyingKey<blstrs::Bls12> = VerifyingKey {
        alpha_g1: g1_at(2),
        beta_g1: g1_at(3),
        beta_g2: g2_at(5),
        gamma_g2: g2_at(7),
        delta_g1: g1_at(11),
        delta_g2: g2_at(11),
        ic: g1_multiples(13, counts.inputs),
    };
    debug_assert!(!bool::from(vk.delta_g1.is_identity()));
    const STRIDE: u64 = 1 << 40;
    Parameters {
        vk,
        h: Arc::new(g1_multiples(STRIDE, counts.h)),
        l: Arc::new(g1_multiples(2 * STRIDE, counts.l)),
        a: Arc::new(g1_multiples(3 * STRIDE, counts.a)),
        b_g1: Arc::new(g1_multiples(4 * STRIDE, counts.b)),
        b_g2: Arc::new(g2_multiples(5 * STRIDE, counts.b)),
    }
}

impl ProvingKey {
    /// A timing-only proving key of `shape` with `counts` points per query, for a circuit
    /// that is not one of proofpipe's own (a Filecoin partition's shape, from its committed
    /// counts). See the module docs: proofs made with it do not verify.
    pub fn timing_only(what: &str, shape: CircuitShape, counts: QueryCounts) -> Self {
        let started = Instant::now();
        let params = parameters(counts);
        tracing::warn!(
            what,
            seconds = started.elapsed().as_secs_f64(),
            ?counts,
            "TIMING-ONLY parameters made (no trusted setup): proofs will not verify; for benchmarks only"
        );
        Self::new(shape, params, ParamsKind::TimingOnly)
    }
}

impl CircuitParams {
    /// Timing-only parameters for `(circuit, constraints)`, made in memory (see the module
    /// docs: proofs made with them do not verify, and reports say so).
    pub fn timing_only(circuit: CircuitKind, constraints: usize) -> Result<Self, ProverError> {
        let started = Instant::now();
        let counts = query_counts(circuit, constraints)?;
        let params = parameters(counts);
        tracing::warn!(
            %circuit,
            constraints,
            seconds = started.elapsed().as_secs_f64(),
            ?counts,
            "TIMING-ONLY parameters made (no trusted setup): proofs will not verify; for benchmarks only"
        );
        Self::new(circuit, constraints, params, ParamsKind::TimingOnly)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::params::ParamsStore;

    /// The shape is exact: identical counts to a real setup of the same circuit, so the
    /// prover does the same work with either.
    #[test]
    fn counts_match_a_real_setup() {
        // The smallest sizes each circuit allows, so the real setup stays quick.
        for (circuit, constraints) in [
            (CircuitKind::MulChain, 1 << 10),
            (CircuitKind::MerkleSha256, 1 << 15),
        ] {
            let dir = tempfile::tempdir().unwrap();
            let (real, _) = ParamsStore::new(dir.path())
                .get(circuit, constraints)
                .unwrap();
            let counts = query_counts(circuit, constraints).unwrap();
            assert_eq!(counts, QueryCounts::of(&real.params), "{circuit}");
            assert_eq!(QueryCounts::of(&parameters(counts)), counts, "{circuit}");
            assert_eq!(counts.params_heap_bytes(), real.heap_bytes(), "{circuit}");
        }
    }

    #[test]
    fn points_are_distinct_valid_multiples() {
        let g = G1Projective::generator();
        let n = (1 << 14) + 5;
        let pts = g1_multiples(1, n);
        assert_eq!(pts[0], g.to_affine());
        assert_eq!(pts[1], (g * Fr::from(2)).to_affine());
        assert_eq!(pts[(1 << 14) - 1], (g * Fr::from(1u64 << 14)).to_affine());
        assert_eq!(pts[n - 1], (g * Fr::from(n as u64)).to_affine());
        assert!(pts.iter().all(|p| bool::from(p.is_on_curve())));
        let unique: std::collections::HashSet<_> = pts.iter().map(|p| p.to_compressed()).collect();
        assert_eq!(unique.len(), pts.len());

        let h = G2Projective::generator();
        let pts = g2_multiples(7, 40);
        for (k, p) in pts.iter().enumerate() {
            assert_eq!(*p, (h * Fr::from(7 + k as u64)).to_affine(), "{k}");
        }
    }
}
