//! One partition's synthesis on every core (ADR 0023): the witness pass split by the
//! circuit's independent parts, then a, b, c from the R1CS matrices with the rows split.
//!
//! A Filecoin partition is a small common prefix (public commitments, their bits) followed by
//! independent parts of one shape each: PoRep's challenges, PoSt's sectors. A sub-circuit of
//! the prefix and some of the parts allocates the prefix's variables, then those parts', in
//! the order the whole circuit does; so the whole witness is the first sub-circuit's, then
//! every other's past the prefix. The prefix's size follows from the sizes alone (below), and
//! every sub-circuit's prefix must equal the first's: nothing is assumed that is not checked.

use std::ops::Range;
use std::time::Instant;

use bellperson::{Circuit, SynthesisError};
use blstrs::Scalar as Fr;
use proofpipe_kernels::EvalAlloc;
use rayon::prelude::*;

use super::assignment::Synthesized;
use super::matrices::{R1csMatrices, Witness, products};

/// Synthesizes a circuit of `parts` uniform independent parts after a common prefix, from
/// sub-circuits `build(range)` (the prefix and the parts in `range`), each on its own rayon
/// task; a, b, c from `matrices` (recorded for the whole circuit). Bit for bit what
/// [`super::synthesize_from_matrices`] makes of the whole circuit.
pub fn synthesize_split_from_matrices_into<C, B>(
    parts: usize,
    build: B,
    matrices: &R1csMatrices,
    alloc: &EvalAlloc,
) -> Result<Synthesized, SynthesisError>
where
    C: Circuit<Fr>,
    B: Fn(Range<usize>) -> Result<C, SynthesisError> + Sync,
{
    let shape = matrices.shape();
    let started = Instant::now();
    // One task per part: rayon balances them over its threads, and a split that does not
    // depend on the machine is checked the same everywhere (2 KiB PoRep has 2 challenges).
    let ranges = part_ranges(parts, parts);
    let witnesses = ranges
        .par_iter()
        .map(|range| {
            // Room for the parts and about one more for the prefix, so the vectors (~230 MB
            // per 32 GiB PoRep challenge) are not regrown and copied as they fill.
            let share = |total: usize| total / parts.max(1) * (range.len() + 1);
            let mut witness = Witness::with_capacity(share(shape.inputs), share(shape.aux));
            witness.alloc_one()?;
            build(range.clone())?.synthesize(&mut witness)?;
            Ok(witness)
        })
        .collect::<Result<Vec<_>, SynthesisError>>()?;
    let witnessed = started.elapsed();
    let sizes: Vec<(usize, usize)> = witnesses
        .iter()
        .map(|w| (w.inputs.len(), w.aux.len()))
        .collect();
    let counts: Vec<usize> = ranges.iter().map(Range::len).collect();
    let layout_inputs = Layout::solve(&counts, sizes.iter().map(|s| s.0), shape.inputs);
    let layout_aux = Layout::solve(&counts, sizes.iter().map(|s| s.1), shape.aux);
    let (Some(layout_inputs), Some(layout_aux)) = (layout_inputs, layout_aux) else {
        return Err(mismatch(format!(
            "sub-circuits of {counts:?} parts allocated (inputs, aux) {sizes:?}, which is no \
             common prefix and uniform parts adding up to the recorded {} inputs and {} aux",
            shape.inputs, shape.aux
        )));
    };
    let assignments: Vec<(Vec<Fr>, Vec<Fr>)> =
        witnesses.into_iter().map(Witness::into_parts).collect();
    let (first_inputs, first_aux) = &assignments[0];
    for (i, (w_inputs, w_aux)) in assignments.iter().enumerate().skip(1) {
        if w_inputs[..layout_inputs.prefix] != first_inputs[..layout_inputs.prefix]
            || w_aux[..layout_aux.prefix] != first_aux[..layout_aux.prefix]
        {
            return Err(mismatch(format!(
                "sub-circuit {i}'s prefix differs from the first's: its parts are not \
                 independent of the rest"
            )));
        }
    }
    let inputs = stitch(assignments.iter().map(|p| &p.0[..]), layout_inputs.prefix);
    let aux = stitch(assignments.iter().map(|p| &p.1[..]), layout_aux.prefix);
    drop(assignments);
    let stitched = started.elapsed();
    let synthesized = products(matrices, inputs, aux, alloc);
    // Where a partition's synthesis time goes, for profiling on the machine that proves.
    tracing::debug!(
        parts,
        witness_s = witnessed.as_secs_f64(),
        stitch_s = (stitched - witnessed).as_secs_f64(),
        products_s = (started.elapsed() - stitched).as_secs_f64(),
        "partition synthesized on every core"
    );
    Ok(synthesized)
}

/// The whole assignment from the sub-circuits' ones: the first whole, the others past the
/// common `prefix`, copied in parallel (a 32 GiB PoRep partition's aux is 4.2 GB: seconds on
/// one thread, most of it faulting in the new pages).
fn stitch<'a>(pieces: impl Iterator<Item = &'a [Fr]>, prefix: usize) -> Vec<Fr> {
    /// Elements per copy task: 8 MiB.
    const CHUNK: usize = 1 << 18;
    let pieces: Vec<&[Fr]> = pieces
        .enumerate()
        .map(|(i, piece)| if i == 0 { piece } else { &piece[prefix..] })
        .collect();
    let total = pieces.iter().map(|p| p.len()).sum();
    let mut out = Vec::with_capacity(total);
    let mut rest = &mut out.spare_capacity_mut()[..total];
    let mut tasks = Vec::new();
    for piece in &pieces {
        let (dst, tail) = rest.split_at_mut(piece.len());
        rest = tail;
        tasks.extend(dst.chunks_mut(CHUNK).zip(piece.chunks(CHUNK)));
    }
    tasks.into_par_iter().for_each(|(dst, src)| {
        for (d, s) in dst.iter_mut().zip(src) {
            d.write(*s);
        }
    });
    // SAFETY: the pieces' chunks cover the first `total` elements, each written once above.
    unsafe { out.set_len(total) };
    out
}

/// Splits `parts` into at most `tasks` contiguous ranges of near-equal length (the longer
/// first), at least one part each.
fn part_ranges(parts: usize, tasks: usize) -> Vec<Range<usize>> {
    let tasks = tasks.clamp(1, parts.max(1));
    let (base, longer) = (parts / tasks, parts % tasks);
    let mut start = 0;
    (0..tasks)
        .map(|t| {
            let len = base + usize::from(t < longer);
            let range = start..start + len;
            start += len;
            range
        })
        .collect()
}

/// Where a sub-circuit's variables go: the common prefix, then `per_part` for each part.
#[derive(Debug, PartialEq, Eq)]
struct Layout {
    prefix: usize,
    per_part: usize,
}

impl Layout {
    /// The prefix and per-part sizes that sub-circuits of `counts[i]` parts allocating
    /// `sizes[i]` variables imply, when they also add up to `total` for the whole circuit
    /// (`prefix + parts * per_part`); None if no such layout explains them. With one
    /// sub-circuit the whole is the sub-circuit: prefix `total`, no split to solve.
    fn solve(counts: &[usize], sizes: impl Iterator<Item = usize>, total: usize) -> Option<Self> {
        let sizes: Vec<usize> = sizes.collect();
        if sizes.len() != counts.len() || sizes.is_empty() {
            return None;
        }
        if sizes.len() == 1 {
            return (sizes[0] == total).then_some(Self {
                prefix: total,
                per_part: 0,
            });
        }
        // Sum of sizes = k * prefix + parts * per_part, and total = prefix + parts * per_part.
        let k = sizes.len();
        let extra = sizes.iter().sum::<usize>().checked_sub(total)?;
        if extra % (k - 1) != 0 {
            return None;
        }
        let prefix = extra / (k - 1);
        let parts: usize = counts.iter().sum();
        let spread = total.checked_sub(prefix)?;
        if parts == 0 || spread % parts != 0 {
            return None;
        }
        let per_part = spread / parts;
        counts
            .iter()
            .zip(&sizes)
            .all(|(&n, &size)| size == prefix + n * per_part)
            .then_some(Self { prefix, per_part })
    }
}

fn mismatch(message: String) -> SynthesisError {
    SynthesisError::IoError(std::io::Error::new(
        std::io::ErrorKind::InvalidData,
        message,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parts_are_split_into_near_equal_contiguous_ranges() {
        assert_eq!(part_ranges(18, 16).len(), 16);
        assert_eq!(part_ranges(18, 16)[0], 0..2);
        assert_eq!(part_ranges(18, 16)[1], 2..4);
        assert_eq!(part_ranges(18, 16)[2], 4..5);
        assert_eq!(part_ranges(18, 16).last(), Some(&(17..18)));
        assert_eq!(part_ranges(2, 16), vec![0..1, 1..2]);
        assert_eq!(part_ranges(5, 1), vec![0..5]);
        assert_eq!(part_ranges(0, 4), vec![0..0]);
        for (parts, tasks) in [(18, 16), (7, 3), (100, 7), (1, 1)] {
            let ranges = part_ranges(parts, tasks);
            assert_eq!(ranges.iter().map(Range::len).sum::<usize>(), parts);
            assert!(ranges.windows(2).all(|w| w[0].end == w[1].start));
        }
    }

    #[test]
    fn the_layout_is_solved_from_the_sizes_and_checked() {
        // prefix 10, 3 per part, 5 parts in chunks of 2, 2, 1: sizes 16, 16, 13, total 25.
        let layout = Layout::solve(&[2, 2, 1], [16, 16, 13].into_iter(), 25);
        assert_eq!(
            layout,
            Some(Layout {
                prefix: 10,
                per_part: 3
            })
        );
        // A chunk that allocated one more than its share: no layout.
        assert_eq!(
            Layout::solve(&[2, 2, 1], [16, 17, 13].into_iter(), 26),
            None
        );
        // Sizes that do not add up to the recorded total.
        assert_eq!(
            Layout::solve(&[2, 2, 1], [16, 16, 13].into_iter(), 40),
            None
        );
        // One chunk is the whole circuit.
        assert_eq!(
            Layout::solve(&[5], [25].into_iter(), 25),
            Some(Layout {
                prefix: 25,
                per_part: 0
            })
        );
        assert_eq!(Layout::solve(&[5], [24].into_iter(), 25), None);
    }
}
