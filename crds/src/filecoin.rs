//! Filecoin work in a ProofJob: which proof, of which sector, from which input, to where.
//!
//! Inputs and outputs are references, never inline: a 32 GiB sector's C1 output is tens of MB
//! and etcd objects are limited to ~1.5 MB. Only the finished proof (1,920 bytes for a 32 GiB
//! PoRep) is also copied into the status.

use kube::KubeSchema;
use kube::core::Rule;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

/// The registered seal proofs a ProofJob may name, with their partition counts, as
/// filecoin-proofs-api 19.1 defines them (the prover holds this table to that crate in a test).
pub const SEAL_PROOFS: &[(&str, i32)] = &[
    ("StackedDrg2KiBV1_1", 1),
    ("StackedDrg8MiBV1_1", 1),
    ("StackedDrg512MiBV1_1", 1),
    ("StackedDrg32GiBV1_1", 10),
    ("StackedDrg64GiBV1_1", 10),
    ("StackedDrg2KiBV1_1_Feat_SyntheticPoRep", 1),
    ("StackedDrg8MiBV1_1_Feat_SyntheticPoRep", 1),
    ("StackedDrg512MiBV1_1_Feat_SyntheticPoRep", 1),
    ("StackedDrg32GiBV1_1_Feat_SyntheticPoRep", 10),
    ("StackedDrg64GiBV1_1_Feat_SyntheticPoRep", 10),
];

/// Partitions of a registered seal proof, if it is one a ProofJob may name.
pub fn seal_proof_partitions(name: &str) -> Option<i32> {
    SEAL_PROOFS
        .iter()
        .find(|(known, _)| *known == name)
        .map(|&(_, partitions)| partitions)
}

/// What kind of Filecoin proof a job makes.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize, JsonSchema)]
#[schemars(description = "")]
pub enum FilecoinProofKind {
    /// A sector's PoRep commit proof (C2), from the C1 output that lotus or curio produced.
    PoRepC2,
}

/// A Filecoin proof to make.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!(has(self.minerId) && has(self.proverId))")
    .message("give minerId or proverId, not both"))]
pub struct FilecoinWork {
    /// The kind of proof: `PoRepC2`.
    #[serde(default = "default_kind")]
    pub kind: FilecoinProofKind,

    /// The registered seal proof of the sector, e.g. `StackedDrg32GiBV1_1`; the C1 output must
    /// be of this proof (checked before proving).
    #[x_kube(validation = seal_proof_rule())]
    pub seal_proof: String,

    /// The miner's actor id (the number of its `f0…` address); the prover id is made from it
    /// as filecoin-ffi does. Default 1000 (lotus-bench's `t01000`) unless `proverId` is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub miner_id: Option<i64>,

    /// The prover id whole: 64 lowercase hex digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9a-f]{64}$"))]
    pub prover_id: Option<String>,

    /// The sector number. Required when the input is a raw C1 output; a lotus-bench commit-2
    /// file carries its own (and must agree with this one if both are given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub sector_number: Option<i64>,

    /// The C1 output: lotus-bench's commit-2 file or the raw SealCommitPhase1Output JSON.
    pub input: InputRef,

    /// Where the proof is written (seal_commit_phase2's bytes). Unset: status only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<OutputRef>,
}

fn default_kind() -> FilecoinProofKind {
    FilecoinProofKind::PoRepC2
}

/// The CEL rule that keeps `sealProof` within [`SEAL_PROOFS`].
fn seal_proof_rule() -> Rule {
    let names: Vec<&str> = SEAL_PROOFS.iter().map(|(name, _)| *name).collect();
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    Rule::new(format!("self in [{}]", quoted.join(", ")))
        .message(format!("sealProof must be one of {}", names.join(", ")).as_str())
}

/// An artifact to read, by URL, with the digest it must have.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct InputRef {
    /// `s3://bucket/key` (credentials and endpoint from the prover's `AWS_*` environment),
    /// `http(s)://…`, or `file:///path` on a volume mounted in the prover pods.
    #[x_kube(validation = Rule::new("self.startsWith('s3://') || self.startsWith('http://') || self.startsWith('https://') || self.startsWith('file:///')")
        .message("url must start with s3://, http://, https:// or file:///"))]
    #[schemars(length(min = 1, max = 2048))]
    pub url: String,

    /// SHA-256 of the input, 64 lowercase hex digits: checked before proving, so a changed or
    /// truncated input fails the job instead of proving the wrong thing.
    #[schemars(regex(pattern = r"^[0-9a-f]{64}$"))]
    pub sha256: String,
}

/// Where to write an artifact.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct OutputRef {
    /// `s3://bucket/key`, `http(s)://…` (an HTTP PUT, e.g. WebDAV) or `file:///path`.
    #[x_kube(validation = Rule::new("self.startsWith('s3://') || self.startsWith('http://') || self.startsWith('https://') || self.startsWith('file:///')")
        .message("url must start with s3://, http://, https:// or file:///"))]
    #[schemars(length(min = 1, max = 2048))]
    pub url: String,
}

/// The finished Filecoin proof, written by the prover that assembled it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct FilecoinResult {
    /// The proof as seal_commit_phase2 writes it (192 bytes per partition), base64.
    pub proof: String,
    /// Its length in bytes.
    pub proof_bytes: i64,
    /// Whether filecoin-proofs-api's `verify_seal` accepted it.
    pub verified: bool,
    /// Where it was written (`spec.filecoin.output.url`), once written.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output_url: Option<String>,
    /// Name of the prover pod that assembled and checked it.
    pub proved_by: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn partitions_come_from_the_seal_proof() {
        assert_eq!(seal_proof_partitions("StackedDrg32GiBV1_1"), Some(10));
        assert_eq!(seal_proof_partitions("StackedDrg2KiBV1_1"), Some(1));
        assert_eq!(seal_proof_partitions("StackedDrg16GiBV1_1"), None);
    }

    #[test]
    fn the_seal_proof_rule_lists_every_proof() {
        let rule = seal_proof_rule();
        assert!(
            rule.rule
                .contains("'StackedDrg64GiBV1_1_Feat_SyntheticPoRep'")
        );
        assert_eq!(rule.rule.matches("'StackedDrg").count(), SEAL_PROOFS.len());
    }
}
