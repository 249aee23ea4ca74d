//! Synthesis into a proving assignment: the a/b/c evaluations of every constraint, the
//! variable assignment, and which variables each query touches.

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;
use proofpipe_kernels::{DensityTracker, EvalAlloc, Evaluations, domain_size, evaluations};
use rayon::prelude::*;

use crate::circuits::{CircuitShape, enforce_input_independence};

/// One synthesized partition: what the GPU stage consumes.
pub struct Synthesized {
    /// Evaluations of the A, B, C polynomials, one per constraint. Reserved to the FFT domain
    /// size up front so neither synthesis nor the FFT's zero padding reallocates, in the
    /// memory the GPU stage's backend asked for (page-locked for a GPU: a DMA to upload).
    pub a: Evaluations,
    pub b: Evaluations,
    pub c: Evaluations,
    /// Public inputs, the constant ONE first.
    pub inputs: Vec<Fr>,
    pub aux: Vec<Fr>,
    pub a_aux_density: DensityTracker,
    pub b_input_density: DensityTracker,
    pub b_aux_density: DensityTracker,
}

impl Synthesized {
    fn with_shape(shape: CircuitShape, alloc: &EvalAlloc) -> Self {
        let m = domain_size(shape.constraints);
        Self {
            a: evaluations(m, alloc),
            b: evaluations(m, alloc),
            c: evaluations(m, alloc),
            inputs: Vec::with_capacity(shape.inputs),
            aux: Vec::with_capacity(shape.aux),
            a_aux_density: DensityTracker::new(),
            b_input_density: DensityTracker::new(),
            b_aux_density: DensityTracker::new(),
        }
    }

    /// Heap bytes held, by capacity (what the allocator really gave out).
    pub fn heap_bytes(&self) -> u64 {
        let scalars = self.a.capacity()
            + self.b.capacity()
            + self.c.capacity()
            + self.inputs.capacity()
            + self.aux.capacity();
        let density_bits = self.aux.capacity() * 2 + self.inputs.capacity();
        (scalars * size_of::<Fr>() + density_bits / 8) as u64
    }

    /// A copy with its a/b/c evaluations in `alloc` (a derived clone would keep them in this
    /// one's allocator). Copied on every core: at 2^27 a partition is ~17 GB, which one thread
    /// copies in seconds (replayed benchmarks copy one per partition).
    pub fn copy_in(&self, alloc: &EvalAlloc) -> Self {
        const CHUNK: usize = 1 << 16;
        let copy = |v: &Evaluations| {
            let mut e = evaluations(v.capacity(), alloc);
            let n = v.len();
            e.spare_capacity_mut()[..n]
                .par_chunks_mut(CHUNK)
                .zip(v.par_chunks(CHUNK))
                .for_each(|(to, from)| {
                    for (t, f) in to.iter_mut().zip(from) {
                        t.write(*f);
                    }
                });
            // SAFETY: every one of the first n elements was written just above.
            unsafe { e.set_len(n) };
            e
        };
        let ((a, b), (c, aux)) = rayon::join(
            || (copy(&self.a), copy(&self.b)),
            || (copy(&self.c), self.aux.par_iter().copied().collect()),
        );
        Self {
            a,
            b,
            c,
            inputs: self.inputs.clone(),
            aux,
            a_aux_density: self.a_aux_density.clone(),
            b_input_density: self.b_input_density.clone(),
            b_aux_density: self.b_aux_density.clone(),
        }
    }

    /// The first part in which `other` differs from this partition (a, b, c, the assignment,
    /// a density's bits or total), None when they are equal in everything the GPU stage
    /// reads: what tests of one synthesis against another compare.
    pub fn first_difference(&self, other: &Self) -> Option<&'static str> {
        let densities = |s: &Self| {
            [&s.a_aux_density, &s.b_input_density, &s.b_aux_density]
                .map(|d| (d.bv.clone(), d.get_total_density()))
        };
        let [da, dbi, dba] = densities(self);
        let [oa, obi, oba] = densities(other);
        [
            ("a", self.a == other.a),
            ("b", self.b == other.b),
            ("c", self.c == other.c),
            ("the public inputs", self.inputs == other.inputs),
            ("the aux assignment", self.aux == other.aux),
            ("A's aux density", da == oa),
            ("B's input density", dbi == obi),
            ("B's aux density", dba == oba),
        ]
        .into_iter()
        .find_map(|(part, equal)| (!equal).then_some(part))
    }

    /// The public inputs a verifier needs (without the constant ONE).
    pub fn public_inputs(&self) -> &[Fr] {
        &self.inputs[1..]
    }
}

/// Synthesizes `circuit`, laid out as `shape`, into a proving assignment (evaluations on the
/// heap).
pub fn synthesize<C: Circuit<Fr>>(
    circuit: C,
    shape: CircuitShape,
) -> Result<Synthesized, SynthesisError> {
    synthesize_into(circuit, shape, &EvalAlloc::heap())
}

/// [`synthesize`], with the a/b/c evaluations in `alloc` (the GPU stage backend's
/// [`proofpipe_kernels::ProvingBackend::evaluation_alloc`], on a pipeline's synthesis worker).
pub fn synthesize_into<C: Circuit<Fr>>(
    circuit: C,
    shape: CircuitShape,
    alloc: &EvalAlloc,
) -> Result<Synthesized, SynthesisError> {
    let mut cs = Synthesized::with_shape(shape, alloc);
    cs.alloc_input(|| "one", || Ok(Fr::ONE))?;
    circuit.synthesize(&mut cs)?;
    let inputs = cs.inputs.len();
    enforce_input_independence(&mut cs, inputs);
    Ok(cs)
}

/// Evaluates a linear combination and marks the variables it touches in the trackers.
fn eval_tracked(
    lc: &LinearCombination<Fr>,
    input_density: Option<&mut DensityTracker>,
    aux_density: Option<&mut DensityTracker>,
    inputs: &[Fr],
    aux: &[Fr],
) -> Fr {
    fn sum<'a>(
        terms: impl Iterator<Item = (&'a usize, &'a Fr)>,
        values: &[Fr],
        mut density: Option<&mut DensityTracker>,
    ) -> Fr {
        let mut acc = Fr::ZERO;
        for (&index, coeff) in terms {
            if coeff.is_zero_vartime() {
                continue;
            }
            let value = values[index];
            acc += if *coeff == Fr::ONE {
                value
            } else {
                value * coeff
            };
            if let Some(d) = density.as_deref_mut() {
                d.inc(index);
            }
        }
        acc
    }
    sum(lc.iter_inputs(), inputs, input_density) + sum(lc.iter_aux(), aux, aux_density)
}

impl ConstraintSystem<Fr> for Synthesized {
    type Root = Self;

    fn new() -> Self {
        Self::with_shape(
            CircuitShape {
                constraints: 0,
                aux: 0,
                inputs: 0,
            },
            &EvalAlloc::heap(),
        )
    }

    /// Extensible, as bellperson's own assignment is: a circuit that synthesizes its
    /// independent parts in sub-systems (Filecoin's PoSt, by sectors) does so on every core.
    fn is_extensible() -> bool {
        true
    }

    /// Appends a sub-system's constraints and variables, as bellperson's `ProvingAssignment`
    /// does: its input 0 is its own ONE, which this one has.
    fn extend(&mut self, other: &Self) {
        self.a_aux_density.extend(&other.a_aux_density, false);
        self.b_input_density.extend(&other.b_input_density, true);
        self.b_aux_density.extend(&other.b_aux_density, false);
        self.a.extend_from_slice(&other.a);
        self.b.extend_from_slice(&other.b);
        self.c.extend_from_slice(&other.c);
        self.inputs.extend_from_slice(&other.inputs[1..]);
        self.aux.extend_from_slice(&other.aux);
    }

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.aux.push(f()?);
        self.a_aux_density.add_element();
        self.b_aux_density.add_element();
        Ok(Variable::new_unchecked(Index::Aux(self.aux.len() - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        self.inputs.push(f()?);
        self.b_input_density.add_element();
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
        let (a, b, c) = (
            a(LinearCombination::zero()),
            b(LinearCombination::zero()),
            c(LinearCombination::zero()),
        );
        // Inputs are dense in A by construction (the x * 0 = 0 constraints), so A tracks aux only.
        let a = eval_tracked(
            &a,
            None,
            Some(&mut self.a_aux_density),
            &self.inputs,
            &self.aux,
        );
        let b = eval_tracked(
            &b,
            Some(&mut self.b_input_density),
            Some(&mut self.b_aux_density),
            &self.inputs,
            &self.aux,
        );
        // C has no query of its own; it enters the quotient only.
        let c = c.eval(&self.inputs, &self.aux);
        self.a.push(a);
        self.b.push(b);
        self.c.push(c);
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
