//! One partition's synthesis from a native witness (ADR 0038): the prefix, then every part
//! written by its own rayon task straight into its slots of the whole assignment (no gadgets,
//! no per-part vectors to stitch), then a, b, c from the R1CS matrices.

use std::mem::MaybeUninit;
use std::time::Instant;

use bellperson::SynthesisError;
use blstrs::Scalar as Fr;
use ff::Field;
use proofpipe_kernels::EvalAlloc;
use rayon::prelude::*;

use super::assignment::Synthesized;
use super::matrices::{R1csMatrices, products};
use crate::witness::{Assignment, NativeWitness, SlotSink};

/// Synthesizes `witness`'s circuit, whose R1CS `matrices` hold: bit for bit what
/// [`super::synthesize_from_matrices`] makes of the circuit's own synthesis when the native
/// witness is the circuit's. A witness of another size than the matrices' is refused.
pub fn synthesize_native_from_matrices_into<W: NativeWitness>(
    witness: &W,
    matrices: &R1csMatrices,
    alloc: &EvalAlloc,
) -> Result<Synthesized, SynthesisError> {
    let shape = matrices.shape();
    let started = Instant::now();
    let mut prefix = Assignment::default();
    prefix.inputs.push(Fr::ONE);
    witness.prefix(&mut prefix);
    let parts = witness.parts();
    let per_part = |total: usize, prefix: usize| {
        let rest = total.checked_sub(prefix)?;
        match parts {
            0 => (rest == 0).then_some(0),
            n => rest.is_multiple_of(n).then_some(rest / n),
        }
    };
    let (Some(part_inputs), Some(part_aux)) = (
        per_part(shape.inputs, prefix.inputs.len()),
        per_part(shape.aux, prefix.aux.len()),
    ) else {
        return Err(mismatch(format!(
            "the native witness's prefix ({} inputs, {} aux) and {parts} parts cannot make the \
             recorded {} inputs and {} aux",
            prefix.inputs.len(),
            prefix.aux.len(),
            shape.inputs,
            shape.aux
        )));
    };

    let mut inputs: Vec<Fr> = Vec::with_capacity(shape.inputs);
    let mut aux: Vec<Fr> = Vec::with_capacity(shape.aux);
    inputs.extend_from_slice(&prefix.inputs);
    aux.extend_from_slice(&prefix.aux);
    let input_slots = &mut inputs.spare_capacity_mut()[..shape.inputs - prefix.inputs.len()];
    let aux_slots = &mut aux.spare_capacity_mut()[..shape.aux - prefix.aux.len()];
    let tasks: Vec<_> = chunks(input_slots, part_inputs, parts)
        .zip(chunks(aux_slots, part_aux, parts))
        .collect();
    let written: Vec<(usize, (usize, usize), bool)> = tasks
        .into_par_iter()
        .enumerate()
        .map(|(i, (input_slots, aux_slots))| {
            let mut sink = SlotSink::new(input_slots, aux_slots);
            witness.part(i, &mut sink);
            (i, sink.written(), sink.filled())
        })
        .collect();
    if let Some((i, (wrote_inputs, wrote_aux), _)) = written.iter().find(|w| !w.2) {
        return Err(mismatch(format!(
            "the native witness's part {i} wrote {wrote_inputs} inputs and {wrote_aux} aux where \
             the recorded circuit has {part_inputs} and {part_aux} per part: it is not this \
             circuit's witness"
        )));
    }
    // SAFETY: every part filled its slots exactly (checked above), and the slots tile the
    // spare capacity up to the shape's sizes.
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

/// `slots` in `parts` chunks of `size` (empty chunks when the parts allocate none of them).
fn chunks(
    slots: &mut [MaybeUninit<Fr>],
    size: usize,
    parts: usize,
) -> impl Iterator<Item = &mut [MaybeUninit<Fr>]> {
    let mut rest = slots;
    (0..parts).map(move |_| {
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
