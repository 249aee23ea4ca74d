//! `merkle-sha256`: SHA-256 Merkle inclusion proofs, boolean-heavy like Filecoin PoRep.
//!
//! A partition holds as many tree levels as fit in its constraint budget, split into paths
//! of at most [`MAX_DEPTH`] levels. Each path proves a random leaf against its root; each root
//! is a public input (packed into two field elements). Leftover constraints are filled with
//! boolean checks so the partition has exactly the requested size.

use std::sync::OnceLock;

use bellperson::gadgets::boolean::{AllocatedBit, Boolean};
use bellperson::gadgets::{multipack, sha256::sha256_block_no_padding};
use bellperson::{Circuit, ConstraintSystem, SynthesisError};
use blstrs::Scalar as Fr;
use rand_chacha::ChaCha20Rng;
use rand_core::RngCore;

use super::counting::CountingCs;
use proofpipe_model::sizing::CircuitShape;

/// Tree depth of one inclusion path (a 2^16-leaf tree).
const MAX_DEPTH: usize = 16;

pub struct MerkleSha256 {
    layout: Layout,
    rng: ChaCha20Rng,
}

/// How a constraint budget is spent: paths of levels, then padding.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Layout {
    levels: usize,
    padding: usize,
    costs: Costs,
}

/// Constraint and variable counts of the building blocks, measured once by synthesis.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct Costs {
    /// One level: sibling bits, direction bit, conditional swap, one compression.
    level: CircuitShape,
    /// One path besides its levels: leaf bits and packing the root into public inputs.
    path: CircuitShape,
}

impl Layout {
    fn paths(&self) -> usize {
        self.levels.div_ceil(MAX_DEPTH)
    }

    fn path_depths(&self) -> impl Iterator<Item = usize> {
        let levels = self.levels;
        (0..self.paths()).map(move |p| (levels - p * MAX_DEPTH).min(MAX_DEPTH))
    }

    pub fn shape(&self) -> CircuitShape {
        let paths = self.paths();
        let (l, p) = (self.costs.level, self.costs.path);
        // Every path adds its public inputs; the constant ONE adds one input and its
        // constraint.
        CircuitShape {
            constraints: 1 + self.levels * l.constraints + paths * p.constraints + self.padding,
            aux: self.levels * l.aux + paths * p.aux + self.padding,
            inputs: 1 + paths * p.inputs,
        }
    }
}

impl MerkleSha256 {
    pub fn new(constraints: usize, rng: ChaCha20Rng) -> Self {
        Self {
            layout: Self::layout(constraints),
            rng,
        }
    }

    pub fn min_constraints() -> usize {
        let c = costs();
        1 + c.level.constraints + c.path.constraints
    }

    /// The most levels that fit in `constraints`, padded to exactly that size.
    pub fn layout(constraints: usize) -> Layout {
        let costs = costs();
        let unpadded = |levels| {
            Layout {
                levels,
                padding: 0,
                costs,
            }
            .shape()
            .constraints
        };
        let mut levels = constraints / costs.level.constraints;
        while levels > 0 && unpadded(levels) > constraints {
            levels -= 1;
        }
        Layout {
            levels,
            padding: constraints - unpadded(levels),
            costs,
        }
    }
}

fn costs() -> Costs {
    static COSTS: OnceLock<Costs> = OnceLock::new();
    *COSTS.get_or_init(|| {
        let measure = |depth| {
            let mut cs = CountingCs::new();
            let mut rng = super::rng::witness_rng(0, 0);
            inclusion_path(&mut cs, &mut rng, depth).expect("counting synthesis cannot fail");
            cs.shape()
        };
        let one = measure(1);
        let two = measure(2);
        let level = sub(two, one);
        // `measure` counts the constant ONE (one input, one constraint) once; a path does not.
        let path = sub(one, level);
        Costs {
            level,
            path: CircuitShape {
                constraints: path.constraints - 1,
                aux: path.aux,
                inputs: path.inputs - 1,
            },
        }
    })
}

fn sub(a: CircuitShape, b: CircuitShape) -> CircuitShape {
    CircuitShape {
        constraints: a.constraints - b.constraints,
        aux: a.aux - b.aux,
        inputs: a.inputs - b.inputs,
    }
}

fn alloc_bits<CS: ConstraintSystem<Fr>>(
    cs: &mut CS,
    bytes: &[u8],
) -> Result<Vec<Boolean>, SynthesisError> {
    multipack::bytes_to_bits(bytes)
        .into_iter()
        .enumerate()
        .map(|(i, b)| {
            Ok(Boolean::from(AllocatedBit::alloc(
                cs.namespace(|| format!("bit {i}")),
                Some(b),
            )?))
        })
        .collect()
}

/// Synthesizes one inclusion path of `depth` levels with a random leaf and siblings, and
/// exposes its root as public inputs.
fn inclusion_path<CS: ConstraintSystem<Fr>>(
    cs: &mut CS,
    rng: &mut ChaCha20Rng,
    depth: usize,
) -> Result<(), SynthesisError> {
    let mut leaf = [0u8; 32];
    rng.fill_bytes(&mut leaf);
    let mut node = alloc_bits(&mut cs.namespace(|| "leaf"), &leaf)?;
    for level in 0..depth {
        let mut cs = cs.namespace(|| format!("level {level}"));
        let mut sibling = [0u8; 32];
        rng.fill_bytes(&mut sibling);
        let sibling = alloc_bits(&mut cs.namespace(|| "sibling"), &sibling)?;
        let is_right = Boolean::from(AllocatedBit::alloc(
            cs.namespace(|| "is right"),
            Some(rng.next_u32() & 1 == 1),
        )?);
        // ch(s, x, y) = s ? x : y, one constraint per bit.
        let mut block = Vec::with_capacity(512);
        for (i, (n, s)) in node.iter().zip(&sibling).enumerate() {
            block.push(Boolean::sha256_ch(
                cs.namespace(|| format!("left {i}")),
                &is_right,
                s,
                n,
            )?);
        }
        for (i, (n, s)) in node.iter().zip(&sibling).enumerate() {
            block.push(Boolean::sha256_ch(
                cs.namespace(|| format!("right {i}")),
                &is_right,
                n,
                s,
            )?);
        }
        node = sha256_block_no_padding(cs.namespace(|| "compress"), &block)?;
    }
    multipack::pack_into_inputs(cs.namespace(|| "root"), &node)
}

impl Circuit<Fr> for MerkleSha256 {
    fn synthesize<CS: ConstraintSystem<Fr>>(mut self, cs: &mut CS) -> Result<(), SynthesisError> {
        for (p, depth) in self.layout.path_depths().enumerate() {
            inclusion_path(
                &mut cs.namespace(|| format!("path {p}")),
                &mut self.rng,
                depth,
            )?;
        }
        for i in 0..self.layout.padding {
            let bit = self.rng.next_u32() & 1 == 1;
            AllocatedBit::alloc(cs.namespace(|| format!("pad {i}")), Some(bit))?;
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::PrimeField;
    use sha2::compress256;

    /// The root the circuit must expose, computed natively with the sha2 crate.
    #[test]
    fn public_root_matches_native_sha256() {
        let depth = 2;
        let mut rng = super::super::rng::witness_rng(5, 2);
        let mut cs = CountingCs::new();
        inclusion_path(&mut cs, &mut rng, depth).unwrap();
        assert!(cs.is_satisfied());

        let mut rng = super::super::rng::witness_rng(5, 2);
        let mut node = [0u8; 32];
        rng.fill_bytes(&mut node);
        for _ in 0..depth {
            let mut sibling = [0u8; 32];
            rng.fill_bytes(&mut sibling);
            let is_right = rng.next_u32() & 1 == 1;
            let (l, r) = if is_right {
                (sibling, node)
            } else {
                (node, sibling)
            };
            let mut block = [0u8; 64];
            block[..32].copy_from_slice(&l);
            block[32..].copy_from_slice(&r);
            let mut state = [
                0x6a09e667u32,
                0xbb67ae85,
                0x3c6ef372,
                0xa54ff53a,
                0x510e527f,
                0x9b05688c,
                0x1f83d9ab,
                0x5be0cd19,
            ];
            compress256(&mut state, &[block.into()]);
            for (i, w) in state.iter().enumerate() {
                node[i * 4..i * 4 + 4].copy_from_slice(&w.to_be_bytes());
            }
        }
        let expected: Vec<Fr> = multipack::compute_multipacking(&multipack::bytes_to_bits(&node));
        let got = cs.public_inputs();
        assert_eq!(got.len(), 2);
        assert_eq!(
            got.iter().map(|f| f.to_repr()).collect::<Vec<_>>(),
            expected.iter().map(|f| f.to_repr()).collect::<Vec<_>>()
        );
    }

    #[test]
    fn layout_fills_the_budget_exactly() {
        for n in [MerkleSha256::min_constraints(), 1 << 16, 1 << 18, 3_000_000] {
            let layout = MerkleSha256::layout(n);
            assert!(layout.levels >= 1);
            assert_eq!(layout.shape().constraints, n);
            assert!(layout.padding < costs().level.constraints + costs().path.constraints);
        }
    }
}
