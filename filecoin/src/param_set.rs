//! A Filecoin parameter set by the registered proof it proves: what a prover loads for a job and
//! keeps between jobs.

use std::path::Path;

use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::params::ProvingKey;

use crate::params::{DigestCheck, ParamFiles};
use crate::{RegisteredPoStProof, RegisteredSealProof, RegisteredUpdateProof};

/// A Filecoin parameter set a job needs.
#[derive(Clone, Copy, Debug)]
pub enum ParamSet {
    Seal(RegisteredSealProof),
    Update(RegisteredUpdateProof),
    Post(RegisteredPoStProof),
}

impl ParamSet {
    /// Its files in `dir`, as filecoin-proofs names them.
    pub fn files(self, dir: &Path) -> Result<ParamFiles, ProverError> {
        match self {
            Self::Seal(proof) => ParamFiles::of(proof, dir),
            Self::Update(proof) => Ok(ParamFiles::of_update(proof, dir)),
            Self::Post(proof) => ParamFiles::of_post(proof, dir),
        }
    }

    /// A set as a user names it (`PROOFPIPE_PRELOAD_PARAMS`; `what` in errors): `porep:`, `snap:` or `post:` and the
    /// registered proof (`post:StackedDrgWinning32GiBV1`, `porep:32GiB`, `snap:32GiB`; the
    /// prefix settles names PoRep and SnapDeals share, such as `StackedDrg32GiBV1`).
    pub fn parse(text: &str, what: &'static str) -> Result<Self, ProverError> {
        let refused = |reason: String| ProverError::InvalidArgument { what, reason };
        let (kind, proof) = text.trim().split_once(':').ok_or_else(|| {
            refused(format!(
                "{text:?} names no proof kind: write porep:PROOF, snap:PROOF or post:PROOF \
                 (e.g. post:StackedDrgWinning32GiBV1, porep:32GiB)"
            ))
        })?;
        let proof = proof.trim();
        match kind.trim() {
            "porep" => crate::parse_seal_proof(proof).map(Self::Seal),
            "snap" => crate::snap::parse_update_proof(proof).map(Self::Update),
            "post" => crate::post::parse_post_proof(proof).map(Self::Post),
            other => Err(refused(format!(
                "{other:?} in {text:?} is not a proof kind: porep, snap or post"
            ))),
        }
    }

    /// The registered proof's name, for logs.
    pub fn name(self) -> String {
        match self {
            Self::Seal(proof) => crate::seal_proof_name(proof),
            Self::Update(proof) => crate::snap::update_proof_name(proof),
            Self::Post(proof) => crate::post::post_proof_name(proof),
        }
    }

    /// Reads its proving key from `dir` (blocking: seconds to minutes).
    pub fn load(self, dir: &Path, check: DigestCheck) -> Result<ProvingKey, ProverError> {
        match self {
            Self::Seal(proof) => crate::params::load(proof, dir, check),
            Self::Update(proof) => crate::params::load_update(proof, dir, check),
            Self::Post(proof) => crate::params::load_post(proof, dir, check),
        }
    }
}
