//! The exponents a multi-scalar multiplication uses: all of them for a full query, the ones
//! its density marks for a sparse one, after checking that the bases cover them.
//!
//! A sparse gather is the GPU stage's largest piece of host work (a 32 GiB PoRep partition's
//! A query keeps 99.7% of 130M exponents: 4.2 GB out). It is done in two parallel passes over
//! the density's words: count the used variables per chunk, then let each chunk write its own
//! range of the output, located by the counts' prefix sums. The output is written in place
//! (a backend's page-locked staging buffer, or a new vector), never collected and copied.
//! The passes run on the GPU stage's own host pool ([`on_host_pool`]): on rayon's global pool
//! they queued behind synthesis tasks (~1 s per gather at 32 GiB while partitions synthesize).

use std::mem::MaybeUninit;
use std::sync::OnceLock;

use blstrs::Scalar as Fr;
use ec_gpu_gen::multiexp_cpu::DensityTracker;
use rayon::prelude::*;

use crate::backend::{Bases, Density};
use crate::error::KernelError;

/// Below this many exponents a full gather runs on the calling thread.
pub(crate) const PARALLEL_GATHER_MIN: usize = 1 << 14;

const WORD_BITS: usize = usize::BITS as usize;

/// Density words per parallel task: 2^18 variables, 8 MiB of exponents.
const CHUNK_WORDS: usize = 1 << 12;

/// Host threads of the GPU stage, at most: the gather is bound by memory bandwidth, which a
/// few threads fill, and the rest of the cores are synthesizing.
const HOST_POOL_MAX_THREADS: usize = 8;

/// Runs `f` on the GPU stage's host thread pool (or on the caller's pool if it could not be
/// made). Its own pool, not rayon's global one: synthesis keeps the global pool's workers
/// busy with tasks of their own, and work injected from a GPU-stage thread waits behind them.
pub(crate) fn on_host_pool<R: Send>(f: impl FnOnce() -> R + Send) -> R {
    static POOL: OnceLock<Option<rayon::ThreadPool>> = OnceLock::new();
    let pool = POOL.get_or_init(|| {
        let threads = std::thread::available_parallelism()
            .map_or(1, |n| n.get())
            .min(HOST_POOL_MAX_THREADS);
        rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .thread_name(|i| format!("gpu-stage-host-{i}"))
            .build()
            .inspect_err(|e| tracing::warn!(error = %e, "no GPU-stage host pool: gathering on rayon's global pool"))
            .ok()
    });
    match pool {
        Some(pool) => pool.install(f),
        None => f(),
    }
}

/// Fails unless `bases[skip..]` has a point for each of `used` exponents.
pub(crate) fn check_bases<G>(bases: &Bases<G>, used: usize) -> Result<(), KernelError> {
    let available = bases.points.len().saturating_sub(bases.skip);
    if available < used {
        return Err(KernelError::BasesTooShort {
            bases: bases.points.len(),
            skip: bases.skip,
            exponents: used,
        });
    }
    Ok(())
}

/// Where the used exponents of a sparse query lie: per chunk of the density's words, how many
/// variables it marks. Made once per gather; [`SparseGather::fill`] writes them.
pub(crate) struct SparseGather<'a> {
    words: &'a [usize],
    /// Variables considered: the exponents and the density zipped (a variable beyond either
    /// is unused).
    n: usize,
    per_chunk: Vec<usize>,
    used: usize,
}

impl<'a> SparseGather<'a> {
    /// Counts the used variables of `density` among the first `exponents` (in parallel on the
    /// calling pool).
    pub(crate) fn new(density: &'a DensityTracker, exponents: usize) -> Self {
        let n = exponents.min(density.bv.len());
        let words = density.bv.as_raw_slice();
        let word_count = n.div_ceil(WORD_BITS);
        let per_chunk: Vec<usize> = (0..word_count.div_ceil(CHUNK_WORDS))
            .into_par_iter()
            .map(|c| {
                chunk_words(c, word_count)
                    .map(|w| live_bits(words, w, n).count_ones() as usize)
                    .sum()
            })
            .collect();
        let used = per_chunk.iter().sum();
        Self {
            words,
            n,
            per_chunk,
            used,
        }
    }

    /// How many exponents the query uses: the length [`SparseGather::fill`] writes.
    pub(crate) fn used(&self) -> usize {
        self.used
    }

    /// Writes `f` of each used exponent, in variable order, into `out`, which must hold
    /// exactly [`SparseGather::used`] elements; every one of them is written.
    pub(crate) fn fill<T, F>(&self, out: &mut [MaybeUninit<T>], exponents: &[Fr], f: &F)
    where
        T: Send,
        F: Fn(&Fr) -> T + Sync,
    {
        assert_eq!(out.len(), self.used, "gather output of the wrong length");
        let word_count = self.n.div_ceil(WORD_BITS);
        let mut rest = out;
        let mut parts = Vec::with_capacity(self.per_chunk.len());
        for &count in &self.per_chunk {
            let (part, tail) = rest.split_at_mut(count);
            parts.push(part);
            rest = tail;
        }
        parts.into_par_iter().enumerate().for_each(|(c, part)| {
            let mut next = part.iter_mut();
            for w in chunk_words(c, word_count) {
                let mut bits = live_bits(self.words, w, self.n);
                while bits != 0 {
                    let variable = w * WORD_BITS + bits.trailing_zeros() as usize;
                    next.next()
                        .expect("the chunk's count covers its bits")
                        .write(f(&exponents[variable]));
                    bits &= bits - 1;
                }
            }
            debug_assert!(next.next().is_none(), "every counted exponent written");
        });
    }

    /// The used exponents mapped through `f`, as a new vector.
    pub(crate) fn collect<T, F>(&self, exponents: &[Fr], f: &F) -> Vec<T>
    where
        T: Send,
        F: Fn(&Fr) -> T + Sync,
    {
        let mut out = Vec::with_capacity(self.used);
        self.fill(&mut out.spare_capacity_mut()[..self.used], exponents, f);
        // SAFETY: `fill` wrote each of the first `used` elements.
        unsafe { out.set_len(self.used) };
        out
    }
}

/// The density words of chunk `c`.
fn chunk_words(c: usize, word_count: usize) -> std::ops::Range<usize> {
    c * CHUNK_WORDS..((c + 1) * CHUNK_WORDS).min(word_count)
}

/// Word `w` of the density (Lsb0: variable `i` is bit `i % 64` of word `i / 64`), with the
/// bits of variables at or beyond `n` cleared (a bit vector's unused tail bits are
/// unspecified, and variables beyond the exponents are unused).
fn live_bits(words: &[usize], w: usize, n: usize) -> usize {
    let live = n - w * WORD_BITS;
    if live >= WORD_BITS {
        words[w]
    } else {
        words[w] & ((1usize << live) - 1)
    }
}

/// The exponents a query uses (all of them for a full query, the ones its density marks for a
/// sparse one), each mapped through `f` in the same pass (a backend's conversion to the form
/// its kernels take), in parallel on the GPU stage's host pool, after checking that the bases
/// cover them. The CPU backend gathers through this; the CUDA backend gathers large queries
/// straight into its staging buffers with [`SparseGather`].
pub(crate) fn used_exponents_map<G, T, F>(
    bases: &Bases<G>,
    density: &Density,
    exponents: &[Fr],
    f: F,
) -> Result<Vec<T>, KernelError>
where
    T: Send,
    F: Fn(&Fr) -> T + Sync,
{
    match density {
        Density::Full => {
            check_bases(bases, exponents.len())?;
            if exponents.len() < PARALLEL_GATHER_MIN {
                return Ok(exponents.iter().map(&f).collect());
            }
            Ok(on_host_pool(|| exponents.par_iter().map(&f).collect()))
        }
        Density::Sparse(d) => {
            let gather = on_host_pool(|| SparseGather::new(d, exponents.len()));
            check_bases(bases, gather.used())?;
            Ok(on_host_pool(|| gather.collect(exponents, &f)))
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use ff::{Field, PrimeField};
    use rand_chacha::ChaCha8Rng;
    use rand_core::SeedableRng;

    use super::*;

    fn sparse(n: usize, used: impl Fn(usize) -> bool) -> Density {
        let mut t = DensityTracker::new();
        for i in 0..n {
            t.add_element();
            if used(i) {
                t.inc(i);
            }
        }
        Density::Sparse(Arc::new(t))
    }

    /// The parallel gather (sizes around a word, a chunk and several chunks, odd ones so the
    /// last word and chunk are partial) gives what a sequential filter gives, with and
    /// without the conversion.
    #[test]
    fn gather_matches_sequential_filter() {
        let mut rng = ChaCha8Rng::seed_from_u64(5);
        let chunk = CHUNK_WORDS * WORD_BITS;
        for n in [
            10,
            WORD_BITS,
            WORD_BITS + 1,
            PARALLEL_GATHER_MIN - 1,
            PARALLEL_GATHER_MIN + 7,
            chunk,
            2 * chunk + 65,
        ] {
            let exps: Vec<Fr> = (0..n).map(|_| Fr::random(&mut rng)).collect();
            let bases = Bases::new(Arc::new(vec![(); n + 2]), 2);
            let full = used_exponents_map(&bases, &Density::Full, &exps, Fr::to_repr).unwrap();
            assert_eq!(
                full,
                exps.iter().map(Fr::to_repr).collect::<Vec<_>>(),
                "n={n}"
            );
            // Dense runs and gaps of several lengths (a whole chunk unused among them), and
            // nothing used at the end.
            let pick = |i: usize| {
                (i % 11 < 4 || (i / 1000).is_multiple_of(3)) && i + 5 < n && i / chunk != 1
            };
            let d = sparse(n, pick);
            let want: Vec<Fr> = (0..n).filter(|&i| pick(i)).map(|i| exps[i]).collect();
            let got = used_exponents_map(&bases, &d, &exps, |e| *e).unwrap();
            assert_eq!(got, want, "n={n}");
            let bytes = used_exponents_map(&bases, &d, &exps, Fr::to_repr).unwrap();
            assert_eq!(
                bytes,
                want.iter().map(Fr::to_repr).collect::<Vec<_>>(),
                "n={n}"
            );
        }
    }

    /// Bits set beyond the exponents (a density longer than them) are not gathered, also
    /// within the last word.
    #[test]
    fn a_density_longer_than_the_exponents_gathers_only_theirs() {
        let exps: Vec<Fr> = (0..70u64).map(Fr::from).collect();
        let Density::Sparse(d) = sparse(200, |_| true) else {
            unreachable!()
        };
        let gather = SparseGather::new(&d, exps.len());
        assert_eq!(gather.used(), 70);
        assert_eq!(gather.collect(&exps, &|e| *e), exps);
    }

    #[test]
    fn gather_checks_the_bases_against_the_used_exponents() {
        let n = PARALLEL_GATHER_MIN + 1;
        let exps = vec![Fr::ONE; n];
        let d = sparse(n, |i| i % 2 == 0);
        let used = n.div_ceil(2);
        let gather = |bases: &Bases<()>, d: &Density| used_exponents_map(bases, d, &exps, |e| *e);
        assert!(gather(&Bases::new(Arc::new(vec![(); used]), 0), &d).is_ok());
        let short = Bases::new(Arc::new(vec![(); used]), 1);
        assert!(matches!(
            gather(&short, &d),
            Err(KernelError::BasesTooShort { exponents, .. }) if exponents == used
        ));
        assert!(gather(&short, &Density::Full).is_err());
        // A density shorter than the exponents: the ones beyond it are unused.
        let d = sparse(10, |_| true);
        let got = used_exponents_map(&Bases::new(Arc::new(vec![(); 10]), 0), &d, &exps, |e| *e);
        assert_eq!(got.unwrap().len(), 10);
    }
}
