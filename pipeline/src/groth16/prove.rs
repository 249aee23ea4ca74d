//! The GPU stage ("prove start") and the CPU finalize stage of a Groth16 proof.

use std::ops::{AddAssign, Mul, MulAssign};
use std::sync::Arc;

use bellperson::groth16::{Parameters, Proof};
use blstrs::{Bls12, G1Projective, G2Projective, Scalar as Fr};
use group::Curve;
use group::prime::PrimeCurveAffine;
use proofpipe_kernels::{
    Bases, Density, DensityTracker, KernelError, Placement, ProvingBackend, QuotientBuffers,
};

use super::Synthesized;

/// Where the G2 MSM runs, and where each query's bases are: the model's, since a plan
/// chooses them.
pub use proofpipe_model::sizing::{BasesPlacement, G2Placement, QueryPlacement};

/// A partition after the GPU stage: the a/b/c evaluations are gone; what remains is the
/// assignment (for a G2 MSM still to run) and the G1 results.
pub struct Started {
    h: G1Projective,
    l: G1Projective,
    a: G1Projective,
    b_g1: G1Projective,
    b_g2: Option<G2Projective>,
    inputs: Arc<Vec<Fr>>,
    aux: Arc<Vec<Fr>>,
    b_input_density: Arc<DensityTracker>,
    b_aux_density: Arc<DensityTracker>,
    public_inputs: Vec<Fr>,
    /// Where the bases are, for the G2 MSM if finalize runs it.
    placement: QueryPlacement,
}

impl Started {
    /// Heap bytes still held (the exponents kept for the G2 MSM, and the densities).
    pub fn heap_bytes(&self) -> u64 {
        let exps = self.inputs.capacity() + self.aux.capacity();
        (exps * size_of::<Fr>() + exps / 4) as u64
    }

    pub fn public_inputs(&self) -> &[Fr] {
        &self.public_inputs
    }
}

/// Fails unless `params` were made for a circuit of this shape.
fn check_params(params: &Parameters<Bls12>, s: &Synthesized) -> Result<(), KernelError> {
    let mismatch = |what: &'static str, have: usize, want: usize| {
        if have == want {
            Ok(())
        } else {
            Err(KernelError::Msm {
                what,
                message: format!(
                    "the parameters have {have} points where this circuit needs {want}: they were made for another circuit or size"
                ),
            })
        }
    };
    mismatch("L query", params.l.len(), s.aux.len())?;
    mismatch("IC (public inputs)", params.vk.ic.len(), s.inputs.len())?;
    mismatch(
        "H query",
        params.h.len(),
        proofpipe_kernels::domain_size(s.a.len()) - 1,
    )?;
    mismatch(
        "A query",
        params.a.len(),
        s.inputs.len() + s.a_aux_density.get_total_density(),
    )
}

/// The GPU stage: the quotient polynomial and its H MSM, the other G1 MSMs (and the G2 MSM
/// when placed here).
///
/// The a/b/c evaluations are consumed by the quotient computation and freed before any MSM
/// runs, so a partition holds its largest buffers only for the FFT phase. `buffers`: how
/// many of them the GPU holds at once (the plan's, for the card's memory).
pub fn prove_start(
    backend: &dyn ProvingBackend,
    params: &Parameters<Bls12>,
    s: Synthesized,
    g2: G2Placement,
    placement: QueryPlacement,
    buffers: QuotientBuffers,
) -> Result<Started, KernelError> {
    check_params(params, &s)?;
    let Synthesized {
        a,
        b,
        c,
        inputs,
        aux,
        a_aux_density,
        b_input_density,
        b_aux_density,
    } = s;
    let public_inputs = inputs[1..].to_vec();
    // The quotient and its MSM in one call: a GPU backend keeps h on the device.
    let h = backend.h_msm(a, b, c, &placed(&params.h, 0, placement.h), buffers)?;
    // The exponents stay field elements (Montgomery form): the backend converts them where
    // it must (the GPU on the device, the CPU backend while gathering), not here.
    let inputs = Arc::new(inputs);
    let aux = Arc::new(aux);

    let l = backend.msm_g1(&placed(&params.l, 0, placement.l), &Density::Full, &aux)?;

    let a_aux_density = Density::Sparse(Arc::new(a_aux_density));
    let b_input_density = Arc::new(b_input_density);
    let b_aux_density = Arc::new(b_aux_density);
    let (b_in, b_aux) = (
        Density::Sparse(b_input_density.clone()),
        Density::Sparse(b_aux_density.clone()),
    );
    let n_in = inputs.len();

    let a_bases = |skip| placed(&params.a, skip, placement.a);
    let mut a_sum = backend.msm_g1(&a_bases(0), &Density::Full, &inputs)?;
    a_sum += backend.msm_g1(&a_bases(n_in), &a_aux_density, &aux)?;
    let b_in_count = b_input_density.get_total_density();
    let b_bases = |skip| placed(&params.b_g1, skip, placement.b_g1);
    let mut b_g1 = backend.msm_g1(&b_bases(0), &b_in, &inputs)?;
    b_g1 += backend.msm_g1(&b_bases(b_in_count), &b_aux, &aux)?;

    let mut started = Started {
        h,
        l,
        a: a_sum,
        b_g1,
        b_g2: None,
        inputs,
        aux,
        b_input_density,
        b_aux_density,
        public_inputs,
        placement,
    };
    if g2 == G2Placement::GpuStage {
        started.b_g2 = Some(msm_b_g2(backend, params, &started)?);
    }
    Ok(started)
}

fn msm_b_g2(
    backend: &dyn ProvingBackend,
    params: &Parameters<Bls12>,
    s: &Started,
) -> Result<G2Projective, KernelError> {
    let b_in_count = s.b_input_density.get_total_density();
    let mut sum = backend.msm_g2(
        &placed(&params.b_g2, 0, s.placement.b_g2),
        &Density::Sparse(s.b_input_density.clone()),
        &s.inputs,
    )?;
    sum += backend.msm_g2(
        &placed(&params.b_g2, b_in_count, s.placement.b_g2),
        &Density::Sparse(s.b_aux_density.clone()),
        &s.aux,
    )?;
    Ok(sum)
}

/// The bases `points[skip..]` where the plan put them: on the device, or streamed from host
/// memory to a GPU too small to hold every query.
fn placed<G>(points: &Arc<Vec<G>>, skip: usize, placement: BasesPlacement) -> Bases<G> {
    let placement = match placement {
        BasesPlacement::Resident => Placement::Resident,
        BasesPlacement::Streamed => Placement::Streamed,
    };
    Bases::with_placement(points.clone(), skip, placement)
}

/// Finalize: the G2 MSM if the GPU stage left it, then the proof from the MSM results and
/// the randomizers `r`, `s` (which make the proof zero-knowledge).
pub fn finalize(
    backend: &dyn ProvingBackend,
    params: &Parameters<Bls12>,
    started: Started,
    r: Fr,
    s: Fr,
) -> Result<(Proof<Bls12>, Vec<Fr>), KernelError> {
    let b_g2 = match started.b_g2 {
        Some(b) => b,
        None => msm_b_g2(backend, params, &started)?,
    };
    let vk = &params.vk;
    if bool::from(vk.delta_g1.is_identity() | vk.delta_g2.is_identity()) {
        // A zero delta means a subverted setup; refuse rather than leak the witness.
        return Err(KernelError::Msm {
            what: "verifying key",
            message: "delta is the identity".into(),
        });
    }

    let mut g_a = vk.delta_g1.mul(r);
    g_a.add_assign(&vk.alpha_g1);
    g_a.add_assign(&started.a);

    let mut g_b = vk.delta_g2.mul(s);
    g_b.add_assign(&vk.beta_g2);
    g_b.add_assign(&b_g2);

    let mut g_c = started.a;
    g_c.mul_assign(s);
    let mut b1 = started.b_g1;
    b1.mul_assign(r);
    g_c.add_assign(&b1);
    g_c.add_assign(vk.delta_g1.mul(r * s));
    g_c.add_assign(&vk.alpha_g1.mul(s));
    g_c.add_assign(&vk.beta_g1.mul(r));
    g_c.add_assign(&started.h);
    g_c.add_assign(&started.l);

    let proof = Proof {
        a: g_a.to_affine(),
        b: g_b.to_affine(),
        c: g_c.to_affine(),
    };
    Ok((proof, started.public_inputs))
}
