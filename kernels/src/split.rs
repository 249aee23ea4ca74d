//! The split MSM's classification of an assignment's scalars, on the host.
//!
//! An assignment's scalars are mostly 0 and 1. The split MSM sums the bases of the ones with a
//! bitmap batch addition and runs Pippenger only over the rest, the tail. Classifying on the
//! host, in the pass that already reads the scalars, means the device gets two bitmaps, the
//! tail's offsets and the tail's scalars (a few percent of the bytes) instead of every
//! scalar: the upload of n x 32 B that ran inside the device lock shrinks to ~n / 2.7 B.
//!
//! The layout is what the device's batch addition reads: bit j of word w stands for scalar
//! 32w + j, and the words cover whole 1024-bit chunks (the words past n are zero).

use blst::blst_fr;
use blstrs::Scalar as Fr;
use ff::Field;
use rayon::prelude::*;

/// Scalars per bitmap word.
const WORD: usize = 32;
/// Words per chunk the device's batch addition reads at a time (1024 bits).
const CHUNK_WORDS: usize = 32;
/// Words classified by one task (2^17 scalars).
const TASK_WORDS: usize = 1 << 12;

/// A split pays when at least this share of the scalars are ones (n / 16)...
pub const SPLIT_MIN_ONES_DIV: usize = 16;
/// ...and at most this share are neither 0 nor 1 (n / 4). proofpipe.cu's device-side
/// classification uses the same rule.
pub const SPLIT_MAX_TAIL_DIV: usize = 4;

/// Scalars classified for a split MSM.
#[derive(Debug, PartialEq)]
pub struct Classified {
    /// The scalar count.
    pub n: usize,
    /// Bit j of word w set iff scalar 32w + j is one.
    pub ones: Vec<u32>,
    /// Bit j of word w set iff scalar 32w + j is neither zero nor one.
    pub tails: Vec<u32>,
    /// Where word w's tail scalars start in `tail`: the exclusive prefix sum of the tail
    /// bits' counts.
    pub tail_start: Vec<u32>,
    /// The tail scalars in order (Montgomery form, as given).
    pub tail: Vec<Fr>,
    /// How many scalars are one.
    pub n_ones: usize,
}

impl Classified {
    /// The classification of `scalars`, or `None` when a split would not pay (fewer than
    /// n / 16 ones or more than n / 4 tail scalars: the MSM then runs plain). Parallel.
    pub fn of(scalars: &[Fr]) -> Option<Self> {
        let n = scalars.len();
        if n == 0 || u32::try_from(n).is_err() {
            return None;
        }
        let words = n.div_ceil(WORD * CHUNK_WORDS) * CHUNK_WORDS;
        let mut ones = vec![0u32; words];
        let mut tails = vec![0u32; words];
        let one = raw(&Fr::ONE);
        // Each task's words, and its tail count.
        let task_tails: Vec<usize> = ones
            .par_chunks_mut(TASK_WORDS)
            .zip(tails.par_chunks_mut(TASK_WORDS))
            .enumerate()
            .map(|(t, (ones, tails))| {
                let first = t * TASK_WORDS * WORD;
                let mut count = 0;
                for (w, (o, tl)) in ones.iter_mut().zip(tails.iter_mut()).enumerate() {
                    let start = (first + w * WORD).min(n);
                    let end = (start + WORD).min(n);
                    for (j, s) in scalars[start..end].iter().enumerate() {
                        let s = raw(s);
                        if s == one {
                            *o |= 1 << j;
                        } else if s != [0; 4] {
                            *tl |= 1 << j;
                        }
                    }
                    count += tl.count_ones() as usize;
                }
                count
            })
            .collect();
        let n_tail: usize = task_tails.iter().sum();
        let n_ones: usize = ones.par_iter().map(|w| w.count_ones() as usize).sum();
        if n_ones < n / SPLIT_MIN_ONES_DIV || n_tail > n / SPLIT_MAX_TAIL_DIV {
            return None;
        }
        let mut tail_start = vec![0u32; words];
        let mut tail = vec![Fr::ZERO; n_tail];
        // Each task's share of `tail`, cut in order.
        let mut shares = Vec::with_capacity(task_tails.len());
        let mut rest = &mut tail[..];
        for &count in &task_tails {
            let (share, next) = rest.split_at_mut(count);
            shares.push(share);
            rest = next;
        }
        let mut offset = 0u32;
        let task_offsets: Vec<u32> = task_tails
            .iter()
            .map(|&count| {
                let at = offset;
                offset += count as u32;
                at
            })
            .collect();
        tail_start
            .par_chunks_mut(TASK_WORDS)
            .zip(tails.par_chunks(TASK_WORDS))
            .zip(shares.into_par_iter().zip(task_offsets))
            .enumerate()
            .for_each(|(t, ((starts, tails), (share, at)))| {
                let first = t * TASK_WORDS * WORD;
                let mut next = 0usize;
                for (w, (start, &bits)) in starts.iter_mut().zip(tails).enumerate() {
                    *start = at + next as u32;
                    let mut bits = bits;
                    while bits != 0 {
                        let j = bits.trailing_zeros() as usize;
                        bits &= bits - 1;
                        share[next] = scalars[first + w * WORD + j];
                        next += 1;
                    }
                }
            });
        Some(Self {
            n,
            ones,
            tails,
            tail_start,
            tail,
            n_ones,
        })
    }

    /// Bitmap words: whole 1024-bit chunks covering n.
    pub fn words(&self) -> usize {
        self.ones.len()
    }
}

/// A scalar's Montgomery limbs (blstrs' Scalar is `repr(transparent)` over blst_fr).
fn raw(s: &Fr) -> [u64; 4] {
    blst_fr::from(*s).l
}

#[cfg(test)]
mod tests {
    use super::*;
    use rand_chacha::ChaCha8Rng;
    use rand_core::{RngCore, SeedableRng};

    fn boolean_heavy(rng: &mut ChaCha8Rng, n: usize, tail_per_mille: u32) -> Vec<Fr> {
        (0..n)
            .map(|_| {
                let r = rng.next_u32() % 1000;
                if r < tail_per_mille {
                    Fr::random(&mut *rng)
                } else if r.is_multiple_of(2) {
                    Fr::ONE
                } else {
                    Fr::ZERO
                }
            })
            .collect()
    }

    /// The classification, bit by bit, against a plain reading of the scalars.
    fn check(scalars: &[Fr], c: &Classified) {
        let n = scalars.len();
        assert_eq!(c.n, n);
        assert_eq!(c.words() % CHUNK_WORDS, 0);
        assert!(c.words() * WORD >= n && (c.words() - CHUNK_WORDS) * WORD < n);
        let mut tail = Vec::new();
        for (w, (&o, &t)) in c.ones.iter().zip(&c.tails).enumerate() {
            assert_eq!(c.tail_start[w] as usize, tail.len(), "word {w}");
            for j in 0..WORD {
                let i = w * WORD + j;
                let (is_one, is_tail) = (o >> j & 1 == 1, t >> j & 1 == 1);
                if i >= n {
                    assert!(!is_one && !is_tail, "past n at {i}");
                    continue;
                }
                let s = scalars[i];
                assert_eq!(is_one, s == Fr::ONE, "one at {i}");
                assert_eq!(is_tail, s != Fr::ONE && s != Fr::ZERO, "tail at {i}");
                if is_tail {
                    tail.push(s);
                }
            }
        }
        assert_eq!(c.tail, tail);
        assert_eq!(c.n_ones, scalars.iter().filter(|s| **s == Fr::ONE).count());
    }

    #[test]
    fn bits_offsets_and_tail_follow_the_scalars_at_every_size() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        // Within a word, across words and chunks, and across the tasks' boundaries.
        for n in [
            1,
            31,
            32,
            33,
            1023,
            1024,
            1025,
            5000,
            TASK_WORDS * WORD + 7,
            300_001,
        ] {
            for tail in [0, 30, 200] {
                let scalars = boolean_heavy(&mut rng, n, tail);
                match Classified::of(&scalars) {
                    Some(c) => check(&scalars, &c),
                    // Only tiny sizes may fall short of the ones a split needs.
                    None => assert!(n < 64, "n={n} tail={tail}"),
                }
            }
        }
    }

    #[test]
    fn a_split_that_would_not_pay_is_refused_as_the_device_refuses_it() {
        let n = 4096;
        let mut rng = ChaCha8Rng::seed_from_u64(6);
        let random: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
        assert_eq!(Classified::of(&random), None, "no ones");
        assert_eq!(Classified::of(&vec![Fr::ZERO; n]), None, "all zero");
        assert_eq!(Classified::of(&[]), None);
        // Exactly n/16 ones and n/4 tail: still split; one fewer one, or one more tail: not.
        let mut edge = vec![Fr::ZERO; n];
        edge[..n / 16].fill(Fr::ONE);
        edge[n / 16..n / 16 + n / 4].fill(Fr::from(2u64));
        check(&edge, &Classified::of(&edge).expect("at the limits"));
        let mut fewer = edge.clone();
        fewer[0] = Fr::ZERO;
        assert_eq!(Classified::of(&fewer), None, "one one short");
        let mut more = edge.clone();
        more[n - 1] = Fr::from(3u64);
        assert_eq!(Classified::of(&more), None, "one tail too many");
        let all_ones = vec![Fr::ONE; n];
        let c = Classified::of(&all_ones).unwrap();
        assert!(c.tail.is_empty() && c.n_ones == n);
    }
}
