//! bellperson's SHA-256 compression gadget (`gadgets::sha256::sha256_compression_function`),
//! computed natively: the auxiliary values it allocates, in its order, for a block whose
//! message bits and incoming state are all allocated variables (every block of a PoRep label
//! or tree_d hash but the first, which starts from the constant IV, and the padding-only ones).
//! About 98% of a 32 GiB PoRep challenge's witness is SHA-256 bits.
//!
//! The gadget's order (bits least significant first within a word):
//! - message schedule, w[16..64]: s0's two XORs (32, then 29: shr 3's constant zeros allocate
//!   nothing), s1's (32, then 22), then the sum of four words (34 bits of the whole sum);
//! - 64 rounds: e's deferred sum of six words (35 bits; not in round 0), S1's two XORs (32 +
//!   32), ch (32), a's deferred sum of seven words (35; not in round 0), S0's XORs (32 + 32),
//!   maj with its `b and c` (2 per bit, interleaved);
//! - the new state: h0 (sum of eight, 35), h1..h3 (33 each), h4 (sum of seven, 35), h5..h7.
//!
//! A sum allocates every bit of the whole sum of its u32 operands (bellperson's `addmany`), of
//! which the low 32 are the word the gadget goes on with.

use super::{BitSink, WitnessSink};

const ROUND_CONSTANTS: [u32; 64] = [
    0x428a2f98, 0x71374491, 0xb5c0fbcf, 0xe9b5dba5, 0x3956c25b, 0x59f111f1, 0x923f82a4, 0xab1c5ed5,
    0xd807aa98, 0x12835b01, 0x243185be, 0x550c7dc3, 0x72be5d74, 0x80deb1fe, 0x9bdc06a7, 0xc19bf174,
    0xe49b69c1, 0xefbe4786, 0x0fc19dc6, 0x240ca1cc, 0x2de92c6f, 0x4a7484aa, 0x5cb0a9dc, 0x76f988da,
    0x983e5152, 0xa831c66d, 0xb00327c8, 0xbf597fc7, 0xc6e00bf3, 0xd5a79147, 0x06ca6351, 0x14292967,
    0x27b70a85, 0x2e1b2138, 0x4d2c6dfc, 0x53380d13, 0x650a7354, 0x766a0abb, 0x81c2c92e, 0x92722c85,
    0xa2bfe8a1, 0xa81a664b, 0xc24b8b70, 0xc76c51a3, 0xd192e819, 0xd6990624, 0xf40e3585, 0x106aa070,
    0x19a4c116, 0x1e376c08, 0x2748774c, 0x34b0bcb5, 0x391c0cb3, 0x4ed8aa4a, 0x5b9cca4f, 0x682e6ff3,
    0x748f82ee, 0x78a5636f, 0x84c87814, 0x8cc70208, 0x90befffa, 0xa4506ceb, 0xbef9a3f7, 0xc67178f2,
];

/// Auxiliary values the gadget allocates for one such block.
pub const GENERAL_BLOCK_AUX: usize = 48 * (32 + 29 + 32 + 22 + 34) + 64 * 224 + 63 * 70 + 268;

/// The bits of the whole sum of `words`, as `addmany` allocates them; the low 32 go on.
fn sum<S: BitSink>(out: &mut S, words: &[u32]) -> u32 {
    let whole: u64 = words.iter().map(|&w| u64::from(w)).sum();
    let max = words.len() as u64 * u64::from(u32::MAX);
    out.bits(whole, 64 - max.leading_zeros());
    whole as u32
}

/// `a xor b`, allocated on the `count` low bits (the rest are a's, b being constant zero there).
fn xor<S: BitSink>(out: &mut S, a: u32, b: u32, count: u32) -> u32 {
    let x = a ^ b;
    out.bits(u64::from(x), count);
    x
}

/// The gadget's three-term XOR of rotations/shifts: two allocations.
fn sigma<S: BitSink>(out: &mut S, x: u32, r1: u32, r2: u32, third: u32, third_bits: u32) -> u32 {
    let first = xor(out, x.rotate_right(r1), x.rotate_right(r2), 32);
    xor(out, first, third, third_bits)
}

/// One compression of `block` (16 message words, big-endian as SHA-256 reads them) into
/// `state`, writing the gadget's auxiliary values to `out`; returns the new state.
pub fn compress_general_block<S: BitSink>(
    out: &mut S,
    state: [u32; 8],
    block: [u32; 16],
) -> [u32; 8] {
    let mut w = [0u32; 64];
    w[..16].copy_from_slice(&block);
    for i in 16..64 {
        let x = w[i - 15];
        let s0 = sigma(out, x, 7, 18, x >> 3, 29);
        let y = w[i - 2];
        let s1 = sigma(out, y, 17, 19, y >> 10, 22);
        w[i] = sum(out, &[w[i - 16], s0, w[i - 7], s1]);
    }
    let [mut a, mut b, mut c, mut d, mut e, mut f, mut g, mut h] = state;
    // The gadget defers a and e as sums computed where they are next used.
    let mut deferred_e: Option<[u32; 6]> = None;
    let mut deferred_a: Option<[u32; 7]> = None;
    for i in 0..64 {
        if let Some(words) = deferred_e.take() {
            e = sum(out, &words);
        }
        let s1 = sigma(out, e, 6, 11, e.rotate_right(25), 32);
        let ch = (e & f) ^ (!e & g);
        out.bits(u64::from(ch), 32);
        if let Some(words) = deferred_a.take() {
            a = sum(out, &words);
        }
        let s0 = sigma(out, a, 2, 13, a.rotate_right(22), 32);
        let maj = (a & b) ^ (a & c) ^ (b & c);
        let bc = b & c;
        for bit in 0..32 {
            out.bits(u64::from((maj >> bit) & 1), 1);
            out.bits(u64::from((bc >> bit) & 1), 1);
        }
        let k = ROUND_CONSTANTS[i];
        deferred_e = Some([h, s1, ch, k, w[i], d]);
        deferred_a = Some([h, s1, ch, k, w[i], s0, maj]);
        h = g;
        g = f;
        f = e;
        d = c;
        c = b;
        b = a;
    }
    let [e0, e1, e2, e3, e4, e5] = deferred_e.expect("64 rounds");
    let [a0, a1, a2, a3, a4, a5, a6] = deferred_a.expect("64 rounds");
    let h0 = sum(out, &[a0, a1, a2, a3, a4, a5, a6, state[0]]);
    let h1 = sum(out, &[state[1], b]);
    let h2 = sum(out, &[state[2], c]);
    let h3 = sum(out, &[state[3], d]);
    let h4 = sum(out, &[e0, e1, e2, e3, e4, e5, state[4]]);
    let h5 = sum(out, &[state[5], f]);
    let h6 = sum(out, &[state[6], g]);
    let h7 = sum(out, &[state[7], h]);
    [h0, h1, h2, h3, h4, h5, h6, h7]
}

/// The gadget's inputs for one such block, allocated on `cs` as a circuit has them before
/// the compression: the state words, then the message bits (big-endian within each word, as
/// `sha256_compression_function` reads them). The reference the native witness is held to
/// (tests) and timed against (benches).
pub fn allocate_gadget_block<CS: bellperson::ConstraintSystem<blstrs::Scalar>>(
    cs: &mut CS,
    state: [u32; 8],
    block: [u32; 16],
) -> Result<
    (
        Vec<bellperson::gadgets::uint32::UInt32>,
        Vec<bellperson::gadgets::boolean::Boolean>,
    ),
    bellperson::SynthesisError,
> {
    use bellperson::gadgets::boolean::AllocatedBit;
    use bellperson::gadgets::uint32::UInt32;
    let state = state
        .iter()
        .enumerate()
        .map(|(i, &w)| UInt32::alloc(cs.namespace(|| format!("state {i}")), Some(w)))
        .collect::<Result<Vec<_>, _>>()?;
    let bits = block
        .iter()
        .flat_map(|&w| (0..32).rev().map(move |i| (w >> i) & 1 == 1))
        .enumerate()
        .map(|(i, b)| {
            AllocatedBit::alloc(cs.namespace(|| format!("bit {i}")), Some(b)).map(Into::into)
        })
        .collect::<Result<Vec<_>, _>>()?;
    Ok((state, bits))
}

mod label;
mod symbolic;
mod tree_d;
pub use label::{
    LABEL_PARENTS, allocate_gadget_element, create_label, element_words, padded_element,
};

pub use symbolic::{Word, compress_block, hash};
pub use tree_d::{hash2, tree_d_level};

#[cfg(test)]
mod tests;
