use bellperson::groth16::{create_random_proof, generate_random_parameters, prepare_verifying_key};
use blstrs::{Bls12, Scalar as Fr};
use ff::Field;
use proofpipe_kernels::CpuBackend;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;

use super::*;
use crate::circuits::CircuitKind;

/// How [`prove_one`] synthesizes.
#[derive(Clone, Copy)]
enum Pass {
    One,
    /// From matrices recorded on another partition of the size.
    FromMatrices,
}

fn prove_one(kind: CircuitKind, n: usize, g2: G2Placement, pass: Pass) {
    prove_placed(kind, n, g2, pass, QueryPlacement::all_resident());
}

fn prove_placed(
    kind: CircuitKind,
    n: usize,
    g2: G2Placement,
    pass: Pass,
    placement: QueryPlacement,
) {
    let mut rng = ChaCha20Rng::seed_from_u64(1);
    let params =
        generate_random_parameters::<Bls12, _, _>(kind.partition(n, 0, 0).unwrap(), &mut rng)
            .unwrap();
    let pvk = prepare_verifying_key(&params.vk);
    let backend = CpuBackend::new();
    let shape = kind.shape(n).unwrap();

    let circuit = kind.partition(n, 42, 3).unwrap();
    let synthesized = match pass {
        Pass::One => synthesize(circuit, shape).unwrap(),
        Pass::FromMatrices => {
            let matrices = R1csMatrices::record(kind.partition(n, 0, 0).unwrap(), shape).unwrap();
            synthesize_from_matrices(circuit, &matrices).unwrap()
        }
    };
    assert_eq!(synthesized.a.len(), n);
    let started = prove_start(
        &backend,
        &params,
        synthesized,
        g2,
        placement,
        Default::default(),
    )
    .unwrap();
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
    prove_one(
        CircuitKind::MulChain,
        1 << 10,
        G2Placement::GpuStage,
        Pass::One,
    );
}

#[test]
fn g2_in_finalize_gives_a_valid_proof() {
    prove_one(
        CircuitKind::MulChain,
        1000,
        G2Placement::Finalize,
        Pass::One,
    );
}

#[test]
fn streamed_bases_give_a_valid_proof() {
    // Every query streamed, the G2 MSM in finalize (which reads the placement the GPU stage
    // kept); then only h streamed, as a GPU a little too small would have it.
    prove_placed(
        CircuitKind::MulChain,
        1 << 10,
        G2Placement::Finalize,
        Pass::One,
        QueryPlacement::all_streamed(),
    );
    let mut h_only = QueryPlacement::all_resident();
    h_only.h = BasesPlacement::Streamed;
    prove_placed(
        CircuitKind::MerkleSha256,
        CircuitKind::MerkleSha256.min_constraints(),
        G2Placement::GpuStage,
        Pass::One,
        h_only,
    );
}

#[test]
fn merkle_proof_verifies_and_binds_its_input() {
    prove_one(
        CircuitKind::MerkleSha256,
        CircuitKind::MerkleSha256.min_constraints(),
        G2Placement::GpuStage,
        Pass::One,
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
        QueryPlacement::all_resident(),
        Default::default(),
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

/// The two-pass synthesis gives exactly what the direct one gives, for both circuits and
/// partitions other than the one the matrices were recorded from.
#[test]
fn synthesis_from_matrices_equals_direct_synthesis() {
    for (kind, n) in [
        (CircuitKind::MulChain, 1 << 12),
        (CircuitKind::MerkleSha256, 1 << 15),
    ] {
        let shape = kind.shape(n).unwrap();
        let matrices = R1csMatrices::record(kind.partition(n, 0, 0).unwrap(), shape).unwrap();
        assert!(matrices.nonzeros() >= shape.constraints, "{kind}");
        for (seed, partition) in [(42, 3), (7, 0)] {
            let direct = synthesize(kind.partition(n, seed, partition).unwrap(), shape).unwrap();
            let split =
                synthesize_from_matrices(kind.partition(n, seed, partition).unwrap(), &matrices)
                    .unwrap();
            assert!(
                split.a == direct.a && split.b == direct.b && split.c == direct.c,
                "{kind}"
            );
            assert!(
                split.inputs == direct.inputs && split.aux == direct.aux,
                "{kind}"
            );
            assert!(
                split.a.capacity() >= proofpipe_kernels::domain_size(n),
                "{kind}: room for the FFT"
            );
            assert_eq!(split.a_aux_density, direct.a_aux_density, "{kind}");
            assert_eq!(split.b_input_density, direct.b_input_density, "{kind}");
            assert_eq!(split.b_aux_density, direct.b_aux_density, "{kind}");
        }
    }
}

#[test]
fn a_proof_from_matrix_synthesis_verifies_and_binds_its_input() {
    prove_one(
        CircuitKind::MerkleSha256,
        CircuitKind::MerkleSha256.min_constraints(),
        G2Placement::GpuStage,
        Pass::FromMatrices,
    );
}

#[test]
fn matrices_of_another_size_are_refused() {
    let kind = CircuitKind::MulChain;
    let matrices = R1csMatrices::record(
        kind.partition(1 << 10, 0, 0).unwrap(),
        kind.shape(1 << 10).unwrap(),
    )
    .unwrap();
    let error = synthesize_from_matrices(kind.partition(1 << 11, 0, 0).unwrap(), &matrices)
        .err()
        .expect("a circuit of another size must not use these matrices");
    assert!(
        error
            .to_string()
            .contains("the R1CS matrices were recorded for"),
        "{error}"
    );
}

/// The parallel copy a replayed partition is made of: every evaluation, witness value and
/// density bit equal, the capacity (the FFT domain) kept, across more than one copy chunk.
#[test]
fn a_copied_partition_equals_its_original() {
    let kind = CircuitKind::MulChain;
    let n = 1 << 17;
    let shape = kind.shape(n).unwrap();
    let original = synthesize(kind.partition(n, 7, 1).unwrap(), shape).unwrap();
    let copy = original.copy_in(&proofpipe_kernels::EvalAlloc::heap());
    assert_eq!(copy.a[..], original.a[..]);
    assert_eq!(copy.b[..], original.b[..]);
    assert_eq!(copy.c[..], original.c[..]);
    assert_eq!(copy.a.capacity(), original.a.capacity());
    assert_eq!(copy.aux, original.aux);
    assert_eq!(copy.inputs, original.inputs);
    assert_eq!(copy.a_aux_density.bv, original.a_aux_density.bv);
    assert_eq!(copy.b_aux_density.bv, original.b_aux_density.bv);
    assert!(original.aux.iter().any(|x| !bool::from(x.is_zero())));
}

/// A circuit of a prefix (one public input, a few products of it) and `parts` independent
/// parts (a chain of squares from its own seed, bound to the prefix), which synthesizes its
/// parts in sub-systems and extends when the system allows it, as Filecoin's PoSt does, or
/// only `parts_in` of them (a sub-circuit of the split synthesis).
#[derive(Clone)]
struct Parted {
    parts: std::ops::Range<usize>,
    extend: bool,
}

impl Parted {
    fn prefix<CS: bellperson::ConstraintSystem<Fr>>(
        cs: &mut CS,
    ) -> Result<bellperson::gadgets::num::AllocatedNum<Fr>, bellperson::SynthesisError> {
        use bellperson::gadgets::num::AllocatedNum;
        let x = AllocatedNum::alloc(cs.namespace(|| "x"), || Ok(Fr::from(7u64)))?;
        x.inputize(cs.namespace(|| "x input"))?;
        let x2 = x.square(cs.namespace(|| "x^2"))?;
        x2.mul(cs.namespace(|| "x^3"), &x)
    }

    fn part<CS: bellperson::ConstraintSystem<Fr>>(
        cs: &mut CS,
        i: usize,
    ) -> Result<(), bellperson::SynthesisError> {
        use bellperson::gadgets::num::AllocatedNum;
        let seed = Fr::from(i as u64 + 2);
        let public = AllocatedNum::alloc(cs.namespace(|| "seed"), || Ok(seed))?;
        public.inputize(cs.namespace(|| "seed input"))?;
        let mut v = public;
        for step in 0..10 {
            v = v.square(cs.namespace(|| format!("square {step}")))?;
        }
        Ok(())
    }
}

impl bellperson::Circuit<Fr> for Parted {
    fn synthesize<CS: bellperson::ConstraintSystem<Fr>>(
        self,
        cs: &mut CS,
    ) -> Result<(), bellperson::SynthesisError> {
        Self::prefix(cs)?;
        if self.extend && CS::is_extensible() {
            let subs = self
                .parts
                .map(|i| {
                    let mut sub = CS::new();
                    sub.alloc_input(|| "temp one", || Ok(Fr::ONE))?;
                    Self::part(&mut sub, i)?;
                    Ok(sub)
                })
                .collect::<Result<Vec<CS>, bellperson::SynthesisError>>()?;
            for sub in &subs {
                cs.extend(sub);
            }
        } else {
            for i in self.parts {
                Self::part(&mut cs.namespace(|| format!("part {i}")), i)?;
            }
        }
        Ok(())
    }
}

fn assert_same(a: &Synthesized, b: &Synthesized) {
    assert_eq!(a.first_difference(b), None, "the syntheses differ");
}

#[test]
fn an_extending_circuit_synthesizes_as_it_does_in_sequence() {
    let whole = |extend| Parted {
        parts: 0..5,
        extend,
    };
    let matrices = R1csMatrices::record_circuit(whole(false)).unwrap();
    let shape = matrices.shape();
    // prefix: 3 aux, 1 input, 3 constraints; each part 11, 1, 11; ONE; one x * 0 = 0 per input.
    assert_eq!((shape.aux, shape.inputs, shape.constraints), (58, 7, 65));
    let sequential = synthesize(whole(false), shape).unwrap();
    let extended = synthesize(whole(true), shape).unwrap();
    assert_same(&sequential, &extended);
    // The witness pass extends too: the same assignment, a, b, c from the matrices.
    assert_same(
        &sequential,
        &synthesize_from_matrices(whole(true), &matrices).unwrap(),
    );
}

/// `Parted`'s witness computed natively, optionally with one value too many in one part.
struct NativeParted {
    parts: usize,
    extra_in: Option<usize>,
    /// Whether it says its parts are alike (else each is counted before it is written).
    alike: bool,
}

impl crate::witness::NativeWitness for NativeParted {
    fn parts(&self) -> usize {
        self.parts
    }

    fn alike_parts(&self) -> bool {
        self.alike
    }

    fn prefix<S: crate::witness::WitnessSink>(&self, out: &mut S) {
        let x = Fr::from(7u64);
        out.scalar(x);
        out.input(x);
        out.scalar(x.square());
        out.scalar(x.square() * x);
    }

    fn part<S: crate::witness::WitnessSink>(&self, i: usize, out: &mut S) {
        let mut v = Fr::from(i as u64 + 2);
        out.scalar(v);
        out.input(v);
        for _ in 0..10 {
            v = v.square();
            out.scalar(v);
        }
        if self.extra_in == Some(i) {
            out.scalar(v);
        }
    }
}

#[test]
fn a_native_witness_synthesizes_as_the_circuit_does_and_a_misshapen_one_is_refused() {
    let whole = Parted {
        parts: 0..5,
        extend: false,
    };
    let matrices = R1csMatrices::record_circuit(whole.clone()).unwrap();
    let one_pass = synthesize(whole, matrices.shape()).unwrap();
    let heap = proofpipe_kernels::EvalAlloc::heap();
    for alike in [true, false] {
        let native = NativeParted {
            parts: 5,
            extra_in: None,
            alike,
        };
        assert_same(
            &one_pass,
            &synthesize_native_from_matrices_into(&native, &matrices, &heap).unwrap(),
        );
    }

    // A part writing one value too many is refused, named, not written past its slots.
    let extra = NativeParted {
        parts: 5,
        extra_in: Some(3),
        alike: true,
    };
    let err = synthesize_native_from_matrices_into(&extra, &matrices, &heap)
        .err()
        .expect("a part of 12 aux where the recording has 11");
    assert!(
        err.to_string().contains("part 3 wrote 1 inputs and 12 aux"),
        "{err}"
    );
    // Counted, the same part makes the whole too large.
    let err = synthesize_native_from_matrices_into(
        &NativeParted {
            alike: false,
            ..extra
        },
        &matrices,
        &heap,
    )
    .err()
    .expect("parts counted to one aux more than the recording");
    assert!(
        err.to_string()
            .contains("(writing 5 inputs and 56 aux) do not make"),
        "{err}"
    );
    // A witness of other parts than the recording's cannot make its sizes.
    let fewer = NativeParted {
        parts: 4,
        extra_in: None,
        alike: true,
    };
    let err = synthesize_native_from_matrices_into(&fewer, &matrices, &heap)
        .err()
        .expect("4 parts of a 5-part recording");
    assert!(err.to_string().contains("cannot make"), "{err}");
}

#[test]
fn matrices_recorded_in_parts_equal_the_whole_recording() {
    let whole = |parts| Parted {
        parts,
        extend: false,
    };
    let reference = R1csMatrices::record_circuit(whole(0..5)).unwrap();
    let split = R1csMatrices::record_split(5, |parts| Ok(whole(parts))).unwrap();
    assert!(split.same_as(&reference), "split recording differs");
    assert_eq!(split.heap_bytes(), reference.heap_bytes());
    // Too few parts to split: recorded whole.
    let two = R1csMatrices::record_split(2, |parts| Ok(whole(parts))).unwrap();
    assert!(two.same_as(&R1csMatrices::record_circuit(whole(0..2)).unwrap()));
    // A sub-circuit that is not the prefix and its parts is refused.
    let extra_part = |parts: std::ops::Range<usize>| {
        let n = parts.len();
        Ok(whole(if parts.start == 3 {
            3..3 + n + 1
        } else {
            parts
        }))
    };
    let Err(err) = R1csMatrices::record_split(5, extra_part) else {
        panic!("a sub-circuit with an extra part was recorded");
    };
    assert!(err.to_string().contains("in parts"), "{err}");
}
