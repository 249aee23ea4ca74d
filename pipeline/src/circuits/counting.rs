//! Constraint systems that only count: [`CountingCs`] lays circuits out to an exact size and,
//! in tests, checks a witness satisfies its circuit; [`count_r1cs`] reads a circuit's whole
//! R1CS shape (dimensions, query densities, nonzeros) without keeping any of it, so a 2^27
//! Filecoin partition is counted in a few MiB.

use bellperson::groth16::Parameters;
use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use blstrs::{G1Affine, G2Affine};
use ff::Field;
use serde::{Deserialize, Serialize};

use proofpipe_model::sizing::CircuitShape;

/// Counts constraints and variables and records whether every constraint holds.
pub(crate) struct CountingCs {
    inputs: Vec<Fr>,
    aux: Vec<Fr>,
    constraints: usize,
    unsatisfied: usize,
}

impl CountingCs {
    pub(crate) fn new() -> Self {
        Self {
            inputs: vec![Fr::ONE],
            aux: Vec::new(),
            constraints: 0,
            unsatisfied: 0,
        }
    }

    /// Dimensions as the prover sees them: plus one constraint per public input.
    pub(crate) fn shape(&self) -> CircuitShape {
        CircuitShape {
            constraints: self.constraints + self.inputs.len(),
            aux: self.aux.len(),
            inputs: self.inputs.len(),
        }
    }

    #[cfg(test)]
    pub(crate) fn is_satisfied(&self) -> bool {
        self.unsatisfied == 0
    }

    #[cfg(test)]
    pub(crate) fn public_inputs(&self) -> Vec<Fr> {
        self.inputs[1..].to_vec()
    }

    fn eval(&self, lc: &LinearCombination<Fr>) -> Fr {
        lc.eval(&self.inputs, &self.aux)
    }
}

impl ConstraintSystem<Fr> for CountingCs {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        Ok(Variable::new_unchecked(Index::Input(self.inputs.len() - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        let a = self.eval(&a(LinearCombination::zero()));
        let b = self.eval(&b(LinearCombination::zero()));
        let c = self.eval(&c(LinearCombination::zero()));
        self.constraints += 1;
        if a * b != c {
            self.unsatisfied += 1;
        }
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

/// The R1CS shape of one partition as the prover sees it (the constant ONE and one `x * 0 = 0`
/// constraint per public input included): what its parameters, the sizing and the two-pass
/// synthesis's matrices depend on.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct R1csCounts {
    pub constraints: usize,
    /// Public inputs, the constant ONE included.
    pub inputs: usize,
    pub aux: usize,
    /// Aux variables that occur in A (inputs are dense in A by construction).
    pub a_aux_density: usize,
    /// Inputs and aux variables that occur in B.
    pub b_input_density: usize,
    pub b_aux_density: usize,
    /// Nonzero entries of A, B and C.
    pub nonzeros: [u64; 3],
    /// Of those, coefficients other than +1 and -1 (the ones the matrices store apart).
    pub stored_coefficients: [u64; 3],
}

impl R1csCounts {
    pub fn shape(&self) -> CircuitShape {
        CircuitShape {
            constraints: self.constraints,
            aux: self.aux,
            inputs: self.inputs,
        }
    }

    /// The point counts of each proving-key query (bellperson's generator drops the points of
    /// variables absent from A or B).
    pub fn query_counts(&self) -> QueryCounts {
        QueryCounts {
            inputs: self.inputs,
            h: proofpipe_kernels::domain_size(self.constraints) - 1,
            l: self.aux,
            a: self.inputs + self.a_aux_density,
            b: self.b_input_density + self.b_aux_density,
        }
    }
}

/// Point counts of each proving-key query: what the prover reads for one circuit shape.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
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
    /// Each query's bases in bytes, as the planner places them on the GPU or streams them.
    pub fn query_bytes(&self) -> proofpipe_model::sizing::QueryBytes {
        proofpipe_model::sizing::QueryBytes::from_counts(
            self.h as u64,
            self.l as u64,
            self.a as u64,
            self.b as u64,
        )
    }

    pub fn params_heap_bytes(&self) -> u64 {
        let g1 = self.h + self.l + self.a + self.b;
        (g1 * size_of::<G1Affine>() + self.b * size_of::<G2Affine>()) as u64
    }
}

/// Groth16 needs the input polynomials linearly independent: one `x * 0 = 0` per input,
/// after the circuit's own constraints.
pub fn enforce_input_independence<CS: ConstraintSystem<Fr>>(cs: &mut CS, inputs: usize) {
    for i in 0..inputs {
        cs.enforce(
            || "input",
            |lc| lc + Variable::new_unchecked(Index::Input(i)),
            |lc| lc,
            |lc| lc,
        );
    }
}

/// A growable bit set, one bit per variable.
#[derive(Default)]
struct Bits {
    words: Vec<u64>,
    len: usize,
}

impl Bits {
    fn push(&mut self) {
        if self.len.is_multiple_of(64) {
            self.words.push(0);
        }
        self.len += 1;
    }

    fn set(&mut self, index: usize) {
        self.words[index / 64] |= 1 << (index % 64);
    }

    fn count(&self) -> usize {
        self.words.iter().map(|w| w.count_ones() as usize).sum()
    }
}

/// Counts what [`crate::groth16::synthesize`] would track, without storing values or linear
/// combinations: 2 bits per aux variable and one per input, whatever the circuit's size.
struct R1csCounter {
    /// Compute each witness value (and fail where one cannot be), or count the structure of a
    /// blank circuit, whose values are unknown, as a parameter setup synthesizes it.
    evaluate_witness: bool,
    constraints: usize,
    a_aux: Bits,
    b_input: Bits,
    b_aux: Bits,
    nonzeros: [u64; 3],
    stored: [u64; 3],
}

/// The nonzero terms of `lc` as (is an input, index, coefficient): zero coefficients are
/// skipped, as the synthesis and the matrices skip them.
fn nonzero_terms(lc: &LinearCombination<Fr>) -> impl Iterator<Item = (bool, usize, &Fr)> {
    lc.iter_inputs()
        .map(|(&i, c)| (true, i, c))
        .chain(lc.iter_aux().map(|(&i, c)| (false, i, c)))
        .filter(|(_, _, c)| !c.is_zero_vartime())
}

impl R1csCounter {
    /// Counts `lc` as a row of matrix `matrix` (0: A, 1: B, 2: C) and marks the densities.
    fn count_row(&mut self, matrix: usize, lc: &LinearCombination<Fr>) {
        let minus_one = -Fr::ONE;
        for (input, index, coeff) in nonzero_terms(lc) {
            self.nonzeros[matrix] += 1;
            if coeff != &Fr::ONE && coeff != &minus_one {
                self.stored[matrix] += 1;
            }
            match (matrix, input) {
                // Inputs are dense in A by construction; C has no query of its own.
                (0, false) => self.a_aux.set(index),
                (1, true) => self.b_input.set(index),
                (1, false) => self.b_aux.set(index),
                _ => {}
            }
        }
    }
}

impl ConstraintSystem<Fr> for R1csCounter {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        // The value is computed (a witness that cannot be computed fails here, as it would in
        // a real synthesis) and dropped.
        if self.evaluate_witness {
            f()?;
        }
        self.a_aux.push();
        self.b_aux.push();
        Ok(Variable::new_unchecked(Index::Aux(self.a_aux.len - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        if self.evaluate_witness {
            f()?;
        }
        self.b_input.push();
        Ok(Variable::new_unchecked(Index::Input(self.b_input.len - 1)))
    }

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, a: LA, b: LB, c: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
        self.count_row(0, &a(LinearCombination::zero()));
        self.count_row(1, &b(LinearCombination::zero()));
        self.count_row(2, &c(LinearCombination::zero()));
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

/// Synthesizes `circuit` as the prover would (the constant ONE first, the input constraints
/// last) and counts its R1CS shape. Every witness value is computed and dropped; nothing of
/// size proportional to the circuit is kept but the density bits.
pub fn count_r1cs<C: Circuit<Fr>>(circuit: C) -> Result<R1csCounts, SynthesisError> {
    count(circuit, true)
}

/// [`count_r1cs`] of a blank circuit (no witness values, as filecoin-proofs' `blank_circuit`
/// for a parameter setup): the R1CS has the same shape whatever the witness, which is why one
/// proving key serves every proof, so no inputs are needed to count it.
pub fn count_r1cs_structure<C: Circuit<Fr>>(circuit: C) -> Result<R1csCounts, SynthesisError> {
    count(circuit, false)
}

fn count<C: Circuit<Fr>>(circuit: C, evaluate_witness: bool) -> Result<R1csCounts, SynthesisError> {
    let mut cs = R1csCounter {
        evaluate_witness,
        constraints: 0,
        a_aux: Bits::default(),
        b_input: Bits::default(),
        b_aux: Bits::default(),
        nonzeros: [0; 3],
        stored: [0; 3],
    };
    cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
    circuit.synthesize(&mut cs)?;
    let inputs = cs.b_input.len;
    enforce_input_independence(&mut cs, inputs);
    Ok(R1csCounts {
        constraints: cs.constraints,
        inputs,
        aux: cs.a_aux.len,
        a_aux_density: cs.a_aux.count(),
        b_input_density: cs.b_input.count(),
        b_aux_density: cs.b_aux.count(),
        nonzeros: cs.nonzeros,
        stored_coefficients: cs.stored,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuits::CircuitKind;
    use crate::groth16::{self, R1csMatrices};
    use crate::params::query_counts;

    /// The counts are what the synthesis tracks and what the matrices hold, for both circuits.
    #[test]
    fn counts_equal_the_synthesis_and_the_matrices() {
        for (kind, n) in [
            (CircuitKind::MulChain, 1 << 10),
            (CircuitKind::MerkleSha256, 1 << 15),
        ] {
            let shape = kind.shape(n).unwrap();
            let counts = count_r1cs(kind.partition(n, 1, 0).unwrap()).unwrap();
            assert_eq!(counts.shape(), shape, "{kind}");
            assert_eq!(
                counts.query_counts(),
                query_counts(kind, n).unwrap(),
                "{kind}"
            );
            let s = groth16::synthesize(kind.partition(n, 1, 0).unwrap(), shape).unwrap();
            assert_eq!(counts.a_aux_density, s.a_aux_density.get_total_density());
            assert_eq!(
                counts.b_input_density,
                s.b_input_density.get_total_density()
            );
            assert_eq!(counts.b_aux_density, s.b_aux_density.get_total_density());
            let m = R1csMatrices::record(kind.partition(n, 1, 0).unwrap(), shape).unwrap();
            assert_eq!(
                counts.nonzeros.iter().sum::<u64>(),
                m.nonzeros() as u64,
                "{kind}"
            );
            m.check_predicted(&counts).unwrap();
            assert!(
                counts.stored_coefficients.iter().sum::<u64>() > 0,
                "{kind}: the circuits have coefficients other than +-1"
            );
        }
    }

    #[test]
    fn a_witness_that_cannot_be_computed_fails_the_count() {
        struct Missing;
        impl Circuit<Fr> for Missing {
            fn synthesize<CS: ConstraintSystem<Fr>>(
                self,
                cs: &mut CS,
            ) -> Result<(), SynthesisError> {
                cs.alloc(|| "x", || Err(SynthesisError::AssignmentMissing))?;
                Ok(())
            }
        }
        assert!(matches!(
            count_r1cs(Missing),
            Err(SynthesisError::AssignmentMissing)
        ));
    }
}
