//! Every Filecoin proof kind behind one trait: an input read and checked, its partitions'
//! source for the pipeline, the parameter set that proves them, Filecoin's verdict on the
//! assembled proof and Filecoin's own prover to compare with. The CLI's prove and verify and the
//! daemon are written once against [`FilecoinInput`]; [`parse_input`] is the one place that
//! names each kind.
//!
//! A new kind is one implementation of [`FilecoinInput`], one arm in [`parse_input`] and its row
//! of the model's table (`proofpipe_model::kinds::FilecoinProofKind`: its spec fields, its
//! verifier, urgent or not).

use std::path::Path;
use std::sync::Arc;

use filecoin_proofs_api::PartitionSnarkProof;
use proofpipe_model::kinds::{FilecoinProofKind, seal_proof_partitions};
use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::groth16::{R1csMatrices, SynthesisMode};
use proofpipe_pipeline::pipeline::PartitionSource;
use serde_json::{Map, Value, json};

use crate::c1::{self, C1Input, SectorIdentity};
use crate::param_set::ParamSet;
use crate::post::{self, PostInput, PostKind, PostSector};
use crate::snap::{self, SnapInput};
use crate::{porep, seal_proof_name};

/// An input's partitions, ready for the pipeline.
pub struct KindJob {
    pub source: Arc<dyn PartitionSource>,
    pub partitions: u32,
    /// The R1CS matrices the source synthesizes from (two-pass synthesis), if it does: their
    /// bytes belong in the sizing.
    pub matrices: Option<Arc<R1csMatrices>>,
}

impl KindJob {
    /// Heap bytes of the matrices, 0 in one pass.
    pub fn matrices_bytes(&self) -> u64 {
        self.matrices.as_ref().map_or(0, |m| m.heap_bytes())
    }
}

/// A Filecoin proof's input, parsed and checked: what every kind answers.
pub trait FilecoinInput: Send + Sync {
    /// The kind, as the model's table and the API name it.
    fn kind(&self) -> FilecoinProofKind;

    /// The registered proof's name (`StackedDrg32GiBV1_1`, `StackedDrgWindow32GiBV1_2`, ...).
    fn proof_name(&self) -> String;

    /// The parameter set its partitions are proved with.
    fn param_set(&self) -> ParamSet;

    /// What the input is, for people: the proof and its sector(s) or partition.
    fn describe(&self) -> String;

    /// The proof this input makes, for people ("StackedDrg2KiBV1 proof", "StackedDrgWindow2KiBV1_2
    /// WindowPoSt of 3 sectors").
    fn proof_of(&self) -> String {
        format!("{} proof", self.proof_name())
    }

    /// Its own fields of a prove summary (the proof, its sector or sectors), beside the
    /// verdict under `verdict_field` (the shared ones are the CLI's).
    fn summary_fields(&self, verdict: Option<bool>) -> Map<String, Value>;

    /// Prepares its partitions, synthesized in one pass or with [`SynthesisMode::Matrices`]
    /// from the R1CS matrices and the native witness where the kind has one. CPU work (decoding
    /// and checking vanilla proofs): call it off any async runtime.
    fn prepare(&self, synthesis: SynthesisMode) -> Result<KindJob, ProverError>;

    /// Partitions of the whole proof.
    fn partitions(&self) -> Result<u32, ProverError>;

    /// Filecoin's verdict on `proof` (the assembled bytes) for this input.
    fn verify(&self, proof: &[u8]) -> Result<bool, ProverError>;

    /// The same input through filecoin-proofs-api's own prover (bellperson's batch prover):
    /// the baseline of `--compare-stock`.
    fn stock_prove(&self) -> Result<Vec<u8>, ProverError>;
}

/// Reads the input of a `kind` proof from `bytes` (from `origin`, a path or a URL, named in
/// errors). A PoRep C1 output takes its sector's identity from `identity`; the other kinds carry
/// theirs. A PoSt input is read whichever PoSt kind it is: compare [`FilecoinInput::kind`].
pub fn parse_input(
    kind: FilecoinProofKind,
    bytes: &[u8],
    origin: &Path,
    identity: SectorIdentity,
) -> Result<Box<dyn FilecoinInput>, ProverError> {
    let input: Box<dyn FilecoinInput> = match kind {
        FilecoinProofKind::PoRepC2 => Box::new(c1::parse(bytes, origin, identity)?),
        FilecoinProofKind::SnapDealsUpdate => Box::new(SnapInput::parse(bytes)?),
        FilecoinProofKind::WindowPoStPartition | FilecoinProofKind::WinningPoSt => {
            Box::new(PostInput::parse(bytes)?)
        }
    };
    Ok(input)
}

/// [`parse_input`] of the file at `path`.
pub fn read_input(
    kind: FilecoinProofKind,
    path: &Path,
    identity: SectorIdentity,
) -> Result<Box<dyn FilecoinInput>, ProverError> {
    let action = match kind {
        FilecoinProofKind::PoRepC2 => "reading the C1 output",
        FilecoinProofKind::SnapDealsUpdate => "reading the SnapDeals input",
        FilecoinProofKind::WindowPoStPartition | FilecoinProofKind::WinningPoSt => {
            "reading the PoSt input"
        }
    };
    crate::input_file::read(path, action, |bytes| {
        parse_input(kind, bytes, path, identity)
    })
}

impl FilecoinInput for C1Input {
    fn kind(&self) -> FilecoinProofKind {
        FilecoinProofKind::PoRepC2
    }

    fn proof_name(&self) -> String {
        seal_proof_name(self.seal_proof())
    }

    fn param_set(&self) -> ParamSet {
        ParamSet::Seal(self.seal_proof())
    }

    fn describe(&self) -> String {
        format!("{} sector {}", self.proof_name(), u64::from(self.sector_id))
    }

    fn summary_fields(&self, verdict: Option<bool>) -> Map<String, Value> {
        fields(json!({
            "seal_proof": self.proof_name(),
            "sector_number": u64::from(self.sector_id),
            "verify_seal": verdict,
        }))
    }

    fn prepare(&self, synthesis: SynthesisMode) -> Result<KindJob, ProverError> {
        let job = porep::prepare(self, synthesis)?;
        Ok(KindJob {
            source: job.source,
            partitions: job.partitions,
            matrices: job.matrices,
        })
    }

    fn partitions(&self) -> Result<u32, ProverError> {
        let name = self.proof_name();
        seal_proof_partitions(&name)
            .and_then(|p| u32::try_from(p).ok())
            .ok_or_else(|| ProverError::InvalidArgument {
                what: "seal proof",
                reason: format!("{name} is not a seal proof this prover knows"),
            })
    }

    fn verify(&self, proof: &[u8]) -> Result<bool, ProverError> {
        porep::verify(self, proof)
    }

    fn stock_prove(&self) -> Result<Vec<u8>, ProverError> {
        filecoin_proofs_api::seal::seal_commit_phase2(
            self.output.clone(),
            self.prover_id,
            self.sector_id,
        )
        .map(|out| out.proof)
        .map_err(ProverError::filecoin("stock seal_commit_phase2"))
    }
}

impl FilecoinInput for SnapInput {
    fn kind(&self) -> FilecoinProofKind {
        FilecoinProofKind::SnapDealsUpdate
    }

    fn proof_name(&self) -> String {
        snap::update_proof_name(self.update_proof)
    }

    fn param_set(&self) -> ParamSet {
        ParamSet::Update(self.update_proof)
    }

    fn describe(&self) -> String {
        format!("{} SnapDeals update", self.proof_name())
    }

    fn summary_fields(&self, verdict: Option<bool>) -> Map<String, Value> {
        fields(json!({
            "update_proof": self.proof_name(),
            "verify_empty_sector_update_proof": verdict,
        }))
    }

    fn prepare(&self, synthesis: SynthesisMode) -> Result<KindJob, ProverError> {
        let job = snap::prepare(self, synthesis)?;
        Ok(KindJob {
            source: job.source,
            partitions: job.partitions,
            matrices: job.matrices,
        })
    }

    fn partitions(&self) -> Result<u32, ProverError> {
        Ok(snap::partitions(self.update_proof))
    }

    fn verify(&self, proof: &[u8]) -> Result<bool, ProverError> {
        snap::verify(self, proof)
    }

    fn stock_prove(&self) -> Result<Vec<u8>, ProverError> {
        filecoin_proofs_api::update::generate_empty_sector_update_proof_with_vanilla(
            self.update_proof,
            self.vanilla_proofs
                .iter()
                .cloned()
                .map(filecoin_proofs_api::PartitionProofBytes)
                .collect(),
            self.comm_r_old,
            self.comm_r_new,
            self.comm_d_new,
        )
        .map(|proof| proof.0)
        .map_err(ProverError::filecoin(
            "stock generate_empty_sector_update_proof_with_vanilla",
        ))
    }
}

impl FilecoinInput for PostInput {
    fn kind(&self) -> FilecoinProofKind {
        match PostInput::kind(self) {
            PostKind::Window => FilecoinProofKind::WindowPoStPartition,
            PostKind::Winning => FilecoinProofKind::WinningPoSt,
        }
    }

    fn proof_name(&self) -> String {
        post::post_proof_name(self.post_proof)
    }

    fn param_set(&self) -> ParamSet {
        ParamSet::Post(self.post_proof)
    }

    fn describe(&self) -> String {
        format!(
            "{} {}{}, {} sectors",
            self.proof_name(),
            post::kind_name(&PostInput::kind(self)),
            self.partition_index
                .map_or(String::new(), |k| format!(" partition {k}")),
            self.vanilla_proofs.len(),
        )
    }

    fn proof_of(&self) -> String {
        format!(
            "{} {} of {} sectors{}",
            self.proof_name(),
            post::kind_name(&PostInput::kind(self)),
            self.vanilla_proofs.len(),
            self.partition_index
                .map_or(String::new(), |k| format!(" (partition {k})")),
        )
    }

    fn summary_fields(&self, verdict: Option<bool>) -> Map<String, Value> {
        fields(json!({
            "kind": post::kind_name(&PostInput::kind(self)),
            "post_proof": self.proof_name(),
            "partition_index": self.partition_index,
            "sectors": self.vanilla_proofs.len(),
            "verifier": FilecoinInput::kind(self).verifier(),
            "verified": verdict,
        }))
    }

    fn prepare(&self, synthesis: SynthesisMode) -> Result<KindJob, ProverError> {
        let job = post::prepare(self, synthesis)?;
        Ok(KindJob {
            source: job.source,
            partitions: job.partitions,
            matrices: job.matrices,
        })
    }

    fn partitions(&self) -> Result<u32, ProverError> {
        Ok(match self.partition_index {
            Some(_) => 1,
            None => post::partitions_for(self.post_proof, self.vanilla_proofs.len()),
        })
    }

    fn verify(&self, proof: &[u8]) -> Result<bool, ProverError> {
        let sectors: Vec<PostSector> = post::sectors(self)?;
        post::verify_sectors(self, &sectors, proof)
    }

    fn stock_prove(&self) -> Result<Vec<u8>, ProverError> {
        use filecoin_proofs_api::post as stock;
        let vanilla = self.vanilla_proofs.to_vec();
        let (proof, randomness, prover_id) = (self.post_proof, &self.randomness, self.prover_id);
        match (PostInput::kind(self), self.partition_index) {
            (PostKind::Winning, _) => {
                stock::generate_winning_post_with_vanilla(proof, randomness, prover_id, &vanilla)
                    .map(|mut v| v.remove(0).1)
                    .map_err(ProverError::filecoin(
                        "stock generate_winning_post_with_vanilla",
                    ))
            }
            (PostKind::Window, None) => {
                stock::generate_window_post_with_vanilla(proof, randomness, prover_id, &vanilla)
                    .map(|mut v| v.remove(0).1)
                    .map_err(ProverError::filecoin(
                        "stock generate_window_post_with_vanilla",
                    ))
            }
            (PostKind::Window, Some(k)) => stock::generate_single_window_post_with_vanilla(
                proof, randomness, prover_id, &vanilla, k as usize,
            )
            .map(|PartitionSnarkProof(bytes)| bytes)
            .map_err(ProverError::filecoin(
                "stock generate_single_window_post_with_vanilla",
            )),
        }
    }
}

fn fields(value: Value) -> Map<String, Value> {
    match value {
        Value::Object(map) => map,
        _ => unreachable!("the summaries above are objects"),
    }
}
