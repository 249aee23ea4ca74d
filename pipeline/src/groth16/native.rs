//! One partition's synthesis from a native witness (ADR 0038): the prefix and every part
//! written at once, each by its own rayon task straight into its slots of the whole assignment
//! (no gadgets, no per-part vectors to stitch), then a, b, c from the R1CS matrices.

use std::mem::MaybeUninit;
use std::time::Instant;

use bellperson::SynthesisError;
use blstrs::Scalar as Fr;
use ff::Field;
use proofpipe_kernels::EvalAlloc;
use rayon::prelude::*;

use super::assignment::Synthesized;
use super::matrices::{R1csMatrices, products};
use crate::witness::{Counter, NativeWitness, SlotSink};

/// Synthesizes `witness`'s circuit, whose R1CS `matrices` hold: bit for bit what
/// [`super::synthesize_from_matrices`] makes of the circuit's own synthesis when the native
/// witness is the circuit's. A witness of another size than the matrices' is refused.
///
/// The prefix and every part are written at once, each by its own rayon task into its slots:
/// the slots are laid out first from what each piece writes ([`Layout::of`]).
pub fn synthesize_native_from_matrices_into<W: NativeWitness>(
    witness: &W,
    matrices: &R1csMatrices,
    alloc: &EvalAlloc,
) -> Result<Synthesized, SynthesisError> {
    let shape = matrices.shape();
    let started = Instant::now();
    let layout = Layout::of(witness, shape.inputs, shape.aux)?;
    let parts = witness.parts();

    let mut inputs: Vec<Fr> = Vec::with_capacity(shape.inputs);
    let mut aux: Vec<Fr> = Vec::with_capacity(shape.aux);
    // Input 0 is the constant one; the prefix writes from input 1 on.
    inputs.push(Fr::ONE);
    let input_slots = &mut inputs.spare_capacity_mut()[..shape.inputs - 1];
    let aux_slots = &mut aux.spare_capacity_mut()[..shape.aux];
    let tasks: Vec<_> = chunks(input_slots, layout.pieces.iter().map(|p| p.0))
        .zip(chunks(aux_slots, layout.pieces.iter().map(|p| p.1)))
        .collect();
    let unfilled = tasks
        .into_par_iter()
        .enumerate()
        .map(|(piece, (input_slots, aux_slots))| {
            let mut sink = SlotSink::new(input_slots, aux_slots);
            match piece {
                0 => witness.prefix(&mut sink),
                i => witness.part(i - 1, &mut sink),
            }
            (piece, sink.written(), sink.filled())
        })
        .filter(|w| !w.2)
        .min_by_key(|w| w.0);
    if let Some((piece, (wrote_inputs, wrote_aux), _)) = unfilled {
        let (inputs, aux) = layout.pieces[piece];
        let what = match piece {
            0 => "prefix".to_string(),
            i => format!("part {}", i - 1),
        };
        return Err(mismatch(format!(
            "the native witness's {what} wrote {wrote_inputs} inputs and {wrote_aux} aux where \
             its count said {inputs} and {aux}: it is not this circuit's witness"
        )));
    }
    // SAFETY: every piece filled its slots exactly (checked above), and the slots tile the
    // spare capacity up to the shape's sizes (checked by the layout).
    unsafe {
        inputs.set_len(shape.inputs);
        aux.set_len(shape.aux);
    }
    let witnessed = started.elapsed();
    let synthesized = products(matrices, inputs, aux, alloc);
    tracing::debug!(
        parts,
        witness_s = witnessed.as_secs_f64(),
        products_s = (started.elapsed() - witnessed).as_secs_f64(),
        "partition synthesized from its native witness"
    );
    Ok(synthesized)
}

/// Where each piece of a native witness goes: (inputs, aux) of the prefix (after input 0), then
/// of each part, in order.
#[derive(Debug, PartialEq, Eq)]
struct Layout {
    pieces: Vec<(usize, usize)>,
}

impl Layout {
    /// Counts the prefix (and, where parts differ, every part, on every core) with a sink that
    /// keeps nothing; alike parts share what the prefix leaves of the recorded `inputs` and
    /// `aux`. A witness whose pieces do not add up to them is refused.
    fn of<W: NativeWitness>(
        witness: &W,
        inputs: usize,
        aux: usize,
    ) -> Result<Self, SynthesisError> {
        let mut prefix = Counter::default();
        witness.prefix(&mut prefix);
        let parts = witness.parts();
        let refused = |why: String| {
            mismatch(format!(
                "the native witness's prefix ({} inputs, {} aux) and {parts} parts {why} the \
                 recorded {inputs} inputs and {aux} aux",
                prefix.inputs + 1,
                prefix.aux
            ))
        };
        // Input 0, the constant one, is the synthesis's, not the prefix's.
        let (Some(rest_inputs), Some(rest_aux)) = (
            inputs.checked_sub(prefix.inputs + 1),
            aux.checked_sub(prefix.aux),
        ) else {
            return Err(refused("exceed".into()));
        };
        let mut pieces = Vec::with_capacity(parts + 1);
        pieces.push((prefix.inputs, prefix.aux));
        if witness.alike_parts() {
            let per_part = |rest: usize| match parts {
                0 => (rest == 0).then_some(0),
                n => rest.is_multiple_of(n).then_some(rest / n),
            };
            let (Some(part_inputs), Some(part_aux)) = (per_part(rest_inputs), per_part(rest_aux))
            else {
                return Err(refused("cannot make".into()));
            };
            pieces.extend(std::iter::repeat_n((part_inputs, part_aux), parts));
        } else {
            let counted: Vec<(usize, usize)> = (0..parts)
                .into_par_iter()
                .map(|i| {
                    let mut counter = Counter::default();
                    witness.part(i, &mut counter);
                    (counter.inputs, counter.aux)
                })
                .collect();
            let total = counted
                .iter()
                .fold((0, 0), |(i, a), &(pi, pa)| (i + pi, a + pa));
            if total != (rest_inputs, rest_aux) {
                return Err(refused(format!(
                    "(writing {} inputs and {} aux) do not make",
                    total.0, total.1
                )));
            }
            pieces.extend(counted);
        }
        Ok(Self { pieces })
    }
}

/// `slots` in consecutive chunks of `sizes` (empty chunks for pieces that write none of them).
fn chunks(
    slots: &mut [MaybeUninit<Fr>],
    sizes: impl Iterator<Item = usize>,
) -> impl Iterator<Item = &mut [MaybeUninit<Fr>]> {
    let mut rest = slots;
    sizes.map(move |size| {
        let (chunk, tail) = std::mem::take(&mut rest).split_at_mut(size);
        rest = tail;
        chunk
    })
}

fn mismatch(message: String) -> SynthesisError {
    SynthesisError::IoError(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        message,
    ))
}
