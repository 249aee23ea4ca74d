//! From a `SubmitProofRequest` to what the gateway will store and create: pure, so every rule
//! (which proofs are accepted, how priorities map, how a request id names its job) is tested
//! without a cluster.

use sha2::{Digest, Sha256};

use crate::error::GatewayError;
use crate::proto::{Priority, ProofKind, SubmitProofRequest};

/// `spec.priority` of a job for each of the API's priorities. Far apart, so that jobs applied
/// with kubectl can be placed between them; CRITICAL (WinningPoSt, due within an epoch) above
/// anything else.
pub const PRIORITY_LOW: i32 = -100;
pub const PRIORITY_NORMAL: i32 = 0;
pub const PRIORITY_HIGH: i32 = 100;
pub const PRIORITY_CRITICAL: i32 = 1000;

/// The longest request id kept in a job name (the rest is in its annotation).
const NAME_PREFIX_CHARS: usize = 40;
/// Hex digits of the request id's SHA-256 in a job name: distinct ids give distinct names
/// even when their readable prefixes are equal.
const NAME_DIGEST_CHARS: usize = 12;

/// The registered seal proofs by their number in the Filecoin actors' ABI
/// (`abi.RegisteredSealProof`, what curio sends in `registered_proof`), with the sector size.
/// 0-4 are the retired V1 proofs, 15-19 non-interactive PoRep.
const SEAL_PROOF_NUMBERS: &[(u64, &str, u64)] = &[
    (5, "StackedDrg2KiBV1_1", 2 << 10),
    (6, "StackedDrg8MiBV1_1", 8 << 20),
    (7, "StackedDrg512MiBV1_1", 512 << 20),
    (8, "StackedDrg32GiBV1_1", 32 << 30),
    (9, "StackedDrg64GiBV1_1", 64 << 30),
    (10, "StackedDrg2KiBV1_1_Feat_SyntheticPoRep", 2 << 10),
    (11, "StackedDrg8MiBV1_1_Feat_SyntheticPoRep", 8 << 20),
    (12, "StackedDrg512MiBV1_1_Feat_SyntheticPoRep", 512 << 20),
    (13, "StackedDrg32GiBV1_1_Feat_SyntheticPoRep", 32 << 30),
    (14, "StackedDrg64GiBV1_1_Feat_SyntheticPoRep", 64 << 30),
];

/// What one accepted submission becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submission {
    /// The caller's idempotency key, or one the gateway made up when it gave none.
    pub request_id: String,
    /// The ProofJob's name: the job id the caller gets back.
    pub job_name: String,
    /// The registered seal proof, as `spec.filecoin.sealProof` names it.
    pub seal_proof: &'static str,
    /// `spec.priority`.
    pub priority: i32,
    /// The API's name of the priority, kept on the job for people reading it.
    pub priority_name: &'static str,
    /// `spec.filecoin.minerId`.
    pub miner_id: i64,
    /// `spec.filecoin.sectorNumber`; unset when the request's is 0 (proto3's "not given"), so
    /// the number inside the C1 envelope is used.
    pub sector_number: Option<i64>,
    /// SHA-256 of the C1 output, lowercase hex: the job's `input.sha256`.
    pub input_sha256: String,
}

/// Checks `request` and derives its job. `generated_id` supplies a request id when the
/// caller gave none (then the submission is not idempotent: a retry creates a new job).
pub fn plan(
    request: &SubmitProofRequest,
    generated_id: impl FnOnce() -> String,
) -> Result<Submission, GatewayError> {
    let kind = ProofKind::try_from(request.proof_kind).map_err(|_| {
        GatewayError::invalid(format!(
            "proof_kind {} is not one the API defines",
            request.proof_kind
        ))
    })?;
    match kind {
        ProofKind::PorepSealCommit => {}
        ProofKind::Unspecified => {
            return Err(GatewayError::invalid(
                "proof_kind is unset: set POREP_SEAL_COMMIT for a sector's C2",
            ));
        }
        other => {
            return Err(GatewayError::Unsupported(format!(
                "{} proofs are not served by proofpipe yet: only POREP_SEAL_COMMIT is; prove \
                 these with the seed engine meanwhile",
                other.as_str_name()
            )));
        }
    }
    let (seal_proof, sector_size) = seal_proof(request.registered_proof)?;
    if request.sector_size != 0 && request.sector_size != sector_size {
        return Err(GatewayError::invalid(format!(
            "sector_size {} does not match registered_proof {} ({seal_proof}, {sector_size} \
             bytes)",
            request.sector_size, request.registered_proof
        )));
    }
    if request.vanilla_proof.is_empty() {
        let hint = if request.vanilla_proofs.is_empty() {
            ""
        } else {
            " (vanilla_proofs is for PoSt and SnapDeals)"
        };
        return Err(GatewayError::invalid(format!(
            "vanilla_proof is empty: a PoRep C2 needs the C1 output there, as lotus-bench's \
             commit-2 JSON or the raw SealCommitPhase1Output JSON{hint}"
        )));
    }
    if request.vanilla_proof.trim_ascii_start().first() != Some(&b'{') {
        return Err(GatewayError::invalid(
            "vanilla_proof is not JSON: a PoRep C2 needs the C1 output as lotus-bench's \
             commit-2 JSON or the raw SealCommitPhase1Output JSON",
        ));
    }
    let miner_id = i64::try_from(request.miner_id).map_err(|_| {
        GatewayError::invalid(format!("miner_id {} is out of range", request.miner_id))
    })?;
    let sector_number = match request.sector_number {
        0 => None,
        n => Some(
            i64::try_from(n)
                .map_err(|_| GatewayError::invalid(format!("sector_number {n} is out of range")))?,
        ),
    };
    let (priority, priority_name) = priority(request.priority, kind)?;
    let request_id = if request.request_id.is_empty() {
        generated_id()
    } else {
        request.request_id.clone()
    };
    Ok(Submission {
        job_name: job_name(&request_id),
        request_id,
        seal_proof,
        priority,
        priority_name,
        miner_id,
        sector_number,
        input_sha256: hex(&Sha256::digest(&request.vanilla_proof)),
    })
}

/// The seal proof named by a registered-proof number, with its sector size.
fn seal_proof(number: u64) -> Result<(&'static str, u64), GatewayError> {
    if let Some(&(_, name, size)) = SEAL_PROOF_NUMBERS.iter().find(|(n, ..)| *n == number) {
        return Ok((name, size));
    }
    Err(match number {
        0..=4 => GatewayError::invalid(format!(
            "registered_proof {number} is a retired V1 seal proof; seal with a V1_1 proof (5-9) \
             or a synthetic-PoRep one (10-14)"
        )),
        15..=19 => GatewayError::Unsupported(format!(
            "registered_proof {number} is non-interactive PoRep, which proofpipe does not prove \
             yet"
        )),
        _ => GatewayError::invalid(format!(
            "registered_proof {number} is not a registered seal proof (5-14 are accepted)"
        )),
    })
}

/// `spec.priority` for the API's priority; unspecified takes the kind's default (NORMAL for a
/// PoRep, as the seed engine does).
fn priority(value: i32, kind: ProofKind) -> Result<(i32, &'static str), GatewayError> {
    let priority = Priority::try_from(value).map_err(|_| {
        GatewayError::invalid(format!("priority {value} is not one the API defines"))
    })?;
    let priority = match (priority, kind) {
        (Priority::Unspecified, ProofKind::WinningPost) => Priority::Critical,
        (Priority::Unspecified, _) => Priority::Normal,
        (given, _) => given,
    };
    let value = match priority {
        Priority::Low => PRIORITY_LOW,
        Priority::Unspecified | Priority::Normal => PRIORITY_NORMAL,
        Priority::High => PRIORITY_HIGH,
        Priority::Critical => PRIORITY_CRITICAL,
    };
    Ok((value, priority.as_str_name()))
}

/// The ProofJob name for a request id: its readable part (lowercase, runs of anything outside
/// `[a-z0-9]` as one `-`, at most 40 characters) and 12 hex digits of its SHA-256, so the same
/// id always names the same job and two ids never share one in practice. At most 53
/// characters: a DNS label, usable as a label value and in object keys.
pub fn job_name(request_id: &str) -> String {
    let mut readable = String::with_capacity(NAME_PREFIX_CHARS);
    for c in request_id.chars().flat_map(char::to_lowercase) {
        if readable.len() == NAME_PREFIX_CHARS {
            break;
        }
        if c.is_ascii_lowercase() || c.is_ascii_digit() {
            readable.push(c);
        } else if !readable.is_empty() && !readable.ends_with('-') {
            readable.push('-');
        }
    }
    let readable = readable.trim_end_matches('-');
    let digest = hex(&Sha256::digest(request_id.as_bytes()));
    let digest = &digest[..NAME_DIGEST_CHARS];
    if readable.is_empty() {
        format!("proof-{digest}")
    } else {
        format!("{readable}-{digest}")
    }
}

/// The seed engine's name of a proof kind (its queue names in `GetStatus`).
pub fn kind_name(kind: ProofKind) -> &'static str {
    match kind {
        ProofKind::PorepSealCommit => "porep-c2",
        ProofKind::SnapDealsUpdate => "snap-update",
        ProofKind::WindowPostPartition => "window-post",
        ProofKind::WinningPost => "winning-post",
        ProofKind::Unspecified => "unspecified",
    }
}

pub(crate) fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}

#[cfg(test)]
mod tests {
    use tonic::Code;

    use super::*;

    fn porep(request_id: &str) -> SubmitProofRequest {
        SubmitProofRequest {
            request_id: request_id.into(),
            proof_kind: ProofKind::PorepSealCommit as i32,
            sector_size: 2048,
            registered_proof: 5,
            priority: Priority::Normal as i32,
            vanilla_proof: br#"{"SectorNum":1,"Phase1Out":"e30=","SectorSize":2048}"#.to_vec(),
            sector_number: 1,
            miner_id: 1000,
            ..Default::default()
        }
    }

    fn code(request: &SubmitProofRequest) -> (Code, String) {
        let status = tonic::Status::from(plan(request, || "generated".into()).unwrap_err());
        (status.code(), status.message().to_owned())
    }

    #[test]
    fn a_porep_request_becomes_a_job_of_its_seal_proof() {
        let submission = plan(&porep("porep-1000-1"), || unreachable!()).unwrap();
        assert_eq!(submission.seal_proof, "StackedDrg2KiBV1_1");
        assert_eq!(submission.miner_id, 1000);
        assert_eq!(submission.sector_number, Some(1));
        assert_eq!(submission.priority, PRIORITY_NORMAL);
        assert_eq!(submission.request_id, "porep-1000-1");
        assert!(submission.job_name.starts_with("porep-1000-1-"));
        assert_eq!(
            submission.input_sha256,
            hex(&Sha256::digest(&porep("x").vanilla_proof))
        );
    }

    #[test]
    fn the_same_request_id_names_the_same_job_and_different_ids_different_jobs() {
        assert_eq!(job_name("porep-1000-1"), job_name("porep-1000-1"));
        assert_ne!(job_name("porep-1000-1"), job_name("porep-1000-2"));
        // Equal readable parts, different ids.
        assert_ne!(job_name("A_b"), job_name("a-b"));
    }

    #[test]
    fn job_names_are_dns_labels_whatever_the_id() {
        for id in [
            "porep-1000-1",
            "UPPER case/with:symbols",
            "---",
            "",
            "é unicode ✓",
            &"x".repeat(300),
            "trailing-",
        ] {
            let name = job_name(id);
            assert!(name.len() <= 53, "{name}");
            assert!(
                name.chars()
                    .all(|c| c.is_ascii_lowercase() || c.is_ascii_digit() || c == '-'),
                "{name}"
            );
            assert!(!name.starts_with('-') && !name.ends_with('-'), "{name}");
            assert!(!name.contains("--"), "{name}");
        }
        assert!(job_name("---").starts_with("proof-"));
    }

    #[test]
    fn an_empty_request_id_gets_a_generated_one() {
        let mut request = porep("");
        request.request_id.clear();
        let submission = plan(&request, || "gw-abc".into()).unwrap();
        assert_eq!(submission.request_id, "gw-abc");
        assert_eq!(submission.job_name, job_name("gw-abc"));
    }

    #[test]
    fn priorities_map_in_order_with_critical_above_all() {
        let mut values = Vec::new();
        for p in [
            Priority::Low,
            Priority::Normal,
            Priority::High,
            Priority::Critical,
        ] {
            let mut request = porep("p");
            request.priority = p as i32;
            values.push(plan(&request, || unreachable!()).unwrap().priority);
        }
        assert!(values.is_sorted_by(|a, b| a < b), "{values:?}");
        let mut unspecified = porep("p");
        unspecified.priority = Priority::Unspecified as i32;
        let submission = plan(&unspecified, || unreachable!()).unwrap();
        assert_eq!(
            (submission.priority, submission.priority_name),
            (PRIORITY_NORMAL, "NORMAL")
        );
        assert_eq!(
            priority(0, ProofKind::WinningPost).unwrap().0,
            PRIORITY_CRITICAL
        );
    }

    #[test]
    fn every_registered_seal_proof_number_names_a_proof_the_crd_accepts() {
        for &(number, name, _) in SEAL_PROOF_NUMBERS {
            assert!(
                proofpipe_crds::seal_proof_partitions(name).is_some(),
                "{number} -> {name}"
            );
        }
        assert_eq!(SEAL_PROOF_NUMBERS.len(), proofpipe_crds::SEAL_PROOFS.len());
    }

    #[test]
    fn a_sector_number_of_zero_defers_to_the_envelope() {
        let mut request = porep("p");
        request.sector_number = 0;
        assert_eq!(
            plan(&request, || unreachable!()).unwrap().sector_number,
            None
        );
    }

    #[test]
    fn bad_requests_are_refused_saying_what_to_do() {
        let mut unset = porep("p");
        unset.proof_kind = 0;
        assert_eq!(code(&unset).0, Code::InvalidArgument);

        let mut snap = porep("p");
        snap.proof_kind = ProofKind::SnapDealsUpdate as i32;
        let (c, message) = code(&snap);
        assert_eq!(c, Code::Unimplemented);
        assert!(message.contains("SNAP_DEALS_UPDATE"), "{message}");

        let mut v1 = porep("p");
        v1.registered_proof = 3;
        let (c, message) = code(&v1);
        assert_eq!(c, Code::InvalidArgument);
        assert!(message.contains("retired V1"), "{message}");

        let mut ni = porep("p");
        ni.registered_proof = 15;
        assert_eq!(code(&ni).0, Code::Unimplemented);

        let mut size = porep("p");
        size.sector_size = 32 << 30;
        let (c, message) = code(&size);
        assert_eq!(c, Code::InvalidArgument);
        assert!(message.contains("does not match"), "{message}");

        let mut empty = porep("p");
        empty.vanilla_proof.clear();
        empty.vanilla_proofs = vec![b"x".to_vec()];
        let (c, message) = code(&empty);
        assert_eq!(c, Code::InvalidArgument);
        assert!(message.contains("vanilla_proofs is for PoSt"), "{message}");

        let mut binary = porep("p");
        binary.vanilla_proof = vec![0, 1, 2];
        assert!(code(&binary).1.contains("not JSON"));

        let mut miner = porep("p");
        miner.miner_id = u64::MAX;
        assert!(code(&miner).1.contains("miner_id"));

        let mut bad_priority = porep("p");
        bad_priority.priority = 9;
        assert_eq!(code(&bad_priority).0, Code::InvalidArgument);
    }
}
