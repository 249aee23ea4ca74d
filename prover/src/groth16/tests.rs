use bellperson::groth16::{create_random_proof, generate_random_parameters, prepare_verifying_key};
use blstrs::{Bls12, Scalar as Fr};
use ff::Field;
use proofpipe_kernels::CpuBackend;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use super::*;
use crate::circuits::CircuitKind;

fn prove_one(kind: CircuitKind, n: usize, g2: G2Placement) {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let params =
        generate_random_parameters::<Bls12, _, _>(kind.partition(n, 0, 0).unwrap(), &mut rng)
            .unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    let backend = CpuBackend::new();
    let shape = kind.shape(n).unwrap();

    let synthesized = synthesize(kind.partition(n, 42, 3).unwrap(), shape).unwrap();
    assert_eq!(synthesized.a.len(), n);
    let started = prove_start(&backend, &params, synthesized, g2).unwrap();
    let (proof, inputs) = finalize(
        &backend,
        &params,
        started,
        Fr::random(&mut rng),
        Fr::random(&mut rng),
    )
    .unwrap();
    assert!(verify(&pvk, &proof, &inputs), "{kind} proof must verify");

    let mut wrong = inputs.clone();
    wrong[0] += Fr::ONE;
    assert!(
        !verify(&pvk, &proof, &wrong),
        "{kind}: a wrong public input must fail"
    );

    // bellperson's own prover on the same circuit and parameters agrees on the statement.
    let stock = create_random_proof(kind.partition(n, 42, 3).unwrap(), &params, &mut rng).unwrap();
    assert!(verify(&pvk, &stock, &inputs));
    assert_eq!(proof_bytes(&proof).len(), 192);
}

#[test]
fn mul_chain_proof_verifies_and_binds_its_input() {
    prove_one(CircuitKind::MulChain, 1 << 10, G2Placement::GpuStage);
}

#[test]
fn g2_in_finalize_gives_a_valid_proof() {
    prove_one(CircuitKind::MulChain, 1000, G2Placement::Finalize);
}

#[test]
fn merkle_proof_verifies_and_binds_its_input() {
    prove_one(
        CircuitKind::MerkleSha256,
        CircuitKind::MerkleSha256.min_constraints(),
        G2Placement::GpuStage,
    );
}

#[test]
fn parameters_of_another_size_are_refused() {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let kind = CircuitKind::MulChain;
    let params =
        generate_random_parameters::<Bls12, _, _>(kind.partition(64, 0, 0).unwrap(), &mut rng)
            .unwrap();
    let synthesized =
        synthesize(kind.partition(128, 0, 0).unwrap(), kind.shape(128).unwrap()).unwrap();
    let err = prove_start(
        &CpuBackend::new(),
        &params,
        synthesized,
        G2Placement::GpuStage,
    )
    .err()
    .expect("mismatched parameters must fail");
    assert!(err.to_string().contains("another circuit or size"), "{err}");
}

#[test]
fn synthesis_reserves_the_fft_domain_once() {
    let kind = CircuitKind::MulChain;
    let s = synthesize(
        kind.partition(1000, 0, 0).unwrap(),
        kind.shape(1000).unwrap(),
    )
    .unwrap();
    assert_eq!(s.a.capacity(), 1024);
    assert_eq!(s.aux.capacity(), s.aux.len());
}
