//! Synthesis in two passes, for synthesis-bound circuits: the gadgets run for the witness
//! only (their `enforce` calls build no linear combination), then a, b, c are the products
//! of the circuit's R1CS matrices with the assignment. The matrices depend only on the
//! circuit and its size, so they are recorded once per process and shared by every
//! partition. Measured 1.5x (merkle-sha256) to 1.8x (mul-chain) the throughput of
//! [`super::synthesize`] per partition (`benches/benches/witness_then_matrix.rs`). A nonzero
//! costs its 4-byte column word, and 4 bytes more where its coefficient is not +1 or -1: the
//! index of the coefficient in the matrix's table of distinct ones (ADR 0010, 0039).

use bellperson::{Circuit, ConstraintSystem, Index, LinearCombination, SynthesisError, Variable};
use blstrs::Scalar as Fr;
use ff::Field;
use proofpipe_kernels::{DensityTracker, EvalAlloc, Evaluations, domain_size, evaluations};
use rayon::prelude::*;

use super::assignment::Synthesized;
use crate::circuits::enforce_input_independence;
use crate::circuits::{CircuitShape, R1csCounts};

pub mod file;

/// Column word: bit 31 marks an input, bits 29-30 the coefficient (+1, -1, or the next stored
/// one), the low 29 bits the variable's index.
const INPUT: u32 = 1 << 31;
const KIND_SHIFT: u32 = 29;
const KIND_ONE: u32 = 0;
const KIND_MINUS_ONE: u32 = 1;
const KIND_STORED: u32 = 2;
const INDEX_MASK: u32 = (1 << KIND_SHIFT) - 1;

/// One R1CS matrix in compressed-row form. Coefficients of +1 and -1, most of them in these
/// circuits, are kept in the column word; the others are stored in row order as indices into
/// `table`, the matrix's distinct coefficients (a circuit has few: SHA-256's powers of two,
/// Poseidon's round constants and MDS entries), so a stored coefficient costs 4 bytes, not 32.
#[derive(Clone, Debug, Default, PartialEq)]
struct Csr {
    /// Per row: where its columns and its stored coefficients end.
    row_ends: Vec<[u32; 2]>,
    columns: Vec<u32>,
    /// Per stored coefficient, in row order: its index in `table`.
    coefficients: Vec<u32>,
    /// The distinct stored coefficients, in the order they were first met.
    table: Vec<Fr>,
}

/// A [`Csr`] being recorded, with the index of its table's coefficients.
#[derive(Default)]
struct CsrBuilder {
    csr: Csr,
    /// Table index by coefficient (its Montgomery limbs).
    index: rustc_hash::FxHashMap<[u64; 4], u32>,
}

impl CsrBuilder {
    /// `coeff`'s index in the table, added if new; `None` past u32's range.
    fn intern(&mut self, coeff: Fr) -> Option<u32> {
        let key = blst::blst_fr::from(coeff).l;
        if let Some(&at) = self.index.get(&key) {
            return Some(at);
        }
        let at = u32::try_from(self.csr.table.len()).ok()?;
        self.csr.table.push(coeff);
        self.index.insert(key, at);
        Some(at)
    }

    /// Appends `lc` as a row; false if an index or a count does not fit the encoding.
    fn push_row(&mut self, lc: &LinearCombination<Fr>) -> bool {
        let minus_one = -Fr::ONE;
        let terms = lc
            .iter_inputs()
            .map(|(&index, coeff)| (index, INPUT, coeff))
            .chain(lc.iter_aux().map(|(&index, coeff)| (index, 0, coeff)));
        for (index, input, coeff) in terms {
            // Zero terms are skipped, as the direct synthesis skips them (also for density).
            if coeff.is_zero_vartime() {
                continue;
            }
            let Some(index) = u32::try_from(index).ok().filter(|&i| i <= INDEX_MASK) else {
                return false;
            };
            let kind = if *coeff == Fr::ONE {
                KIND_ONE
            } else if *coeff == minus_one {
                KIND_MINUS_ONE
            } else {
                let Some(at) = self.intern(*coeff) else {
                    return false;
                };
                self.csr.coefficients.push(at);
                KIND_STORED
            };
            self.csr.columns.push(input | (kind << KIND_SHIFT) | index);
        }
        self.end_row()
    }

    /// Closes the row whose columns were pushed last; false if a count overflows.
    fn end_row(&mut self) -> bool {
        let ends = (
            u32::try_from(self.csr.columns.len()),
            u32::try_from(self.csr.coefficients.len()),
        );
        match ends {
            (Ok(columns), Ok(coefficients)) => {
                self.csr.row_ends.push([columns, coefficients]);
                true
            }
            _ => false,
        }
    }

    /// Rows `prefix_rows..` of `other` (a sub-circuit's recording whose first `prefix_rows`
    /// rows must equal this one's) appended, its variables at or past `prefix` (inputs, aux)
    /// moved to start at `at`, its coefficients interned in this table; false if the prefixes
    /// differ or an index overflows.
    fn append_past_prefix(
        &mut self,
        other: &Csr,
        prefix_rows: usize,
        prefix: [usize; 2],
        at: [usize; 2],
    ) -> bool {
        let (columns_from, stored_from) = match prefix_rows.checked_sub(1) {
            Some(last) => (
                other.row_ends[last][0] as usize,
                other.row_ends[last][1] as usize,
            ),
            None => (0, 0),
        };
        let this = &self.csr;
        if other.row_ends[..prefix_rows] != this.row_ends[..prefix_rows]
            || other.columns[..columns_from] != this.columns[..columns_from]
            || !other.coefficients[..stored_from]
                .iter()
                .zip(&this.coefficients[..stored_from])
                .all(|(&o, &t)| other.table[o as usize] == this.table[t as usize])
        {
            return false;
        }
        let mut stored = other.coefficients[stored_from..].iter();
        let mut column = columns_from;
        for &[columns_end, _] in &other.row_ends[prefix_rows..] {
            for &word in &other.columns[column..columns_end as usize] {
                let slot = usize::from(word & INPUT == 0);
                let index = (word & INDEX_MASK) as usize;
                let moved = if index < prefix[slot] {
                    index
                } else {
                    index - prefix[slot] + at[slot]
                };
                let Some(moved) = u32::try_from(moved).ok().filter(|&i| i <= INDEX_MASK) else {
                    return false;
                };
                if (word >> KIND_SHIFT) & 0b11 == KIND_STORED {
                    let coeff = stored.next().map(|&i| other.table[i as usize]);
                    let Some(at) = coeff.and_then(|c| self.intern(c)) else {
                        return false;
                    };
                    self.csr.coefficients.push(at);
                }
                self.csr.columns.push((word & !INDEX_MASK) | moved);
            }
            column = columns_end as usize;
            if !self.end_row() {
                return false;
            }
        }
        true
    }
}

impl Csr {
    /// Appends this matrix times the assignment to `out`, one value per row, the rows split
    /// over rayon's threads (each task starts where the row before its first ends).
    fn multiply_into(&self, inputs: &[Fr], aux: &[Fr], out: &mut Evaluations) {
        const ROWS_PER_TASK: usize = 1 << 14;
        let rows = self.row_ends.len();
        let start = out.len();
        out.reserve(rows);
        out.spare_capacity_mut()[..rows]
            .par_chunks_mut(ROWS_PER_TASK)
            .zip(self.row_ends.par_chunks(ROWS_PER_TASK))
            .enumerate()
            .for_each(|(task, (slots, row_ends))| {
                let first = task * ROWS_PER_TASK;
                let (mut column, mut stored) = match first.checked_sub(1) {
                    Some(before) => {
                        let [c, s] = self.row_ends[before];
                        (c as usize, s as usize)
                    }
                    None => (0, 0),
                };
                for (slot, &[columns_end, coefficients_end]) in slots.iter_mut().zip(row_ends) {
                    let mut acc = Fr::ZERO;
                    for &word in &self.columns[column..columns_end as usize] {
                        let index = (word & INDEX_MASK) as usize;
                        let value = if word & INPUT == 0 {
                            aux[index]
                        } else {
                            inputs[index]
                        };
                        match (word >> KIND_SHIFT) & 0b11 {
                            KIND_ONE => acc += value,
                            KIND_MINUS_ONE => acc -= value,
                            _ => {
                                acc += value * self.table[self.coefficients[stored] as usize];
                                stored += 1;
                            }
                        }
                    }
                    debug_assert_eq!(stored, coefficients_end as usize);
                    column = columns_end as usize;
                    slot.write(acc);
                }
            });
        // SAFETY: each of the `rows` slots past `start` was written by exactly one task above.
        unsafe { out.set_len(start + rows) };
    }

    /// Whether this matrix is well formed for `shape` (see [`R1csMatrices::from_parts`]).
    fn check(&self, shape: CircuitShape) -> Result<(), String> {
        if self.row_ends.len() != shape.constraints {
            return Err(format!(
                "{} rows for {} constraints",
                self.row_ends.len(),
                shape.constraints
            ));
        }
        let mut previous = [0u32; 2];
        for (row, &end) in self.row_ends.iter().enumerate() {
            if end[0] < previous[0] || end[1] < previous[1] {
                return Err(format!("row {row} ends before the row above it"));
            }
            previous = end;
        }
        if previous != [self.columns.len() as u32, self.coefficients.len() as u32] {
            return Err(format!(
                "its rows end at {previous:?}, its arrays hold {} columns and {} coefficients",
                self.columns.len(),
                self.coefficients.len()
            ));
        }
        let (stored, out_of_range) = self
            .columns
            .par_iter()
            .map(|&word| {
                let index = (word & INDEX_MASK) as usize;
                let limit = if word & INPUT == 0 {
                    shape.aux
                } else {
                    shape.inputs
                };
                (
                    usize::from((word >> KIND_SHIFT) & 0b11 == KIND_STORED),
                    usize::from(index >= limit),
                )
            })
            .reduce(|| (0, 0), |x, y| (x.0 + y.0, x.1 + y.1));
        if stored != self.coefficients.len() {
            return Err(format!(
                "{stored} columns take a stored coefficient, {} are stored",
                self.coefficients.len()
            ));
        }
        if out_of_range > 0 {
            return Err(format!(
                "{out_of_range} columns name a variable past the shape"
            ));
        }
        let table = self.table.len();
        if let Some(i) = self
            .coefficients
            .par_iter()
            .find_any(|&&i| i as usize >= table)
        {
            return Err(format!(
                "a stored coefficient is entry {i} of a table of {table}"
            ));
        }
        Ok(())
    }

    /// The aux variables this matrix uses, with repeats.
    fn aux_columns(&self) -> impl Iterator<Item = usize> + '_ {
        self.columns
            .iter()
            .filter(|&&word| word & INPUT == 0)
            .map(|&word| (word & INDEX_MASK) as usize)
    }

    /// The inputs this matrix uses, with repeats.
    fn input_columns(&self) -> impl Iterator<Item = usize> + '_ {
        self.columns
            .iter()
            .filter(|&&word| word & INPUT != 0)
            .map(|&word| (word & INDEX_MASK) as usize)
    }

    fn heap_bytes(&self) -> u64 {
        (self.row_ends.capacity() * size_of::<[u32; 2]>()
            + self.columns.capacity() * size_of::<u32>()
            + self.coefficients.capacity() * size_of::<u32>()
            + self.table.capacity() * size_of::<Fr>()) as u64
    }
}

/// The R1CS of one circuit size, with the query densities that follow from it.
#[derive(Clone, Debug)]
pub struct R1csMatrices {
    a: Csr,
    b: Csr,
    c: Csr,
    shape: CircuitShape,
    a_aux_density: DensityTracker,
    b_input_density: DensityTracker,
    b_aux_density: DensityTracker,
}

impl R1csMatrices {
    /// Records the matrices of `circuit` (any partition of the size: the structure does not
    /// depend on the witness). Costs about one direct synthesis.
    pub fn record<C: Circuit<Fr>>(circuit: C, shape: CircuitShape) -> Result<Self, SynthesisError> {
        let mut matrices = Self::record_circuit(circuit)?;
        matrices.shape = shape;
        Ok(matrices)
    }

    /// As [`R1csMatrices::record`], for a circuit whose shape is not known beforehand (a
    /// Filecoin partition's): the shape is what the recording counted.
    pub fn record_circuit<C: Circuit<Fr>>(circuit: C) -> Result<Self, SynthesisError> {
        Self::finish(Recorder::of(circuit)?)
    }

    /// As [`R1csMatrices::record_circuit`] for a circuit of `parts` uniform independent parts
    /// after a common prefix, recorded on every core from sub-circuits `build(range)` (the
    /// prefix and the parts in `range`; ADR 0023): the same matrices, bit for bit.
    pub fn record_split<C, B>(parts: usize, build: B) -> Result<Self, SynthesisError>
    where
        C: Circuit<Fr>,
        B: Fn(std::ops::Range<usize>) -> Result<C, SynthesisError> + Sync,
    {
        if parts < 3 {
            return Self::record_circuit(build(0..parts)?);
        }
        // Two parts first, then one each: the difference of the first two is one part's size.
        let ranges: Vec<_> = std::iter::once(0..2)
            .chain((2..parts).map(|i| i..i + 1))
            .collect();
        let recorders = ranges
            .par_iter()
            .map(|range| Recorder::of(build(range.clone())?))
            .collect::<Result<Vec<_>, SynthesisError>>()?;
        Self::finish(Recorder::merge(&ranges, recorders)?)
    }

    /// The matrices of what `recorder` recorded, the input-independence rows added.
    fn finish(mut recorder: Recorder) -> Result<Self, SynthesisError> {
        let inputs = recorder.inputs;
        enforce_input_independence(&mut recorder, inputs);
        if recorder.too_large {
            return Err(SynthesisError::PolynomialDegreeTooLarge);
        }
        let [mut a, mut b, mut c] = recorder.matrices.map(|m| m.csr);
        for m in [&mut a, &mut b, &mut c] {
            m.row_ends.shrink_to_fit();
            m.columns.shrink_to_fit();
            m.coefficients.shrink_to_fit();
            m.table.shrink_to_fit();
        }
        // The densities follow from the matrices (zero terms are not in them), as the direct
        // synthesis tracks them: A over aux only (inputs are dense in A by construction), B
        // over both.
        let shape = CircuitShape {
            constraints: a.row_ends.len(),
            aux: recorder.aux,
            inputs,
        };
        // The recording's growing vectors (and a split recording's parts) are freed by now;
        // their pages go back rather than stay in the allocator beside a prover's plan.
        crate::rss::release_free_heap();
        Ok(Self::with_densities(a, b, c, shape))
    }

    fn with_densities(a: Csr, b: Csr, c: Csr, shape: CircuitShape) -> Self {
        Self {
            a_aux_density: density(shape.aux, a.aux_columns()),
            b_input_density: density(shape.inputs, b.input_columns()),
            b_aux_density: density(shape.aux, b.aux_columns()),
            a,
            b,
            c,
            shape,
        }
    }

    /// Matrices read back from a file: each must have one row per constraint, rows that end
    /// within its arrays in order, stored coefficients as its columns say, and variables within
    /// the shape; what is wrong otherwise.
    fn from_parts(a: Csr, b: Csr, c: Csr, shape: CircuitShape) -> Result<Self, String> {
        for (name, m) in [("A", &a), ("B", &b), ("C", &c)] {
            m.check(shape).map_err(|e| format!("matrix {name}: {e}"))?;
        }
        Ok(Self::with_densities(a, b, c, shape))
    }

    /// Whether two recordings are of the same circuit (tests compare split and whole).
    pub fn same_as(&self, other: &Self) -> bool {
        self.a == other.a
            && self.b == other.b
            && self.c == other.c
            && self.shape == other.shape
            && self.a_aux_density.bv == other.a_aux_density.bv
            && self.b_input_density.bv == other.b_input_density.bv
            && self.b_aux_density.bv == other.b_aux_density.bv
    }

    /// Heap bytes held: what the sizing counts once per process and circuit size.
    pub fn heap_bytes(&self) -> u64 {
        let densities = (2 * self.shape.aux + self.shape.inputs) / 8;
        self.a.heap_bytes() + self.b.heap_bytes() + self.c.heap_bytes() + densities as u64
    }

    /// The bytes [`R1csMatrices::heap_bytes`] will report once the circuit these counts are of
    /// is recorded: what the sizing counts before recording (a 2^27 partition's matrices take
    /// a synthesis to record).
    pub fn predicted_heap_bytes(counts: &R1csCounts) -> u64 {
        let rows = 3 * counts.constraints as u64 * size_of::<[u32; 2]>() as u64;
        let columns = counts.nonzeros.iter().sum::<u64>() * size_of::<u32>() as u64;
        let coefficients = counts.stored_coefficients.iter().sum::<u64>() * size_of::<u32>() as u64;
        let tables = counts
            .stored_coefficients
            .iter()
            .map(|&stored| stored.min(PREDICTED_TABLE_ENTRIES) * size_of::<Fr>() as u64)
            .sum::<u64>();
        let densities = ((2 * counts.aux + counts.inputs) / 8) as u64;
        rows + columns + coefficients + tables + densities
    }

    /// Distinct stored coefficients in each matrix.
    pub fn table_entries(&self) -> [usize; 3] {
        [&self.a, &self.b, &self.c].map(|m| m.table.len())
    }

    /// Whether [`R1csMatrices::predicted_heap_bytes`] of `counts` (these matrices' circuit's)
    /// predicted these: every table within its bound, and the bytes exact but for the tables'
    /// (predicted at the bound).
    pub fn check_predicted(&self, counts: &R1csCounts) -> Result<(), String> {
        let entries = self.table_entries();
        let table_bytes = |entries: u64| entries * size_of::<Fr>() as u64;
        let mut predicted_tables = 0;
        for (stored, entries) in counts.stored_coefficients.iter().zip(entries) {
            let bound = stored.min(&PREDICTED_TABLE_ENTRIES);
            if entries as u64 > *bound {
                return Err(format!("a table of {entries} coefficients, over {bound}"));
            }
            predicted_tables += table_bytes(*bound);
        }
        let recorded_tables = entries.iter().map(|&e| table_bytes(e as u64)).sum::<u64>();
        let expected = self.heap_bytes() - recorded_tables + predicted_tables;
        let predicted = Self::predicted_heap_bytes(counts);
        if predicted != expected {
            return Err(format!(
                "predicted {predicted} bytes, recorded {} with tables {entries:?}",
                self.heap_bytes()
            ));
        }
        Ok(())
    }

    /// Nonzero entries of A, B and C together.
    pub fn nonzeros(&self) -> usize {
        self.a.columns.len() + self.b.columns.len() + self.c.columns.len()
    }

    pub fn shape(&self) -> CircuitShape {
        self.shape
    }
}

/// A density over `variables` variables marking those in `used`.
fn density(variables: usize, used: impl Iterator<Item = usize>) -> DensityTracker {
    let mut tracker = DensityTracker::new();
    for _ in 0..variables {
        tracker.add_element();
    }
    for index in used {
        tracker.inc(index);
    }
    tracker
}

/// Synthesizes `circuit` in two passes over `matrices` (recorded for its circuit and size):
/// the same [`Synthesized`] as [`super::synthesize`], a, b, c, assignment and densities.
pub fn synthesize_from_matrices<C: Circuit<Fr>>(
    circuit: C,
    matrices: &R1csMatrices,
) -> Result<Synthesized, SynthesisError> {
    synthesize_from_matrices_into(circuit, matrices, &EvalAlloc::heap())
}

/// [`synthesize_from_matrices`], with the a/b/c evaluations in `alloc`.
pub fn synthesize_from_matrices_into<C: Circuit<Fr>>(
    circuit: C,
    matrices: &R1csMatrices,
    alloc: &EvalAlloc,
) -> Result<Synthesized, SynthesisError> {
    let shape = matrices.shape;
    let mut witness = Witness::with_capacity(shape.inputs, shape.aux);
    witness.alloc_one()?;
    circuit.synthesize(&mut witness)?;
    if witness.inputs.len() != shape.inputs || witness.aux.len() != shape.aux {
        // A circuit whose structure depends on its witness cannot share matrices.
        return Err(SynthesisError::IoError(std::io::Error::new(
            std::io::ErrorKind::InvalidData,
            format!(
                "the witness pass allocated {} inputs and {} aux variables, the R1CS matrices were recorded for {} and {}",
                witness.inputs.len(),
                witness.aux.len(),
                shape.inputs,
                shape.aux
            ),
        )));
    }
    let (inputs, aux) = witness.into_parts();
    Ok(products(matrices, inputs, aux, alloc))
}

/// a, b, c as `matrices` times the assignment (inputs and aux of the whole circuit, checked
/// against the matrices' shape by the caller), with the densities the matrices imply.
pub(super) fn products(
    matrices: &R1csMatrices,
    inputs: Vec<Fr>,
    aux: Vec<Fr>,
    alloc: &EvalAlloc,
) -> Synthesized {
    let m = domain_size(matrices.a.row_ends.len());
    let mut products = [(); 3].map(|()| evaluations(m, alloc));
    for (matrix, out) in [&matrices.a, &matrices.b, &matrices.c]
        .into_iter()
        .zip(&mut products)
    {
        matrix.multiply_into(&inputs, &aux, out);
    }
    let [a, b, c] = products;
    Synthesized {
        a,
        b,
        c,
        inputs,
        aux,
        a_aux_density: matrices.a_aux_density.clone(),
        b_input_density: matrices.b_input_density.clone(),
        b_aux_density: matrices.b_aux_density.clone(),
    }
}

/// The distinct stored coefficients a matrix is predicted to have at most (the counts do not
/// say): a PoRep partition has 1,329 in A, 10 in B, 448 in C (tests hold every circuit they
/// record to this bound), so at most 2 MiB per matrix is counted.
pub const PREDICTED_TABLE_ENTRIES: u64 = 1 << 16;

/// Records each constraint as rows of A, B, C.
struct Recorder {
    matrices: [CsrBuilder; 3],
    inputs: usize,
    aux: usize,
    too_large: bool,
}

impl Recorder {
    /// `circuit` recorded after the constant ONE (the input-independence rows not yet added).
    fn of<C: Circuit<Fr>>(circuit: C) -> Result<Self, SynthesisError> {
        let mut recorder = Recorder {
            matrices: Default::default(),
            inputs: 0,
            aux: 0,
            too_large: false,
        };
        recorder.alloc_input(|| "one", || Ok(Fr::ONE))?;
        circuit.synthesize(&mut recorder)?;
        Ok(recorder)
    }

    /// (inputs, aux, rows) recorded.
    fn sizes(&self) -> [usize; 3] {
        [self.inputs, self.aux, self.matrices[0].csr.row_ends.len()]
    }

    /// One recording of the whole circuit from recordings of sub-circuits (`ranges[i]` the
    /// parts of `recorders[i]`; the first of two parts, the second of one): the first whole,
    /// then every other's rows past the prefix, their own variables moved past the parts
    /// before them. Sizes and prefixes are checked, never assumed.
    fn merge(
        ranges: &[std::ops::Range<usize>],
        recorders: Vec<Recorder>,
    ) -> Result<Self, SynthesisError> {
        let (s0, s1) = (recorders[0].sizes(), recorders[1].sizes());
        let mut per_part = [0; 3];
        let mut prefix = [0; 3];
        for x in 0..3 {
            per_part[x] = s0[x].checked_sub(s1[x]).ok_or_else(|| {
                split_error("a sub-circuit of two parts is smaller than one of one part")
            })?;
            prefix[x] = s1[x]
                .checked_sub(per_part[x])
                .ok_or_else(|| split_error("a part is larger than a sub-circuit of it"))?;
        }
        for (range, recorder) in ranges.iter().zip(&recorders) {
            let sizes = recorder.sizes();
            if (0..3).any(|x| sizes[x] != prefix[x] + range.len() * per_part[x])
                || recorder.too_large
            {
                return Err(split_error(&format!(
                    "sub-circuit of parts {range:?} recorded (inputs, aux, rows) {sizes:?}, not the \
                     prefix {prefix:?} and {} x {per_part:?}",
                    range.len()
                )));
            }
        }
        let [p_inputs, p_aux, p_rows] = prefix;
        let mut recorders = recorders.into_iter();
        let mut merged = recorders.next().expect("at least three sub-circuits");
        for (range, recorder) in ranges[1..].iter().zip(recorders) {
            let inputs_at = p_inputs + range.start * per_part[0];
            let aux_at = p_aux + range.start * per_part[1];
            for (into, from) in merged.matrices.iter_mut().zip(&recorder.matrices) {
                if !into.append_past_prefix(
                    &from.csr,
                    p_rows,
                    [p_inputs, p_aux],
                    [inputs_at, aux_at],
                ) {
                    return Err(split_error(&format!(
                        "sub-circuit of parts {range:?} has other prefix rows than the first's: \
                         its parts are not independent"
                    )));
                }
            }
            merged.inputs += per_part[0];
            merged.aux += per_part[1];
        }
        Ok(merged)
    }
}

fn split_error(message: &str) -> SynthesisError {
    SynthesisError::IoError(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        format!("recording the R1CS matrices in parts: {message}"),
    ))
}

impl ConstraintSystem<Fr> for Recorder {
    type Root = Self;

    fn alloc<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        f()?;
        self.aux += 1;
        Ok(Variable::new_unchecked(Index::Aux(self.aux - 1)))
    }

    fn alloc_input<F, A, AR>(&mut self, _: A, f: F) -> Result<Variable, SynthesisError>
    where
        F: FnOnce() -> Result<Fr, SynthesisError>,
        A: FnOnce() -> AR,
        AR: Into<String>,
    {
        f()?;
        self.inputs += 1;
        Ok(Variable::new_unchecked(Index::Input(self.inputs - 1)))
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
        // `enforce` cannot fail: a circuit too large to index is remembered and refused by
        // `record` (beyond 2^29 variables or 2^32 nonzeros per matrix, far above 2^27-constraint
        // partitions).
        for (matrix, lc) in self.matrices.iter_mut().zip([&a, &b, &c]) {
            if !matrix.push_row(lc) {
                self.too_large = true;
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

/// The witness pass: values only; `enforce` does nothing, so the gadgets' linear
/// combinations are never built. Extensible: a circuit that synthesizes its independent parts
/// in sub-systems of their own (Filecoin's PoSt, by sectors) does so on every core.
pub(super) struct Witness {
    pub(super) inputs: Vec<Fr>,
    pub(super) aux: Vec<Fr>,
}

impl Witness {
    pub(super) fn with_capacity(inputs: usize, aux: usize) -> Self {
        Self {
            inputs: Vec::with_capacity(inputs),
            aux: Vec::with_capacity(aux),
        }
    }

    /// Allocates the constant ONE, input 0 of every circuit.
    pub(super) fn alloc_one(&mut self) -> Result<(), SynthesisError> {
        self.alloc_input(|| "one", || Ok(Fr::ONE)).map(drop)
    }

    pub(super) fn into_parts(self) -> (Vec<Fr>, Vec<Fr>) {
        (self.inputs, self.aux)
    }
}

impl ConstraintSystem<Fr> for Witness {
    type Root = Self;

    fn new() -> Self {
        Self::with_capacity(0, 0)
    }

    fn is_extensible() -> bool {
        true
    }

    /// Appends a sub-system's variables; its input 0 is its own ONE, which this one has.
    fn extend(&mut self, other: &Self) {
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

    fn enforce<A, AR, LA, LB, LC>(&mut self, _: A, _: LA, _: LB, _: LC)
    where
        A: FnOnce() -> AR,
        AR: Into<String>,
        LA: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LB: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
        LC: FnOnce(LinearCombination<Fr>) -> LinearCombination<Fr>,
    {
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
