//! From a `SubmitProofRequest` to what the gateway will store and create: pure, so every rule
//! (which proofs are accepted, how priorities map, how a request id names its job) is tested
//! without a cluster.

use base64::Engine;
use base64::engine::general_purpose::STANDARD as BASE64;
use sha2::{Digest, Sha256};

use crate::attempts::AttemptRule;
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

/// The registered update proofs (SnapDeals) by their number in the Filecoin actors' ABI
/// (`abi.RegisteredUpdateProof`, what curio sends in `registered_proof` for a
/// SNAP_DEALS_UPDATE), with the sector size.
const UPDATE_PROOF_NUMBERS: &[(u64, &str, u64)] = &[
    (0, "StackedDrg2KiBV1", 2 << 10),
    (1, "StackedDrg8MiBV1", 8 << 20),
    (2, "StackedDrg512MiBV1", 512 << 20),
    (3, "StackedDrg32GiBV1", 32 << 30),
    (4, "StackedDrg64GiBV1", 64 << 30),
];

/// The registered PoSt proofs by their number in the Filecoin actors' ABI
/// (`abi.RegisteredPoStProof`, what curio sends in `registered_proof` for a PoSt), with the
/// sector size, the kind, and the most sectors one partition proves (filecoin-proofs'
/// `WINNING_POST_SECTOR_COUNT`, `WINDOW_POST_SECTOR_COUNT`). The ABI's WindowPoSt V1_1 (10-14)
/// is filecoin-proofs-api's V1_2, as filecoin-ffi maps it; 5-9 (V1) are retired.
const POST_PROOF_NUMBERS: &[(u64, &str, u64, ProofKind, usize)] = &[
    (
        0,
        "StackedDrgWinning2KiBV1",
        2 << 10,
        ProofKind::WinningPost,
        1,
    ),
    (
        1,
        "StackedDrgWinning8MiBV1",
        8 << 20,
        ProofKind::WinningPost,
        1,
    ),
    (
        2,
        "StackedDrgWinning512MiBV1",
        512 << 20,
        ProofKind::WinningPost,
        1,
    ),
    (
        3,
        "StackedDrgWinning32GiBV1",
        32 << 30,
        ProofKind::WinningPost,
        1,
    ),
    (
        4,
        "StackedDrgWinning64GiBV1",
        64 << 30,
        ProofKind::WinningPost,
        1,
    ),
    (
        10,
        "StackedDrgWindow2KiBV1_2",
        2 << 10,
        ProofKind::WindowPostPartition,
        2,
    ),
    (
        11,
        "StackedDrgWindow8MiBV1_2",
        8 << 20,
        ProofKind::WindowPostPartition,
        2,
    ),
    (
        12,
        "StackedDrgWindow512MiBV1_2",
        512 << 20,
        ProofKind::WindowPostPartition,
        2,
    ),
    (
        13,
        "StackedDrgWindow32GiBV1_2",
        32 << 30,
        ProofKind::WindowPostPartition,
        2349,
    ),
    (
        14,
        "StackedDrgWindow64GiBV1_2",
        64 << 30,
        ProofKind::WindowPostPartition,
        2300,
    ),
];

/// What a submission asks the provers to prove.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum Work {
    /// A sector's PoRep C2, from the C1 output in `vanilla_proof`.
    PoRep {
        /// The registered seal proof, as `spec.filecoin.sealProof` names it.
        seal_proof: &'static str,
        /// `spec.filecoin.minerId`.
        miner_id: i64,
        /// `spec.filecoin.sectorNumber`; unset when the request's is 0 (proto3's "not
        /// given"), so the number inside the C1 envelope is used.
        sector_number: Option<i64>,
    },
    /// A SnapDeals update proof, from the per-partition vanilla proofs and the three
    /// commitments.
    SnapDeals {
        /// The registered update proof, as `spec.filecoin.updateProof` names it.
        update_proof: &'static str,
    },
    /// One WindowPoSt partition (curio's `WINDOW_POST_PARTITION`), from its sectors' vanilla
    /// proofs and the randomness.
    WindowPost {
        /// The registered PoSt proof, as `spec.filecoin.postProof` names it.
        post_proof: &'static str,
    },
    /// A WinningPoSt, from the challenged sectors' vanilla proofs and the randomness.
    WinningPost {
        /// The registered PoSt proof, as `spec.filecoin.postProof` names it.
        post_proof: &'static str,
    },
}

impl Work {
    /// The registered proof's name (`spec.filecoin.sealProof` or `updateProof`).
    pub fn registered_proof(&self) -> &'static str {
        match self {
            Self::PoRep { seal_proof, .. } => seal_proof,
            Self::SnapDeals { update_proof } => update_proof,
            Self::WindowPost { post_proof } | Self::WinningPost { post_proof } => post_proof,
        }
    }

    /// How the request id's submissions of other work relate (ADR 0025): a PoRep's or a
    /// SnapDeals' id names a sector, so new work under it replaces the old; a PoSt id names a
    /// deadline or an epoch, under which curio sends each partition's sectors, so each input
    /// is its own work.
    pub fn attempt_rule(&self) -> AttemptRule {
        match self {
            Self::PoRep { .. } | Self::SnapDeals { .. } => AttemptRule::OtherWorkReplaces,
            Self::WindowPost { .. } | Self::WinningPost { .. } => AttemptRule::OnePerInput,
        }
    }

    /// The seed engine's name of the kind (its queue names), also the jobs' kind label.
    pub fn kind_name(&self) -> &'static str {
        match self {
            Self::PoRep { .. } => kind_name(ProofKind::PorepSealCommit),
            Self::SnapDeals { .. } => kind_name(ProofKind::SnapDealsUpdate),
            Self::WindowPost { .. } => kind_name(ProofKind::WindowPostPartition),
            Self::WinningPost { .. } => kind_name(ProofKind::WinningPost),
        }
    }
}

/// What one accepted submission becomes.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Submission {
    /// The caller's idempotency key, or one the gateway made up when it gave none.
    pub request_id: String,
    /// The ProofJob's name: the job id the caller gets back.
    pub job_name: String,
    /// What to prove.
    pub work: Work,
    /// `spec.priority`.
    pub priority: i32,
    /// The API's name of the priority, kept on the job for people reading it.
    pub priority_name: &'static str,
    /// SHA-256 of the job's input (the bytes stored for the provers), lowercase hex: the
    /// job's `input.sha256`.
    pub input_sha256: String,
}

/// A checked submission and the input the provers will read: the C1 output as sent for a
/// PoRep; for SnapDeals, the JSON the prover's SnapDeals input takes (`SnapInput` below).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Planned {
    pub submission: Submission,
    pub input: Vec<u8>,
}

/// Checks `request` and derives its job and input. `generated_id` supplies a request id when
/// the caller gave none (then the submission is not idempotent: a retry creates a new job).
pub fn plan(
    mut request: SubmitProofRequest,
    generated_id: impl FnOnce() -> String,
) -> Result<Planned, GatewayError> {
    let kind = ProofKind::try_from(request.proof_kind).map_err(|_| {
        GatewayError::invalid(format!(
            "proof_kind {} is not one the API defines",
            request.proof_kind
        ))
    })?;
    let (work, input) = match kind {
        ProofKind::PorepSealCommit => {
            let work = porep(&request)?;
            (work, std::mem::take(&mut request.vanilla_proof))
        }
        ProofKind::SnapDealsUpdate => snap_deals(&request)?,
        ProofKind::WindowPostPartition | ProofKind::WinningPost => post(&request, kind)?,
        ProofKind::Unspecified => {
            return Err(GatewayError::invalid(
                "proof_kind is unset: set POREP_SEAL_COMMIT for a sector's C2, \
                 SNAP_DEALS_UPDATE for a SnapDeals update proof, WINDOW_POST_PARTITION or \
                 WINNING_POST",
            ));
        }
    };
    let (priority, priority_name) = priority(request.priority, kind)?;
    let request_id = if request.request_id.is_empty() {
        generated_id()
    } else {
        request.request_id.clone()
    };
    let input_sha256 = hex(&Sha256::digest(&input));
    Ok(Planned {
        submission: Submission {
            job_name: first_job_name(&request_id, work.attempt_rule(), &input_sha256),
            request_id,
            work,
            priority,
            priority_name,
            input_sha256,
        },
        input,
    })
}

/// A PoRep C2: the C1 output in `vanilla_proof` is the input, as sent.
fn porep(request: &SubmitProofRequest) -> Result<Work, GatewayError> {
    let vanilla_proof = &request.vanilla_proof;
    let (seal_proof, sector_size) = seal_proof(request.registered_proof)?;
    check_sector_size(
        request.sector_size,
        request.registered_proof,
        seal_proof,
        sector_size,
    )?;
    if vanilla_proof.is_empty() {
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
    if vanilla_proof.trim_ascii_start().first() != Some(&b'{') {
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
    Ok(Work::PoRep {
        seal_proof,
        miner_id,
        sector_number,
    })
}

/// A SnapDeals update proof: its vanilla proofs (one bincode `PartitionProof` per partition)
/// and commitments, checked for what can be checked without Filecoin's crates (the count of
/// partitions, the commitments' length), become the prover's SnapDeals input JSON. The
/// provers check the rest (that the vanilla proofs decode and verify against the commitments)
/// before proving.
fn snap_deals(request: &SubmitProofRequest) -> Result<(Work, Vec<u8>), GatewayError> {
    let number = request.registered_proof;
    let &(_, update_proof, sector_size) = UPDATE_PROOF_NUMBERS
        .iter()
        .find(|(n, ..)| *n == number)
        .ok_or_else(|| {
            GatewayError::invalid(format!(
                "registered_proof {number} is not a registered update proof: a \
                 SNAP_DEALS_UPDATE takes 0-4 (StackedDrg2KiBV1 ... StackedDrg64GiBV1)"
            ))
        })?;
    check_sector_size(request.sector_size, number, update_proof, sector_size)?;
    if !request.vanilla_proof.is_empty() {
        return Err(GatewayError::invalid(
            "vanilla_proof is set: a SNAP_DEALS_UPDATE takes its vanilla proofs in \
             vanilla_proofs, one bincode PartitionProof per partition (vanilla_proof is a PoRep \
             C2's C1 output)",
        ));
    }
    let partitions = proofpipe_crds::update_proof_partitions(update_proof)
        .and_then(|p| usize::try_from(p).ok())
        .expect("every update proof the gateway names is in the CRD's table");
    if request.vanilla_proofs.len() != partitions {
        return Err(GatewayError::invalid(format!(
            "vanilla_proofs has {} entries: a SNAP_DEALS_UPDATE of {update_proof} needs one \
             bincode PartitionProof per partition, {partitions}",
            request.vanilla_proofs.len()
        )));
    }
    if let Some(k) = request.vanilla_proofs.iter().position(Vec::is_empty) {
        return Err(GatewayError::invalid(format!(
            "vanilla_proofs[{k}] is empty: each is partition k's bincode PartitionProof"
        )));
    }
    let commitment = |name: &str, bytes: &[u8]| {
        if bytes.len() == 32 {
            Ok(BASE64.encode(bytes))
        } else {
            Err(GatewayError::invalid(format!(
                "{name} has {} bytes: a SNAP_DEALS_UPDATE needs the raw 32-byte commitment \
                 (the CID's digest, as commcid.CIDToReplicaCommitmentV1 gives it)",
                bytes.len()
            )))
        }
    };
    let input = SnapInput {
        registered_proof: update_proof,
        comm_r_old: commitment("comm_r_old", &request.comm_r_old)?,
        comm_r_new: commitment("comm_r_new", &request.comm_r_new)?,
        comm_d_new: commitment("comm_d_new", &request.comm_d_new)?,
        vanilla_proofs: request
            .vanilla_proofs
            .iter()
            .map(|p| BASE64.encode(p))
            .collect(),
    };
    let json = serde_json::to_vec(&input).expect("the SnapDeals input serializes");
    Ok((Work::SnapDeals { update_proof }, json))
}

/// A WindowPoSt partition or a WinningPoSt: the registered PoSt proof, the miner, the
/// randomness, the partition and the sectors' vanilla proofs (one bincode
/// `FallbackPoStSectorProof` each), checked for what can be checked without Filecoin's crates,
/// become the prover's PoSt input JSON. The provers check the rest (the vanilla proofs decode,
/// are of the proof's sector size and verify against the randomness) before proving.
fn post(request: &SubmitProofRequest, kind: ProofKind) -> Result<(Work, Vec<u8>), GatewayError> {
    let number = request.registered_proof;
    let kind_str = kind.as_str_name();
    let &(_, post_proof, sector_size, proof_kind, max_sectors) = POST_PROOF_NUMBERS
        .iter()
        .find(|(n, ..)| *n == number)
        .ok_or_else(|| {
            GatewayError::invalid(match number {
                5..=9 => format!(
                    "registered_proof {number} is a retired WindowPoSt proof (V1); curio sends \
                     V1_1 (10-14) since network version 19"
                ),
                _ => format!(
                    "registered_proof {number} is not a registered PoSt proof: WINNING_POST takes \
                     0-4, WINDOW_POST_PARTITION 10-14 (abi.RegisteredPoStProof)"
                ),
            })
        })?;
    if proof_kind != kind {
        return Err(GatewayError::invalid(format!(
            "registered_proof {number} ({post_proof}) is a {} proof, but proof_kind is {kind_str}",
            proof_kind.as_str_name()
        )));
    }
    check_sector_size(request.sector_size, number, post_proof, sector_size)?;
    if !request.vanilla_proof.is_empty() {
        return Err(GatewayError::invalid(format!(
            "vanilla_proof is set: a {kind_str} takes its vanilla proofs in vanilla_proofs, one \
             bincode FallbackPoStSectorProof per sector (vanilla_proof is a PoRep C2's C1 output)"
        )));
    }
    let sectors = request.vanilla_proofs.len();
    if sectors == 0 || sectors > max_sectors {
        return Err(GatewayError::invalid(format!(
            "vanilla_proofs has {sectors} entries: a {kind_str} of {post_proof} takes one bincode \
             FallbackPoStSectorProof per sector, 1 to {max_sectors}"
        )));
    }
    if let Some(k) = request.vanilla_proofs.iter().position(Vec::is_empty) {
        return Err(GatewayError::invalid(format!(
            "vanilla_proofs[{k}] is empty: each is a sector's bincode FallbackPoStSectorProof"
        )));
    }
    if request.randomness.len() != 32 {
        return Err(GatewayError::invalid(format!(
            "randomness has {} bytes: a {kind_str} needs the 32-byte challenge seed",
            request.randomness.len()
        )));
    }
    let (work, partition_index) = match kind {
        ProofKind::WinningPost => {
            if request.partition_index != 0 {
                return Err(GatewayError::invalid(format!(
                    "partition_index is {}: a WINNING_POST has one partition",
                    request.partition_index
                )));
            }
            (Work::WinningPost { post_proof }, None)
        }
        _ => (
            Work::WindowPost { post_proof },
            Some(request.partition_index),
        ),
    };
    let input = PostInput {
        registered_proof: post_proof,
        miner_id: request.miner_id,
        randomness: BASE64.encode(&request.randomness),
        partition_index,
        vanilla_proofs: request
            .vanilla_proofs
            .iter()
            .map(|p| BASE64.encode(p))
            .collect(),
    };
    let json = serde_json::to_vec(&input).expect("the PoSt input serializes");
    Ok((work, json))
}

/// The PoSt input as the prover reads it (proofpipe-prover's `PostInput`, the file
/// `prove --window-post-vanilla` / `--winning-post-vanilla` takes; docs/filecoin.md). Serialized
/// in this field order, so the same request always makes the same bytes.
#[derive(serde::Serialize)]
struct PostInput {
    registered_proof: &'static str,
    miner_id: u64,
    randomness: String,
    #[serde(skip_serializing_if = "Option::is_none")]
    partition_index: Option<u32>,
    vanilla_proofs: Vec<String>,
}

/// The SnapDeals input as the prover reads it (proofpipe-prover's `SnapInput`, the file
/// `prove --snap-vanilla` takes; docs/filecoin.md): the update proof by name, the commitments
/// and vanilla proofs in base64. Serialized in this field order, so the same request always
/// makes the same bytes, and so the same SHA-256.
#[derive(serde::Serialize)]
struct SnapInput {
    registered_proof: &'static str,
    comm_r_old: String,
    comm_r_new: String,
    comm_d_new: String,
    vanilla_proofs: Vec<String>,
}

/// A `sector_size` of 0 is "not given"; any other must be the registered proof's.
fn check_sector_size(given: u64, number: u64, name: &str, size: u64) -> Result<(), GatewayError> {
    if given != 0 && given != size {
        return Err(GatewayError::invalid(format!(
            "sector_size {given} does not match registered_proof {number} ({name}, {size} bytes)"
        )));
    }
    Ok(())
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
    // curio sends WindowPoSt HIGH and WinningPoSt CRITICAL; those are the defaults too.
    let priority = match (priority, kind) {
        (Priority::Unspecified, ProofKind::WinningPost) => Priority::Critical,
        (Priority::Unspecified, ProofKind::WindowPostPartition) => Priority::High,
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
    job_name_with_digest(request_id, &request_key(request_id))
}

/// `request_id`'s readable part and the first 12 hex digits of `digest`.
fn job_name_with_digest(request_id: &str, digest: &str) -> String {
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
    let digest = &digest[..NAME_DIGEST_CHARS.min(digest.len())];
    if readable.is_empty() {
        format!("proof-{digest}")
    } else {
        format!("{readable}-{digest}")
    }
}

/// The first attempt's job name of a submission: the request id's [`job_name`] where the id
/// names the work; where the id and the input do ([`AttemptRule::OnePerInput`]), the same
/// readable part with a digest of both, so each input under the id has a name of its own.
pub fn first_job_name(request_id: &str, rule: AttemptRule, input_sha256: &str) -> String {
    match rule {
        AttemptRule::OtherWorkReplaces => job_name(request_id),
        AttemptRule::OnePerInput => job_name_with_digest(
            request_id,
            &hex(&Sha256::digest(format!("{request_id}\n{input_sha256}"))),
        ),
    }
}

/// The first 12 hex digits of the request id's SHA-256: the end of its jobs' names and their
/// `proofpipe.dev/request-key` label.
pub fn request_key(request_id: &str) -> String {
    let mut digest = hex(&Sha256::digest(request_id.as_bytes()));
    digest.truncate(NAME_DIGEST_CHARS);
    digest
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
mod tests;
