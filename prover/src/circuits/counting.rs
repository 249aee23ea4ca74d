//! A constraint system that only counts and checks: used to lay circuits out to an exact
//! size and, in tests, to check a witness satisfies its circuit.

use bellperson::{ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;

use super::CircuitShape;

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
