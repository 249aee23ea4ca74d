//! Would a "witness, then matrix" synthesis beat ours? Ours (`groth16::synthesize`) evaluates
//! every constraint's A, B, C linear combinations as the gadgets enforce them. The
//! alternative, used by some GPU provers: run the gadgets for the witness only (`enforce`
//! does nothing, so no linear combination is even built), then compute a, b, c as sparse
//! matrix-vector products over the R1CS matrices recorded once per circuit size.
//!
//! Reports, per circuit and size, in one run: our synthesis, the witness-only pass, the
//! matrix products (CSR, one thread, as a pipeline worker would run them), and the ratio of
//! ours to witness + products (> 1 means the split would be faster). The products are
//! checked equal to our a, b, c, so the comparison is of equal work.
//!
//! `cargo bench -p proofpipe-benches --bench witness_then_matrix`; choose cases with
//! `PROOFPIPE_BENCH="merkle-sha256:262144,mul-chain:262144"` (circuit:constraints).

use std::time::{Duration, Instant};

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;
use proofpipe_prover::circuits::CircuitKind;
use proofpipe_prover::groth16::synthesize;

/// The R1CS matrices of one circuit size in compressed-row form. A column is aux `j`, or
/// input `j` with [`INPUT`] set (inputs may be allocated after constraints, so aux columns
/// cannot be offset by an input count); unit coefficients cost an addition, as in ours.
const INPUT: u32 = 1 << 31;

#[derive(Default)]
struct Csr {
    row_starts: Vec<u32>,
    columns: Vec<u32>,
    coefficients: Vec<Fr>,
}

impl Csr {
    fn push_row(&mut self, lc: &LinearCombination<Fr>) {
        if self.row_starts.is_empty() {
            self.row_starts.push(0);
        }
        for (&index, coeff) in lc.iter_inputs() {
            self.columns.push(index as u32 | INPUT);
            self.coefficients.push(*coeff);
        }
        for (&index, coeff) in lc.iter_aux() {
            self.columns.push(index as u32);
            self.coefficients.push(*coeff);
        }
        self.row_starts.push(self.columns.len() as u32);
    }

    /// The matrix times the assignment.
    fn times(&self, inputs: &[Fr], aux: &[Fr]) -> Vec<Fr> {
        self.row_starts
            .windows(2)
            .map(|range| {
                let (start, end) = (range[0] as usize, range[1] as usize);
                let mut acc = Fr::ZERO;
                for (&column, coeff) in self.columns[start..end]
                    .iter()
                    .zip(&self.coefficients[start..end])
                {
                    let value = if column & INPUT == 0 {
                        aux[column as usize]
                    } else {
                        inputs[(column & !INPUT) as usize]
                    };
                    acc += if *coeff == Fr::ONE {
                        value
                    } else {
                        value * coeff
                    };
                }
                acc
            })
            .collect()
    }
}

/// Records the matrices (in a first, untimed pass) or, with `record` off, only the witness.
#[derive(Default)]
struct Recorder {
    record: bool,
    inputs: Vec<Fr>,
    aux: Vec<Fr>,
    /// Constraints seen (their rows, in record mode).
    constraints: usize,
    matrices: [Csr; 3],
}

impl ConstraintSystem<Fr> for Recorder {
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
        self.constraints += 1;
        if self.record {
            let lcs = [
                a(LinearCombination::zero()),
                b(LinearCombination::zero()),
                c(LinearCombination::zero()),
            ];
            for (matrix, lc) in self.matrices.iter_mut().zip(&lcs) {
                matrix.push_row(lc);
            }
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

/// Runs the circuit of partition 0 into a recorder that starts, like our synthesis, with
/// the constant ONE as input 0.
fn run(kind: CircuitKind, constraints: usize, record: bool) -> Recorder {
    let mut cs = Recorder {
        record,
        inputs: vec![Fr::ONE],
        ..Recorder::default()
    };
    kind.partition(constraints, 1, 0)
        .expect("a valid size")
        .synthesize(&mut cs)
        .expect("the circuit synthesizes");
    cs
}

fn timed<T>(f: impl FnOnce() -> T) -> (T, Duration) {
    let start = Instant::now();
    let value = f();
    (value, start.elapsed())
}

fn main() {
    let spec = std::env::var("PROOFPIPE_BENCH")
        .unwrap_or_else(|_| "merkle-sha256:262144,mul-chain:262144".into());
    for case in spec.split(',') {
        let (circuit, constraints) = case
            .split_once(':')
            .unwrap_or_else(|| panic!("case {case:?} is not circuit:constraints"));
        let kind: CircuitKind = circuit.parse().unwrap_or_else(|e| panic!("{e}"));
        let constraints: usize = constraints.parse().expect("constraints is a number");
        let shape = kind.shape(constraints).expect("a valid size");

        let recorded = run(kind, constraints, true);
        let nnz = recorded
            .matrices
            .iter()
            .map(|m| m.columns.len())
            .sum::<usize>();
        let (ours, ours_time) =
            timed(|| synthesize(kind.partition(constraints, 1, 0).unwrap(), shape).unwrap());
        let (witness, witness_time) = timed(|| run(kind, constraints, false));
        let (products, products_time) = timed(|| {
            recorded
                .matrices
                .iter()
                .map(|matrix| matrix.times(&witness.inputs, &witness.aux))
                .collect::<Vec<_>>()
        });
        let n = witness.constraints;
        assert!(
            products[0] == ours.a[..n] && products[1] == ours.b[..n] && products[2] == ours.c[..n],
            "the matrix products must equal our a, b, c"
        );
        let split = witness_time + products_time;
        println!(
            "{} 2^{:.0}: ours {:.3} s | witness only {:.3} s + matrix products {:.3} s = {:.3} s | ours / split = {:.2} ({} nonzeros, {:.1} per constraint)",
            kind.name(),
            (constraints as f64).log2(),
            ours_time.as_secs_f64(),
            witness_time.as_secs_f64(),
            products_time.as_secs_f64(),
            split.as_secs_f64(),
            ours_time.as_secs_f64() / split.as_secs_f64(),
            nnz,
            nnz as f64 / n as f64,
        );
    }
}
