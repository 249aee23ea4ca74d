//! Groth16 parameters from a random setup, exactly as bellperson's `generate_random_parameters`
//! makes them (the same toxic waste drawn from the rng in the same order, the same points out,
//! held to it bit for bit by a test) but several times faster: every point is the fixed base
//! times a scalar, and bellperson computes each with wNAF (~255 doublings and a few additions);
//! here each is at most 32 mixed additions from a table of the base's multiples, one row per
//! byte of the scalar.
//!
//! Random-setup parameters are for tests and benchmarks only: anyone who knows the rng's seed
//! can forge proofs. Their generation was the longest step of CI (the 2 KiB PoRep and SnapDeals
//! circuits, ~2M and ~1M constraints, took ~25 and ~10 core-minutes).

use std::sync::Arc;

use bellperson::groth16::{Parameters, VerifyingKey};
use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::{Bls12, G1Affine, G1Projective, G2Affine, G2Projective, Scalar as Fr};
use ff::{BatchInvert, Field, PrimeField};
use group::prime::{PrimeCurve, PrimeCurveAffine};
use group::{Curve, Group};
use rand_core::RngCore;
use rayon::prelude::*;

/// Points per parallel work item: big enough that batch normalisation amortises its inversion.
const CHUNK: usize = 4096;

/// What bellperson's `generate_random_parameters` returns for `circuit` and `rng`, computed
/// faster. The rng is drawn from as bellperson draws from it.
pub fn random_parameters<C: Circuit<Fr>, R: RngCore>(
    circuit: C,
    rng: &mut R,
) -> Result<Parameters<Bls12>, SynthesisError> {
    let g1 = G1Projective::random(&mut *rng);
    let g2 = G2Projective::random(&mut *rng);
    let alpha = Fr::random(&mut *rng);
    let beta = Fr::random(&mut *rng);
    let gamma = Fr::random(&mut *rng);
    let delta = Fr::random(&mut *rng);
    let tau = Fr::random(&mut *rng);
    parameters(
        circuit,
        ToxicWaste {
            g1,
            g2,
            alpha,
            beta,
            gamma,
            delta,
            tau,
        },
    )
}

/// The secrets of a setup: generators and trapdoors.
#[derive(Clone, Copy)]
pub struct ToxicWaste {
    pub g1: G1Projective,
    pub g2: G2Projective,
    pub alpha: Fr,
    pub beta: Fr,
    pub gamma: Fr,
    pub delta: Fr,
    pub tau: Fr,
}

/// bellperson's `generate_parameters` for these secrets.
pub fn parameters<C: Circuit<Fr>>(
    circuit: C,
    waste: ToxicWaste,
) -> Result<Parameters<Bls12>, SynthesisError> {
    let ToxicWaste {
        g1,
        g2,
        alpha,
        beta,
        gamma,
        delta,
        tau,
    } = waste;
    let mut cs = Assembly::default();
    cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
    circuit.synthesize(&mut cs)?;
    // `input * 0 = 0` for every input, as the prover adds them: the IC query is fully dense.
    for i in 0..cs.inputs.a.len() {
        cs.enforce(
            || "",
            |lc| lc + Variable::new_unchecked(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
    let (domain, exp) = domain_size(cs.constraints)?;
    let gamma_inverse =
        Option::<Fr>::from(gamma.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;
    let delta_inverse =
        Option::<Fr>::from(delta.invert()).ok_or(SynthesisError::UnexpectedIdentity)?;
    let g1_table = FixedBase::new(g1);
    let g2_table = FixedBase::new(g2);

    // H: g1 * tau^i * t(tau) / delta for i < domain - 1, t(tau) = tau^domain - 1.
    let t_over_delta = (tau.pow_vartime([domain as u64]) - Fr::ONE) * delta_inverse;
    let mut h = vec![G1Affine::identity(); domain - 1];
    h.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(chunk, out)| {
            let mut power = tau.pow_vartime([(chunk * CHUNK) as u64]);
            let points: Vec<G1Projective> = (0..out.len())
                .map(|_| {
                    let point = g1_table.mul(&(power * t_over_delta));
                    power *= tau;
                    point
                })
                .collect();
            G1Projective::batch_normalize(&points, out);
        });

    let lagrange = lagrange_at(tau, domain, exp);
    let inputs = cs
        .inputs
        .evaluate(&lagrange, &g1_table, &g2_table, alpha, beta, gamma_inverse);
    let aux = cs
        .aux
        .evaluate(&lagrange, &g1_table, &g2_table, alpha, beta, delta_inverse);
    // Every auxiliary variable must be constrained: the L query is fully dense.
    if aux.ext.iter().any(|p| bool::from(p.is_identity())) {
        return Err(SynthesisError::UnconstrainedVariable);
    }
    let (g1, g2) = (g1.to_affine(), g2.to_affine());
    let vk = VerifyingKey::<Bls12> {
        alpha_g1: (g1 * alpha).to_affine(),
        beta_g1: (g1 * beta).to_affine(),
        beta_g2: (g2 * beta).to_affine(),
        gamma_g2: (g2 * gamma).to_affine(),
        delta_g1: (g1 * delta).to_affine(),
        delta_g2: (g2 * delta).to_affine(),
        ic: inputs.ext,
    };
    // Points at infinity are left out of the A and B queries (the prover skips their
    // variables by density).
    let dense = |points: Vec<G1Affine>, more: Vec<G1Affine>| -> Vec<G1Affine> {
        points
            .into_iter()
            .chain(more)
            .filter(|p| !bool::from(p.is_identity()))
            .collect()
    };
    let b_g2: Vec<G2Affine> = inputs
        .b_g2
        .into_iter()
        .chain(aux.b_g2)
        .filter(|p| !bool::from(p.is_identity()))
        .collect();
    Ok(Parameters {
        vk,
        h: Arc::new(h),
        l: Arc::new(aux.ext),
        a: Arc::new(dense(inputs.a, aux.a)),
        b_g1: Arc::new(dense(inputs.b_g1, aux.b_g1)),
        b_g2: Arc::new(b_g2),
    })
}

/// The radix-2 domain bellperson's `EvaluationDomain` picks for `constraints`: its size and
/// log2.
fn domain_size(constraints: usize) -> Result<(usize, u32), SynthesisError> {
    let (mut size, mut exp) = (1usize, 0u32);
    while size < constraints {
        size *= 2;
        exp += 1;
        if exp >= Fr::S {
            return Err(SynthesisError::PolynomialDegreeTooLarge);
        }
    }
    Ok((size, exp))
}

/// The Lagrange basis of the size-`n` domain evaluated at `tau`: what bellperson gets by an
/// inverse FFT of tau's powers, in closed form, L_j(tau) = (tau^n - 1) / n * w^j / (tau - w^j).
fn lagrange_at(tau: Fr, n: usize, exp: u32) -> Vec<Fr> {
    let mut omega = Fr::ROOT_OF_UNITY;
    for _ in exp..Fr::S {
        omega = omega.square();
    }
    let scale = (tau.pow_vartime([n as u64]) - Fr::ONE)
        * Option::<Fr>::from(Fr::from(n as u64).invert()).expect("n is not 0 mod r");
    let mut out = vec![Fr::ZERO; n];
    out.par_chunks_mut(CHUNK)
        .enumerate()
        .for_each(|(chunk, out)| {
            let start = omega.pow_vartime([(chunk * CHUNK) as u64]);
            let mut w = start;
            for slot in out.iter_mut() {
                *slot = tau - w;
                w *= omega;
            }
            // tau is a root of unity with negligible probability; bellperson would fail likewise.
            out.iter_mut().batch_invert();
            let mut w = start;
            for slot in out.iter_mut() {
                *slot *= w * scale;
                w *= omega;
            }
        });
    out
}

/// `base * s` for many scalars `s`: a table of `base * d * 256^j` (d in 1..=255, one row j per
/// byte of a scalar), so a multiplication is one mixed addition per non-zero byte.
struct FixedBase<G: PrimeCurve> {
    rows: Vec<Vec<G::Affine>>,
}

impl<G: PrimeCurve> FixedBase<G> {
    fn new(base: G) -> Self {
        let mut rows = Vec::with_capacity(32);
        let mut row_base = base;
        for _ in 0..32 {
            let mut multiples = Vec::with_capacity(255);
            let mut acc = row_base;
            for _ in 0..255 {
                multiples.push(acc);
                acc += row_base;
            }
            let mut affine = vec![G::Affine::identity(); 255];
            G::batch_normalize(&multiples, &mut affine);
            rows.push(affine);
            // acc = 256 * row_base: the next byte's base.
            row_base = acc;
        }
        Self { rows }
    }

    fn mul(&self, scalar: &Fr) -> G {
        // Little-endian canonical bytes.
        let bytes = scalar.to_repr();
        let mut acc = G::identity();
        for (row, &byte) in self.rows.iter().zip(bytes.iter()) {
            if byte != 0 {
                acc += &row[usize::from(byte) - 1];
            }
        }
        acc
    }
}

/// One matrix's column per variable: its (coefficient, constraint) pairs.
type Column = Vec<Vec<(Fr, usize)>>;

/// Per variable, its columns in A, B and C.
#[derive(Default)]
struct Columns {
    a: Column,
    b: Column,
    c: Column,
}

/// A group of variables' query points.
struct Evaluated {
    a: Vec<G1Affine>,
    b_g1: Vec<G1Affine>,
    b_g2: Vec<G2Affine>,
    /// IC (inputs, over gamma) or L (auxiliaries, over delta).
    ext: Vec<G1Affine>,
}

impl Columns {
    fn push(&mut self) -> usize {
        self.a.push(Vec::new());
        self.b.push(Vec::new());
        self.c.push(Vec::new());
        self.a.len() - 1
    }

    /// The variables' A, B and (beta A + alpha B + C) / `ext_divisor` at tau, in G1 (and B in
    /// G2); identity where a polynomial is zero at tau, as bellperson leaves it.
    fn evaluate(
        &self,
        lagrange: &[Fr],
        g1: &FixedBase<G1Projective>,
        g2: &FixedBase<G2Projective>,
        alpha: Fr,
        beta: Fr,
        ext_inverse: Fr,
    ) -> Evaluated {
        let n = self.a.len();
        let mut out = Evaluated {
            a: vec![G1Affine::identity(); n],
            b_g1: vec![G1Affine::identity(); n],
            b_g2: vec![G2Affine::identity(); n],
            ext: vec![G1Affine::identity(); n],
        };
        let at = |terms: &[(Fr, usize)]| -> Fr {
            terms.iter().fold(Fr::ZERO, |acc, (coeff, constraint)| {
                acc + lagrange[*constraint] * coeff
            })
        };
        out.a
            .par_chunks_mut(CHUNK)
            .zip(out.b_g1.par_chunks_mut(CHUNK))
            .zip(out.b_g2.par_chunks_mut(CHUNK))
            .zip(out.ext.par_chunks_mut(CHUNK))
            .enumerate()
            .for_each(|(chunk, (((a_out, b_g1_out), b_g2_out), ext_out))| {
                let first = chunk * CHUNK;
                let len = a_out.len();
                let mut a = vec![G1Projective::identity(); len];
                let mut b_g1 = vec![G1Projective::identity(); len];
                let mut b_g2 = vec![G2Projective::identity(); len];
                let mut ext = vec![G1Projective::identity(); len];
                for i in 0..len {
                    let var = first + i;
                    let (at_a, at_b, at_c) = (at(&self.a[var]), at(&self.b[var]), at(&self.c[var]));
                    if !bool::from(at_a.is_zero()) {
                        a[i] = g1.mul(&at_a);
                    }
                    if !bool::from(at_b.is_zero()) {
                        b_g1[i] = g1.mul(&at_b);
                        b_g2[i] = g2.mul(&at_b);
                    }
                    ext[i] = g1.mul(&((at_a * beta + at_b * alpha + at_c) * ext_inverse));
                }
                G1Projective::batch_normalize(&a, a_out);
                G1Projective::batch_normalize(&b_g1, b_g1_out);
                G2Projective::batch_normalize(&b_g2, b_g2_out);
                G1Projective::batch_normalize(&ext, ext_out);
            });
        out
    }
}

/// The circuit's QAP by variable: what bellperson's generator records (`KeypairAssembly`,
/// private to it).
#[derive(Default)]
struct Assembly {
    inputs: Columns,
    aux: Columns,
    constraints: usize,
}

impl ConstraintSystem<Fr> for Assembly {
    type Root = Self;

    fn new() -> Self {
        Self::default()
    }

    fn alloc<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        Ok(Variable::new_unchecked(Index::Aux(self.aux.push())))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, _: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        Ok(Variable::new_unchecked(Index::Input(self.inputs.push())))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        let constraint = self.constraints;
        let mut record = |lc: LinearCombination<Fr>, column: fn(&mut Columns) -> &mut Column| {
            for (var, coeff) in lc.iter() {
                let (columns, index) = match var.get_unchecked() {
                    Index::Input(i) => (&mut self.inputs, i),
                    Index::Aux(i) => (&mut self.aux, i),
                };
                column(columns)[index].push((*coeff, constraint));
            }
        };
        record(a(LinearCombination::zero()), |c| &mut c.a);
        record(b(LinearCombination::zero()), |c| &mut c.b);
        record(c(LinearCombination::zero()), |c| &mut c.c);
        self.constraints += 1;
    }

    fn push_namespace<NR, N>(&mut self, _: N)
    where
        NR: Into<String>,
        N: FnOnce() -> NR,
    {
    }

    fn pop_namespace(&mut self) {}

    fn get_root(&mut self) -> &mut Self::Root {
        self
    }
}

#[cfg(test)]
mod tests;
