//! `mul-chain`: x_{i+1} = x_i * (x_i + i + 1), starting from a random x_0; the last value is
//! the public input. Every witness value is a uniformly random-looking field element, so the
//! MSMs see dense, full-width scalars (the worst case for bucket methods).

use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use ff::Field;
use rand_chacha::ChaCha20Rng;

use proofpipe_model::sizing::CircuitShape;

pub struct MulChain {
    steps: usize,
    x0: Fr,
}

impl MulChain {
    /// The output constraint plus the two public-input constraints leave room for steps.
    const FIXED_CONSTRAINTS: usize = 3;
    pub const MIN_CONSTRAINTS: usize = 16;

    pub fn new(constraints: usize, mut rng: ChaCha20Rng) -> Self {
        Self {
            steps: constraints - Self::FIXED_CONSTRAINTS,
            x0: Fr::random(&mut rng),
        }
    }

    pub fn shape(constraints: usize) -> CircuitShape {
        let steps = constraints - Self::FIXED_CONSTRAINTS;
        CircuitShape {
            constraints,
            aux: steps + 1,
            inputs: 2,
        }
    }

    fn step_constant(i: usize) -> Fr {
        Fr::from(i as u64 + 1)
    }
}

impl Circuit<Fr> for MulChain {
    fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
        let mut x_val = self.x0;
        let mut x = cs.alloc(|| "x0", || Ok(x_val))?;
        for i in 0..self.steps {
            let k = Self::step_constant(i);
            let next_val = x_val * (x_val + k);
            let next = cs.alloc(|| "x", || Ok(next_val))?;
            cs.enforce(
                || "step",
                |lc| lc + x,
                |lc| lc + x + (k, CS::one()),
                |lc| lc + next,
            );
            x = next;
            x_val = next_val;
        }
        let out = cs.alloc_input(|| "out", || Ok(x_val))?;
        cs.enforce(|| "out", |lc| lc + x, |lc| lc + CS::one(), |lc| lc + out);
        Ok(())
    }
}
