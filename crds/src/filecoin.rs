//! Filecoin work in a ProofJob: which proof, of which sector, from which input, to where.
//!
//! Inputs and outputs are references, never inline: a 32 GiB sector's C1 output is tens of MB
//! and etcd objects are limited to ~1.5 MB. Only the finished proof (1,920 bytes for a 32 GiB
//! PoRep) is also copied into the status.

use kube::KubeSchema;
use kube::core::Rule;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

pub use proofpipe_model::kinds::{
    FilecoinProofKind, KIND_FIELDS, POST_PROOFS, SEAL_PROOFS, UPDATE_PROOFS, post_proof_partitions,
    seal_proof_partitions, update_proof_partitions,
};

/// A Filecoin proof to make.
///
/// Which fields a job sets depends on its `kind`; CEL rules, generated from
/// [`FilecoinProofKind::required_fields`] and [`FilecoinProofKind::allowed_fields`], refuse a
/// job that lacks one its kind needs or sets one its kind does not take, naming the fields.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
#[x_kube(validation = Rule::new("!(has(self.minerId) && has(self.proverId))")
    .message("give minerId or proverId, not both"))]
#[x_kube(validation = kind_requires_rule(FilecoinProofKind::PoRepC2))]
#[x_kube(validation = kind_forbids_rule(FilecoinProofKind::PoRepC2))]
#[x_kube(validation = kind_requires_rule(FilecoinProofKind::SnapDealsUpdate))]
#[x_kube(validation = kind_forbids_rule(FilecoinProofKind::SnapDealsUpdate))]
#[x_kube(validation = kind_requires_rule(FilecoinProofKind::WindowPoStPartition))]
#[x_kube(validation = kind_forbids_rule(FilecoinProofKind::WindowPoStPartition))]
#[x_kube(validation = post_proof_kind_rule(FilecoinProofKind::WindowPoStPartition))]
#[x_kube(validation = kind_requires_rule(FilecoinProofKind::WinningPoSt))]
#[x_kube(validation = kind_forbids_rule(FilecoinProofKind::WinningPoSt))]
#[x_kube(validation = post_proof_kind_rule(FilecoinProofKind::WinningPoSt))]
pub struct FilecoinWork {
    /// The kind of proof: `PoRepC2` (a sector's commit proof, the default),
    /// `SnapDealsUpdate` (a SnapDeals update proof), `WindowPoStPartition` (one partition of a
    /// WindowPoSt) or `WinningPoSt`.
    #[serde(default = "default_kind")]
    pub kind: FilecoinProofKind,

    /// PoRepC2: the registered seal proof of the sector, e.g. `StackedDrg32GiBV1_1`; the C1
    /// output must be of this proof (checked before proving). Its partitions (10 at 32 GiB)
    /// are the job's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = proof_name_rule("sealProof", SEAL_PROOFS))]
    pub seal_proof: Option<String>,

    /// SnapDealsUpdate: the registered update proof of the sector, e.g. `StackedDrg32GiBV1`;
    /// the input must be of this proof (checked before proving). Its partitions (16 at
    /// 32 GiB) are the job's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = proof_name_rule("updateProof", UPDATE_PROOFS))]
    pub update_proof: Option<String>,

    /// WindowPoSt, WinningPoSt: the registered PoSt proof, e.g. `StackedDrgWindow32GiBV1_2`
    /// or `StackedDrgWinning32GiBV1` (filecoin-proofs-api's names; the chain's WindowPoSt
    /// `V1_1` is `V1_2` here). The input (curio's request: miner, randomness, partition, the
    /// sectors' vanilla proofs) must be of this proof. A job proves one partition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = proof_name_rule("postProof", POST_PROOFS))]
    pub post_proof: Option<String>,

    /// PoRepC2: the miner's actor id (the number of its `f0…` address); the prover id is made
    /// from it as filecoin-ffi does. Default 1000 (lotus-bench's `t01000`) unless `proverId`
    /// is given.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub miner_id: Option<i64>,

    /// PoRepC2: the prover id whole, 64 lowercase hex digits.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(regex(pattern = r"^[0-9a-f]{64}$"))]
    pub prover_id: Option<String>,

    /// PoRepC2: the sector number. Required when the input is a raw C1 output; a lotus-bench
    /// commit-2 file carries its own (and must agree with this one if both are given).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub sector_number: Option<i64>,

    /// The input. PoRepC2: the C1 output (lotus-bench's commit-2 file or the raw
    /// SealCommitPhase1Output JSON). SnapDealsUpdate: the JSON of curio's request
    /// (`registered_proof`, `comm_r_old`, `comm_r_new`, `comm_d_new`, `vanilla_proofs`;
    /// docs/filecoin.md), so the SHA-256 covers the commitments too. WindowPoStPartition,
    /// WinningPoSt: the JSON of curio's request (`registered_proof`, `miner_id`,
    /// `randomness`, `partition_index`, `vanilla_proofs`; docs/filecoin.md).
    pub input: InputRef,

    /// Where the proof is written (the bytes Filecoin's prover would return: 192 per
    /// partition). Unset: status only.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub output: Option<OutputRef>,
}

fn default_kind() -> FilecoinProofKind {
    FilecoinProofKind::PoRepC2
}

impl FilecoinWork {
    /// The registered proof the work names (`sealProof` or `updateProof`, by kind), if set.
    pub fn registered_proof(&self) -> Option<&str> {
        match self.kind {
            FilecoinProofKind::PoRepC2 => self.seal_proof.as_deref(),
            FilecoinProofKind::SnapDealsUpdate => self.update_proof.as_deref(),
            FilecoinProofKind::WindowPoStPartition | FilecoinProofKind::WinningPoSt => {
                self.post_proof.as_deref()
            }
        }
    }

    /// Partitions of the proof, from its registered proof; `None` for work the API server
    /// would not have admitted.
    pub fn partitions(&self) -> Option<i32> {
        let name = self.registered_proof()?;
        match self.kind {
            FilecoinProofKind::PoRepC2 => seal_proof_partitions(name),
            FilecoinProofKind::SnapDealsUpdate => update_proof_partitions(name),
            FilecoinProofKind::WindowPoStPartition | FilecoinProofKind::WinningPoSt => {
                post_proof_partitions(name)
            }
        }
    }
}

/// The CEL rule that keeps a registered-proof field within `table`.
fn proof_name_rule(field: &str, table: &[(&str, i32)]) -> Rule {
    let names: Vec<&str> = table.iter().map(|(name, _)| *name).collect();
    let quoted: Vec<String> = names.iter().map(|n| format!("'{n}'")).collect();
    Rule::new(format!("self in [{}]", quoted.join(", ")))
        .message(format!("{field} must be one of {}", names.join(", ")).as_str())
}

/// The CEL rule that a job of `kind` sets every field its kind requires.
fn kind_requires_rule(kind: FilecoinProofKind) -> Rule {
    let has: Vec<String> = kind
        .required_fields()
        .iter()
        .map(|field| format!("has(self.{field})"))
        .collect();
    Rule::new(format!(
        "self.kind != '{}' || ({})",
        kind.as_str(),
        has.join(" && ")
    ))
    .message(kind.requirement())
}

/// The CEL rule that a PoSt job's `postProof` is a proof of its own kind (a WinningPoSt proof
/// on a WindowPoSt job would be refused only by the prover otherwise).
fn post_proof_kind_rule(kind: FilecoinProofKind) -> Rule {
    let prefix = kind
        .post_proof_prefix()
        .expect("post_proof_kind_rule is for PoSt kinds");
    Rule::new(format!(
        "self.kind != '{}' || !has(self.postProof) || self.postProof.startsWith('{prefix}')",
        kind.as_str()
    ))
    .message(format!("a {} job's postProof is a {prefix}… proof", kind.as_str()).as_str())
}

/// The fields of [`KIND_FIELDS`] a job of `kind` must leave unset.
pub fn forbidden_fields(kind: FilecoinProofKind) -> Vec<&'static str> {
    KIND_FIELDS
        .iter()
        .copied()
        .filter(|field| !kind.allowed_fields().contains(field))
        .collect()
}

/// The CEL rule that a job of `kind` sets none of the other kinds' fields.
fn kind_forbids_rule(kind: FilecoinProofKind) -> Rule {
    let fields = forbidden_fields(kind);
    let has: Vec<String> = fields
        .iter()
        .map(|field| format!("has(self.{field})"))
        .collect();
    Rule::new(format!(
        "self.kind != '{}' || !({})",
        kind.as_str(),
        has.join(" || ")
    ))
    .message(
        format!(
            "{}: leave {} unset (fields of other kinds)",
            kind.forbidden_reason(),
            fields.join(", ")
        )
        .as_str(),
    )
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
    /// The proof as Filecoin's own prover returns it (`seal_commit_phase2`,
    /// `generate_empty_sector_update_proof_with_vanilla`: 192 bytes per partition), base64.
    pub proof: String,
    /// Its length in bytes.
    pub proof_bytes: i64,
    /// Whether Filecoin's verifier for the job's kind accepted it (filecoin-proofs-api's
    /// `verify_seal` for PoRepC2, `verify_empty_sector_update_proof` for SnapDealsUpdate,
    /// `verify_window_post` / `verify_winning_post` for the PoSt kinds).
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
    fn partitions_come_from_the_registered_proof() {
        assert_eq!(seal_proof_partitions("StackedDrg32GiBV1_1"), Some(10));
        assert_eq!(seal_proof_partitions("StackedDrg2KiBV1_1"), Some(1));
        assert_eq!(seal_proof_partitions("StackedDrg16GiBV1_1"), None);
        assert_eq!(update_proof_partitions("StackedDrg32GiBV1"), Some(16));
        assert_eq!(update_proof_partitions("StackedDrg8MiBV1"), Some(4));
        assert_eq!(update_proof_partitions("StackedDrg32GiBV1_1"), None);
    }

    #[test]
    fn the_proof_name_rules_list_every_proof() {
        let rule = proof_name_rule("sealProof", SEAL_PROOFS);
        assert!(
            rule.rule
                .contains("'StackedDrg64GiBV1_1_Feat_SyntheticPoRep'")
        );
        assert_eq!(rule.rule.matches("'StackedDrg").count(), SEAL_PROOFS.len());
        let rule = proof_name_rule("updateProof", UPDATE_PROOFS);
        assert_eq!(
            rule.rule,
            "self in ['StackedDrg2KiBV1', 'StackedDrg8MiBV1', 'StackedDrg512MiBV1', \
             'StackedDrg32GiBV1', 'StackedDrg64GiBV1']"
        );
    }

    fn work(kind: FilecoinProofKind) -> FilecoinWork {
        serde_json::from_value(serde_json::json!({
            "kind": kind.as_str(),
            "sealProof": "StackedDrg32GiBV1_1",
            "updateProof": "StackedDrg32GiBV1",
            "input": {"url": "s3://b/k", "sha256": "00".repeat(32)},
        }))
        .unwrap()
    }

    #[test]
    fn each_kind_takes_its_partitions_from_its_own_proof() {
        assert_eq!(work(FilecoinProofKind::PoRepC2).partitions(), Some(10));
        assert_eq!(
            work(FilecoinProofKind::SnapDealsUpdate).partitions(),
            Some(16)
        );
        let mut unnamed = work(FilecoinProofKind::SnapDealsUpdate);
        unnamed.update_proof = None;
        assert_eq!(unnamed.partitions(), None);
    }

    #[test]
    fn post_jobs_are_one_partition_of_a_post_proof_of_their_kind() {
        let post = |kind: FilecoinProofKind, proof: &str| -> FilecoinWork {
            serde_json::from_value(serde_json::json!({
                "kind": kind.as_str(), "postProof": proof,
                "input": {"url": "s3://b/k", "sha256": "00".repeat(32)},
            }))
            .unwrap()
        };
        for (kind, proof) in [
            (
                FilecoinProofKind::WindowPoStPartition,
                "StackedDrgWindow32GiBV1_2",
            ),
            (FilecoinProofKind::WinningPoSt, "StackedDrgWinning32GiBV1"),
        ] {
            let work = post(kind, proof);
            assert_eq!(work.registered_proof(), Some(proof));
            assert_eq!(work.partitions(), Some(1));
        }
        assert_eq!(
            post_proof_partitions("StackedDrgWindow32GiBV1"),
            None,
            "V1 is retired"
        );
        let rule = post_proof_kind_rule(FilecoinProofKind::WindowPoStPartition);
        assert_eq!(
            rule.rule,
            "self.kind != 'WindowPoStPartition' || !has(self.postProof) || \
             self.postProof.startsWith('StackedDrgWindow')"
        );
        for (name, _) in POST_PROOFS {
            assert!(
                [
                    FilecoinProofKind::WindowPoStPartition,
                    FilecoinProofKind::WinningPoSt
                ]
                .iter()
                .filter(|k| name.starts_with(k.post_proof_prefix().unwrap()))
                .count()
                    == 1,
                "{name} is of exactly one PoSt kind"
            );
        }
    }

    #[test]
    fn kinds_serialize_as_their_names() {
        for &kind in FilecoinProofKind::ALL {
            assert_eq!(serde_json::to_value(kind).unwrap(), kind.as_str());
        }
    }

    #[test]
    fn every_kind_field_belongs_to_a_kind_and_every_kind_needs_its_own() {
        for field in KIND_FIELDS {
            assert!(
                FilecoinProofKind::ALL
                    .iter()
                    .any(|kind| kind.allowed_fields().contains(field)),
                "{field} belongs to no kind"
            );
        }
        for &kind in FilecoinProofKind::ALL {
            for field in kind.required_fields() {
                assert!(kind.allowed_fields().contains(field), "{kind:?} {field}");
            }
            for field in kind.allowed_fields() {
                assert!(KIND_FIELDS.contains(field), "{kind:?} {field}");
            }
        }
    }

    #[test]
    fn the_kind_rules_name_the_fields() {
        let requires = kind_requires_rule(FilecoinProofKind::SnapDealsUpdate);
        assert_eq!(
            requires.rule,
            "self.kind != 'SnapDealsUpdate' || (has(self.updateProof))"
        );
        let forbids = kind_forbids_rule(FilecoinProofKind::SnapDealsUpdate);
        assert_eq!(
            forbids.rule,
            "self.kind != 'SnapDealsUpdate' || !(has(self.sealProof) || has(self.minerId) || \
             has(self.proverId) || has(self.sectorNumber) || has(self.postProof))"
        );
        let message = serde_json::to_value(&forbids).unwrap()["message"].clone();
        assert_eq!(
            message,
            "a SnapDealsUpdate job names its proof by updateProof, and its sector by the \
             commitments in its input: leave sealProof, minerId, proverId, sectorNumber, \
             postProof unset (fields of other kinds)"
        );
        assert_eq!(
            forbidden_fields(FilecoinProofKind::PoRepC2),
            ["updateProof", "postProof"]
        );
        assert_eq!(
            forbidden_fields(FilecoinProofKind::WinningPoSt),
            [
                "sealProof",
                "minerId",
                "proverId",
                "sectorNumber",
                "updateProof"
            ]
        );
    }

    /// Every kind's two rules are in the generated schema of `spec.filecoin`.
    #[test]
    fn the_schema_holds_the_rules_of_every_kind() {
        let crd =
            serde_json::to_value(<crate::ProofJob as kube::CustomResourceExt>::crd()).unwrap();
        let rules = &crd["spec"]["versions"][0]["schema"]["openAPIV3Schema"]["properties"]["spec"]
            ["properties"]["filecoin"]["x-kubernetes-validations"];
        let rules: Vec<&str> = rules
            .as_array()
            .expect("filecoin has CEL rules")
            .iter()
            .filter_map(|r| r["rule"].as_str())
            .collect();
        for &kind in FilecoinProofKind::ALL {
            for rule in [kind_requires_rule(kind), kind_forbids_rule(kind)] {
                assert!(rules.contains(&rule.rule.as_str()), "{kind:?}: {rules:#?}");
            }
        }
    }
}
