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
use group::prime::PrimeCurveAffine;
use group::{Curve, Group};
use rayon::prelude::*;

use super::{CircuitParams, ParamsKind, ProvingKey};
use crate::circuits::{CircuitKind, CircuitShape};
use crate::error::ProverError;
use crate::groth16;

/// Point counts of each proving-key query: what the prover reads for one circuit shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct QueryCounts {
    /// Public inputs, the constant ONE included (the verifying key's IC).
    pub inputs: usize,
    /// m - 1 for an evaluation domain of size m.
    pub h: usize,
    pub l: usize,
    pub a: usize,
    /// Both B queries (G1 and G2).
    pub b: usize,
}

impl QueryCounts {
    /// The counts of `params`, to compare with what a circuit needs.
    pub fn of(params: &Parameters<blstrs::Bls12>) -> Self {
        Self {
            inputs: params.vk.ic.len(),
            h: params.h.len(),
            l: params.l.len(),
            a: params.a.len(),
            b: params.b_g1.len(),
        }
    }

    /// Heap bytes of a proving key with these counts, as [`ProvingKey::heap_bytes`] reports
    /// them: exact, before any point is made.
    pub fn params_heap_bytes(&self) -> u64 {
        let g1 = self.h + self.l + self.a + self.b;
        (g1 * size_of::<G1Affine>() + self.b * size_of::<G2Affine>()) as u64
    }
}

/// Synthesizes partition 0 and reads the query counts from its densities (the same
/// densities every partition has: the circuits' structure does not depend on the witness).
pub fn query_counts(circuit: CircuitKind, constraints: usize) -> Result<QueryCounts, ProverError> {
    let shape = circuit.shape(constraints)?;
    let s = groth16::synthesize(circuit.partition(constraints, 0, 0)?, shape).map_err(|e| {
        ProverError::Synthesis {
            partition: 0,
            message: e.to_string(),
        }
    })?;
    Ok(QueryCounts {
        inputs: s.inputs.len(),
        h: proofpipe_kernels::domain_size(s.a.len()) - 1,
        l: s.aux.len(),
        a: s.inputs.len() + s.a_aux_density.get_total_density(),
        b: s.b_input_density.get_total_density() + s.b_aux_density.get_total_density(),
    })
}

/// `n` distinct affine points `k*base, (k+1)*base, ...`: a running sum per chunk, in parallel,
/// normalised in batches (one inversion per chunk).
fn multiples<G>(base: G, first: u64, n: usize) -> Vec<G::AffineRepr>
where
    G: Curve + Group<Scalar = Fr> + AddAssign<G> + Send + Sync,
    G::AffineRepr: Send + Copy + Default,
{
    const CHUNK: usize = 1 << 14;
    let mut out = vec![G::AffineRepr::default(); n];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(chunk, dst)| {
            let mut acc = base * Fr::from(first + (chunk * CHUNK) as u64);
            let mut projective = Vec::with_capacity(dst.len());
            for _ in 0..dst.len() {
                projective.push(acc);
                acc += base;
            }
            G::batch_normalize(&projective, dst);
        });
    out
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
        ic: multiples(g1, 13, counts.inputs),
    };
    debug_assert!(!bool::from(vk.delta_g1.is_identity()));
    const STRIDE: u64 = 1 << 40;
    Parameters {
        vk,
        h: Arc::new(multiples(g1, STRIDE, counts.h)),
        l: Arc::new(multiples(g1, 2 * STRIDE, counts.l)),
        a: Arc::new(multiples(g1, 3 * STRIDE, counts.a)),
        b_g1: Arc::new(multiples(g1, 4 * STRIDE, counts.b)),
        b_g2: Arc::new(multiples::<G2Projective>(g2, 5 * STRIDE, counts.b)),
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
        let pts = multiples(g, 1, (1 << 14) + 5);
        assert_eq!(pts[0], g.to_affine());
        assert_eq!(
            pts[(1 << 14) + 4],
            (g * Fr::from((1u64 << 14) + 5)).to_affine()
        );
        assert!(pts.iter().all(|p| bool::from(p.is_on_curve())));
        let unique: std::collections::HashSet<_> = pts.iter().map(|p| p.to_compressed()).collect();
        assert_eq!(unique.len(), pts.len());
    }
}
