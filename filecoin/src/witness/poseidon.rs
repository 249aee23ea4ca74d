//! neptune's legacy Poseidon circuit (`circuit::poseidon_hash`, the one Filecoin's trees and
//! columns use), computed natively: the auxiliary values it allocates, in its order.
//!
//! The state is the domain tag (a constant) and the preimage (allocated). Each S-box
//! allocates its input (where the state holds a linear combination, so not in the first
//! round), the square, the fourth power and the fifth power plus the round key; the first
//! round adds its keys before the S-box and keeps the tag's S-box constant. The MDS products
//! (the full matrix, the one before the sparse ones, the sparse ones in the partial rounds)
//! allocate nothing. Last, the result (state element 1) is allocated. In all,
//! `3 * arity + 4 * width * (full rounds - 1) + 4 * partial rounds + 1` values.

use blstrs::Scalar as Fr;
use ff::Field;
use neptune::Arity;
use neptune::poseidon::PoseidonConstants;

use super::WitnessSink;

/// Widest state Filecoin hashes (arity 11 columns, plus the tag).
const MAX_WIDTH: usize = 12;

/// The hash of `preimage` (of exactly the arity's length), writing the circuit's witness.
pub fn poseidon_hash<S: WitnessSink, A: Arity<Fr>>(
    out: &mut S,
    constants: &PoseidonConstants<Fr, A>,
    preimage: &[Fr],
) -> Fr {
    let width = constants.width();
    assert_eq!(preimage.len() + 1, width, "one preimage element per arity");
    assert!(
        width <= MAX_WIDTH,
        "Poseidon width {width} above {MAX_WIDTH}"
    );
    let keys = &constants.compressed_round_constants;
    let mut state = [Fr::ZERO; MAX_WIDTH];
    state[0] = constants.domain_tag;
    state[1..width].copy_from_slice(preimage);
    let mut hasher = State {
        state,
        width,
        round: 0,
    };

    // First round: keys added before and after the S-box; the tag's S-box is a constant.
    let (pre, post) = (&keys[..width], &keys[width..2 * width]);
    let mut offset = 2 * width;
    let tag = hasher.state[0] + pre[0];
    hasher.state[0] = tag.square().square() * tag + post[0];
    for i in 1..width {
        let l = hasher.state[i] + pre[i];
        let l2 = l.square();
        let l4 = l2.square();
        let l5 = l4 * l + post[i];
        out.scalar(l2);
        out.scalar(l4);
        out.scalar(l5);
        hasher.state[i] = l5;
    }
    hasher.mds(constants);

    let half = constants.full_rounds / 2;
    for _ in 1..half {
        hasher.full_round(out, Some(&keys[offset..offset + width]));
        hasher.mds(constants);
        offset += width;
    }
    for _ in 0..constants.partial_rounds {
        hasher.state[0] = s_box(out, hasher.state[0], Some(keys[offset]));
        hasher.mds(constants);
        offset += 1;
    }
    for _ in 0..half - 1 {
        hasher.full_round(out, Some(&keys[offset..offset + width]));
        hasher.mds(constants);
        offset += width;
    }
    hasher.full_round(out, None);
    hasher.mds(constants);
    debug_assert_eq!(offset, keys.len(), "every round key used once");

    let result = hasher.state[1];
    out.scalar(result);
    result
}

/// The S-box of a linear-combination input: the input, its square and fourth power, and the
/// fifth power plus the key, each allocated.
fn s_box<S: WitnessSink>(out: &mut S, l: Fr, key: Option<Fr>) -> Fr {
    let l2 = l.square();
    let l4 = l2.square();
    let mut l5 = l4 * l;
    if let Some(key) = key {
        l5 += key;
    }
    out.scalar(l);
    out.scalar(l2);
    out.scalar(l4);
    out.scalar(l5);
    l5
}

struct State {
    state: [Fr; MAX_WIDTH],
    width: usize,
    round: usize,
}

impl State {
    fn full_round<S: WitnessSink>(&mut self, out: &mut S, keys: Option<&[Fr]>) {
        for i in 0..self.width {
            self.state[i] = s_box(out, self.state[i], keys.map(|k| k[i]));
        }
    }

    /// The round's MDS product, as neptune picks the matrix by round.
    fn mds<A: Arity<Fr>>(&mut self, constants: &PoseidonConstants<Fr, A>) {
        let half = constants.half_full_rounds;
        let sparse_offset = half - 1;
        let width = self.width;
        let s = self.state;
        let mut result = [Fr::ZERO; MAX_WIDTH];
        if self.round > sparse_offset && self.round < half + constants.partial_rounds {
            let sparse = &constants.sparse_matrixes[self.round - sparse_offset - 1];
            result[0] = sparse
                .w_hat
                .iter()
                .zip(&s[..width])
                .map(|(w, x)| *w * x)
                .sum();
            for j in 1..width {
                result[j] = s[j] + sparse.v_rest[j - 1] * s[0];
            }
        } else {
            let matrix = if self.round == sparse_offset {
                &constants.pre_sparse_matrix
            } else {
                &constants.mds_matrices.m
            };
            for (j, r) in result.iter_mut().enumerate().take(width) {
                *r = (0..width).map(|i| matrix[i][j] * s[i]).sum();
            }
        }
        self.state = result;
        self.round += 1;
    }
}

#[cfg(test)]
mod tests {
    use bellperson::ConstraintSystem;
    use bellperson::gadgets::num::AllocatedNum;
    use bellperson::util_cs::witness_cs::WitnessCS;
    use filecoin_hashers::{
        POSEIDON_CONSTANTS_2, POSEIDON_CONSTANTS_4, POSEIDON_CONSTANTS_8, POSEIDON_CONSTANTS_11,
    };
    use rand_chacha::ChaCha20Rng;
    use rand_core::SeedableRng;

    use super::*;
    use crate::witness::Assignment;

    fn held_to_the_gadget<A: Arity<Fr>>(constants: &PoseidonConstants<Fr, A>, seed: u64) {
        let mut rng = ChaCha20Rng::seed_from_u64(seed);
        let preimage: Vec<Fr> = (0..A::to_usize()).map(|_| Fr::random(&mut rng)).collect();
        let mut cs = WitnessCS::<Fr>::new();
        let nums = preimage
            .iter()
            .enumerate()
            .map(|(i, &x)| AllocatedNum::alloc(cs.namespace(|| format!("x{i}")), || Ok(x)))
            .collect::<Result<Vec<_>, _>>()
            .unwrap();
        let before = cs.scalar_aux().len();
        let digest =
            neptune::circuit::poseidon_hash(cs.namespace(|| "hash"), nums, constants).unwrap();
        let gadget = cs.scalar_aux().split_off(before);

        let mut native = Assignment::default();
        let native_digest = poseidon_hash(&mut native, constants, &preimage);
        let arity = A::to_usize();
        let width = arity + 1;
        let expected =
            3 * arity + 4 * width * (constants.full_rounds - 1) + 4 * constants.partial_rounds + 1;
        assert_eq!(gadget.len(), expected, "arity {arity}: the gadget's count");
        assert_eq!(native.aux.len(), gadget.len(), "arity {arity}: aux count");
        assert!(native.aux == gadget, "arity {arity}: aux values");
        assert!(native.inputs.is_empty());
        assert_eq!(Some(native_digest), digest.get_value(), "arity {arity}");
        // And the hash is Poseidon's own.
        let mut hasher = neptune::Poseidon::new_with_preimage(&preimage, constants);
        assert_eq!(native_digest, hasher.hash(), "arity {arity}: the digest");
    }

    #[test]
    fn poseidon_is_witnessed_value_for_value_as_neptunes_circuit_allocates_it() {
        held_to_the_gadget(&*POSEIDON_CONSTANTS_2, 21);
        held_to_the_gadget(&*POSEIDON_CONSTANTS_4, 22);
        held_to_the_gadget(&*POSEIDON_CONSTANTS_8, 23);
        held_to_the_gadget(&*POSEIDON_CONSTANTS_11, 24);
    }
}
