//! Witness values of the benchmark circuits, reproducible from a seed.

use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

/// The witness generator of one partition: independent streams per partition of a seed.
pub(super) fn witness_rng(seed: u64, partition: u32) -> ChaCha20Rng {
    let mut rng = ChaCha20Rng::seed_from_u64(seed);
    rng.set_stream(u64::from(partition));
    rng
}
