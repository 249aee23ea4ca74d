use bellperson::groth16::generate_random_parameters;
use blstrs::{G1Projective, G2Projective, Scalar as Fr};
use ff::Field;
use group::Group;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use super::*;
use crate::circuits::CircuitKind;

fn bytes(params: &Parameters<Bls12>) -> Vec<u8> {
    let mut out = Vec::new();
    params.write(&mut out).unwrap();
    out
}

#[test]
fn the_parameters_are_bellpersons_bit_for_bit() {
    // A domain larger than the constraints (1000 + inputs), and a boolean-heavy circuit.
    let cases = [
        (CircuitKind::MulChain, 64, 1),
        (CircuitKind::MulChain, 1000, 2),
        (
            CircuitKind::MerkleSha256,
            CircuitKind::MerkleSha256.min_constraints(),
            3,
        ),
    ];
    for (kind, constraints, seed) in cases {
        let theirs = generate_random_parameters::<Bls12, _, _>(
            kind.partition(constraints, 0, 0).unwrap(),
            &mut ChaCha20Rng::seed_from_u64(seed),
        )
        .unwrap();
        let ours = random_parameters(
            kind.partition(constraints, 0, 0).unwrap(),
            &mut ChaCha20Rng::seed_from_u64(seed),
        )
        .unwrap();
        assert!(
            bytes(&ours) == bytes(&theirs),
            "{kind} at {constraints} constraints"
        );
    }
}

#[test]
fn a_table_multiplication_is_the_groups() {
    let mut rng = ChaCha20Rng::seed_from_u64(7);
    let g1 = G1Projective::random(&mut rng);
    let g2 = G2Projective::random(&mut rng);
    let (t1, t2) = (FixedBase::new(g1), FixedBase::new(g2));
    let mut scalars = vec![Fr::ZERO, Fr::ONE, -Fr::ONE, Fr::from(256), Fr::from(255)];
    scalars.extend((0..50).map(|_| Fr::random(&mut rng)));
    for s in scalars {
        assert_eq!(t1.mul(&s), g1 * s, "{s:?}");
        assert_eq!(t2.mul(&s), g2 * s, "{s:?}");
    }
}

/// A variable no constraint mentions would make the L query sparse: refused as bellperson
/// refuses it.
#[test]
fn an_unconstrained_variable_is_refused() {
    struct Loose;
    impl Circuit<Fr> for Loose {
        fn synthesize<CS: ConstraintSystem<Fr>>(self, cs: &mut CS) -> Result<(), SynthesisError> {
            let x = cs.alloc(|| "x", || Ok(Fr::ONE))?;
            cs.alloc(|| "loose", || Ok(Fr::ONE))?;
            cs.enforce(|| "x*x=x", |lc| lc + x, |lc| lc + x, |lc| lc + x);
            Ok(())
        }
    }
    let mut rng = ChaCha20Rng::seed_from_u64(3);
    assert!(matches!(
        random_parameters(Loose, &mut rng),
        Err(SynthesisError::UnconstrainedVariable)
    ));
}
