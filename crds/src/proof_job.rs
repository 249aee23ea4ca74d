//! `ProofJob`: one circuit instance, split into partitions, proved on a ProverPool.

use std::collections::BTreeSet;

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::core::Rule;
use kube::{CustomResource, KubeSchema};
use proofpipe_model::progress::{self, ProofRecord};
use proofpipe_model::queue::QueueEntry;
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::conditions::condition_constraints;
use crate::filecoin::{FilecoinResult, FilecoinWork};
use crate::labels::ASSIGNED_POD_LABEL;
use crate::prover_pool::{MAX_POOL_NAME, POOL_NAME_PATTERN};

/// The circuits a ProofJob may name in `spec.circuit`.
///
/// The API server's CEL rule is generated from this list, so supporting a new circuit is a
/// one-line change here (plus regenerating the CRD YAML).
pub const CIRCUITS: &[&str] = &["mul-chain", "merkle-sha256"];

/// The fewest constraints per partition a ProofJob may ask for, whatever the circuit.
pub const MIN_CONSTRAINTS: i32 = 1024;

/// The fewest constraints per partition each circuit of [`CIRCUITS`] can be built with, as
/// the prover computes them from the circuits' shapes (its tests hold the two equal). A
/// circuit whose minimum is above [`MIN_CONSTRAINTS`] gets a CEL rule of its own: a job below
/// it would fail on every attempt.
pub const CIRCUIT_MIN_CONSTRAINTS: &[(&str, i32)] = &[("mul-chain", 16), ("merkle-sha256", 26_870)];

/// The fewest constraints per partition a ProofJob of `circuit` may ask for; `None` for a
/// circuit the API does not know.
pub fn circuit_min_constraints(circuit: &str) -> Option<i32> {
    CIRCUIT_MIN_CONSTRAINTS
        .iter()
        .find(|(name, _)| *name == circuit)
        .map(|&(_, min)| min.max(MIN_CONSTRAINTS))
}

/// The most constraints per partition a ProofJob may ask for (2^27).
pub const MAX_CONSTRAINTS: i32 = 1 << 27;

/// The most partitions a ProofJob may be split into.
pub const MAX_PARTITIONS: i32 = 1024;

/// The most public inputs a `status.proofs` entry carries. A job's status holds one entry
/// per partition and must fit etcd's request limit (1.5 MiB by default) at
/// [`MAX_PARTITIONS`]: a partition with more (merkle-sha256 beyond two paths of 16
/// levels, ~860,000 constraints; Filecoin proofs) lists none, and its verifier derives them from the job
/// (circuit, constraints, seed, partition).
pub const MAX_STATUS_PUBLIC_INPUTS: usize = 4;

/// The work a ProofJob asks for.
// Each printer column repeats `type_`, which clippy mistakes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "proofpipe.dev",
    version = "v1alpha1",
    kind = "ProofJob",
    namespaced,
    shortname = "pj",
    category = "proofpipe",
    status = "ProofJobStatus",
    derive = "PartialEq",
    doc = "A ProofJob asks a ProverPool for Groth16 proofs, split into independently proved \
           partitions: of a Filecoin sector (spec.filecoin) or of a synthetic benchmark circuit \
           (spec.circuit).",
    printcolumn(
        name = "Phase",
        type_ = "string",
        json_path = ".status.phase",
        description = "Lifecycle phase of the job"
    ),
    printcolumn(
        name = "Pool",
        type_ = "string",
        json_path = ".spec.pool",
        description = "ProverPool the job runs on"
    ),
    printcolumn(
        name = "Pod",
        type_ = "string",
        json_path = ".status.pod",
        description = "Prover pod the job is assigned to"
    ),
    printcolumn(
        name = "Progress",
        type_ = "string",
        json_path = ".status.progress",
        description = "Partitions proved out of the total"
    ),
    printcolumn(
        name = "Priority",
        type_ = "integer",
        json_path = ".spec.priority",
        description = "Queue priority: higher is assigned first"
    ),
    printcolumn(
        name = "Attempts",
        type_ = "integer",
        json_path = ".status.attempts",
        description = "Attempts started so far"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    ),
    printcolumn(
        name = "Last-Failure",
        type_ = "string",
        json_path = ".status.lastFailure.reason",
        description = "Why the last failed attempt ended (OOMKilled, PodDeleted, Error...)",
        priority = "1"
    )
)]
#[x_kube(validation = Rule::new("has(self.circuit) != has(self.filecoin)").message(
    "set either filecoin (a Filecoin proof) or circuit, constraints and partitions (a synthetic \
     benchmark circuit), not both"
))]
#[x_kube(validation = Rule::new(
    "!has(self.circuit) || (has(self.constraints) && has(self.partitions))"
).message("a synthetic job needs circuit, constraints and partitions"))]
#[x_kube(validation = Rule::new("!has(self.filecoin) || (!has(self.constraints) && !has(self.partitions))")
    .message("a Filecoin job takes its partitions from its registered proof (filecoin.sealProof, filecoin.updateProof or filecoin.postProof): leave constraints and partitions unset"))]
#[x_kube(validation = Rule::new(
    "has(self.filecoin) == has(oldSelf.filecoin) && has(self.circuit) == has(oldSelf.circuit) \
     && has(self.constraints) == has(oldSelf.constraints) \
     && has(self.partitions) == has(oldSelf.partitions)"
).message("filecoin, circuit, constraints and partitions cannot be added or removed: the work of a ProofJob is fixed; create a new ProofJob"))]
#[x_kube(validation = circuit_minimum_rule())]
#[serde(rename_all = "camelCase")]
pub struct ProofJobSpec {
    /// Name of the ProverPool, in the ProofJob's namespace, whose provers run this job.
    /// Immutable.
    #[x_kube(validation = Rule::new("self == oldSelf").message("pool is immutable"))]
    #[schemars(length(min = 1, max = MAX_POOL_NAME), regex(pattern = POOL_NAME_PATTERN))]
    pub pool: String,

    /// A Filecoin proof: the kind (`PoRepC2`, `SnapDealsUpdate`, `WindowPoStPartition` or
    /// `WinningPoSt`), its registered proof, and its input and output by reference. Its
    /// partitions are the registered proof's (10 for a 32 GiB PoRep, 16 for a 32 GiB
    /// SnapDeals update, 1 for a PoSt). Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = immutable("filecoin"))]
    pub filecoin: Option<FilecoinWork>,

    /// A synthetic benchmark circuit instead: `mul-chain` (dense arithmetic: a chain of
    /// multiplications) or `merkle-sha256` (boolean-heavy: SHA-256 Merkle inclusion proofs).
    /// Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = circuit_rule())]
    #[x_kube(validation = immutable("circuit"))]
    #[schemars(length(min = 1, max = 63))]
    pub circuit: Option<String>,

    /// Constraints in each partition of a synthetic circuit, from 1024 (26870 for
    /// merkle-sha256, the smallest it can be built with) to 134217728 (2^27). Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = immutable("constraints"))]
    #[schemars(range(min = MIN_CONSTRAINTS, max = MAX_CONSTRAINTS))]
    pub constraints: Option<i32>,

    /// Number of partitions a synthetic job is split into; each is proved separately and
    /// yields one proof. From 1 to 1024. Immutable.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = immutable("partitions"))]
    #[schemars(range(min = 1, max = MAX_PARTITIONS))]
    pub partitions: Option<i32>,

    /// Seed of the deterministic witness: partition `i` of a job is built from `(seed, i)`, so
    /// the same spec always proves the same statements. Immutable.
    #[serde(default)]
    #[x_kube(validation = immutable("seed"))]
    #[schemars(range(min = 0))]
    pub seed: i64,

    /// Scheduling priority within the pool's queue: higher values are assigned first; equal
    /// priorities are served oldest first.
    #[serde(default)]
    pub priority: i32,

    /// While true, no new partitions of this job are assigned to provers. Partitions already
    /// in flight finish.
    #[serde(default)]
    pub suspend: bool,

    /// How many times a failed attempt is retried before the job is marked Failed.
    #[serde(default = "default_backoff_limit")]
    #[schemars(range(min = 0))]
    pub backoff_limit: i32,

    /// Wall-clock seconds, counted from the job's start, after which it is marked Failed.
    /// Unset means no deadline.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 1))]
    pub active_deadline_seconds: Option<i64>,

    /// Seconds after the job finishes (Succeeded or Failed) before it is deleted. Unset means
    /// it is kept.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(range(min = 0))]
    pub ttl_seconds_after_finished: Option<i32>,
}

fn default_backoff_limit() -> i32 {
    3
}

impl ProofJobSpec {
    /// Urgent work (PoSt): a busy prover proves it beside its long job (ADR 0026).
    pub fn is_urgent(&self) -> bool {
        self.filecoin
            .as_ref()
            .is_some_and(|work| work.kind.is_urgent())
    }

    /// Partitions the job is split into: the registered proof's for Filecoin work, else
    /// `spec.partitions` (0 for a spec the API server would not have admitted).
    pub fn partition_count(&self) -> i32 {
        match &self.filecoin {
            Some(work) => work.partitions().unwrap_or(0),
            None => self.partitions.unwrap_or(0),
        }
    }

    /// What the job proves, for logs and messages: the circuit, or the Filecoin proof.
    pub fn work_name(&self) -> String {
        match (&self.filecoin, &self.circuit) {
            (Some(work), _) => format!(
                "{} {}",
                work.kind.as_str(),
                work.registered_proof().unwrap_or("(no registered proof)")
            ),
            (None, Some(circuit)) => format!("{circuit} x {}", self.constraints.unwrap_or(0)),
            (None, None) => "nothing".into(),
        }
    }
}

/// The CEL rule that keeps `spec.circuit` within [`CIRCUITS`].
fn circuit_rule() -> Rule {
    let quoted: Vec<String> = CIRCUITS.iter().map(|c| format!("'{c}'")).collect();
    Rule::new(format!("self in [{}]", quoted.join(", ")))
        .message(format!("circuit must be one of {}", CIRCUITS.join(", ")).as_str())
}

/// The transition rule that keeps `field` as it was created.
fn immutable(field: &str) -> Rule {
    Rule::new("self == oldSelf").message(
        format!("{field} is immutable: the work of a ProofJob is fixed; create a new ProofJob")
            .as_str(),
    )
}

/// The CEL rule that keeps `spec.constraints` at or above each circuit's own minimum, where it
/// is above [`MIN_CONSTRAINTS`] (the schema's bound covers the others).
fn circuit_minimum_rule() -> Rule {
    let above: Vec<(&str, i32)> = CIRCUIT_MIN_CONSTRAINTS
        .iter()
        .copied()
        .filter(|&(_, min)| min > MIN_CONSTRAINTS)
        .collect();
    let checks: Vec<String> = above
        .iter()
        .map(|(circuit, min)| format!("(self.circuit != '{circuit}' || self.constraints >= {min})"))
        .collect();
    let minimums: Vec<String> = above
        .iter()
        .map(|(circuit, min)| format!("{circuit} needs at least {min}"))
        .collect();
    Rule::new(format!(
        "!has(self.circuit) || !has(self.constraints) || ({})",
        checks.join(" && ")
    ))
    .field_path(".constraints")
    .message(
        format!(
            "constraints is below the smallest partition the circuit can be built with: {}",
            minimums.join(", ")
        )
        .as_str(),
    )
}

/// Where a ProofJob is in its lifecycle.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
// No type-level schema description: kube hoists an `Option<enum>`'s schema into the field's,
// and the enum's description would replace the documentation of `status.phase`.
#[schemars(description = "")]
pub enum ProofJobPhase {
    /// Accepted, not yet queued on its pool.
    Pending,
    /// Waiting in the pool's queue for a prover.
    Queued,
    /// Assigned to a prover pod that is proving its partitions.
    Running,
    /// Every partition was proved and verified.
    Succeeded,
    /// Gave up: retries exhausted or the deadline passed; `message` says which.
    Failed,
}

impl ProofJobPhase {
    /// Whether the job has reached a terminal phase (Succeeded or Failed).
    pub fn is_finished(self) -> bool {
        matches!(self, Self::Succeeded | Self::Failed)
    }

    /// The phase's name, as it is serialized.
    pub fn as_str(self) -> &'static str {
        match self {
            Self::Pending => "Pending",
            Self::Queued => "Queued",
            Self::Running => "Running",
            Self::Succeeded => "Succeeded",
            Self::Failed => "Failed",
        }
    }
}

/// What the operator and provers have observed about a ProofJob.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProofJobStatus {
    /// Lifecycle phase: Pending, Queued, Running, Succeeded or Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub phase: Option<ProofJobPhase>,

    /// Name of the prover pod the job is assigned to.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub pod: Option<String>,

    /// When the job was assigned to `pod`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assigned_at: Option<Time>,

    /// Partitions proved so far.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitions_done: Option<i32>,

    /// Partitions in the job (a copy of `spec.partitions`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub partitions_total: Option<i32>,

    /// `partitionsDone/partitionsTotal`, e.g. `7/10`, for `kubectl get`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub progress: Option<String>,

    /// Attempts started so far, including the current one. A job taken off its prover by
    /// `spec.suspend` starts a new attempt when resumed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub attempts: Option<i32>,

    /// The prover pods the job was assigned to, over all its attempts, each once, in the
    /// order of their first assignment. A partition proof counts only if its `provedBy` is
    /// one of them: a proof written by any other pod is ignored (ADR 0014). Written by the
    /// operator when it records an assignment.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub assigned_pods: Option<Vec<String>>,

    /// Attempts that failed (the prover pod failed, was lost or deleted); `spec.backoffLimit`
    /// bounds these, as batch/v1 Job's does. A suspension is not a failure, nor is an attempt
    /// whose prover lost its GPU (`GpuLost`), unless the attempt before it ended the same way.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub failed: Option<i32>,

    /// After a failed attempt the job is not assigned again before this time: 10 s after
    /// the first failure, doubling with each further one, at most 6 minutes (batch/v1 Job's
    /// pod failure backoff).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub next_attempt_after: Option<Time>,

    /// How the last failed attempt ended.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_failure: Option<AttemptFailure>,

    /// Why the assigned prover stopped proving the job, in its own words: written by the
    /// prover (the operator turns it into the phase, `lastFailure` and a retry or not).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub prover_failure: Option<ProverFailure>,

    /// Mean seconds per partition spent in each pipeline stage.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage_seconds: Option<StageSeconds>,

    /// Proofs produced so far, one per partition.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["partition".into()]))]
    #[schemars(length(max = MAX_PARTITIONS))]
    pub proofs: Option<Vec<PartitionProof>>,

    /// When the first attempt started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub start_time: Option<Time>,

    /// When the job reached Succeeded or Failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub completion_time: Option<Time>,

    /// Human-readable detail about the current phase, e.g. why the job failed.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub message: Option<String>,

    /// The finished Filecoin proof (Filecoin jobs): written once every partition is proved,
    /// the proof assembled and checked with Filecoin's verifier.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub filecoin: Option<FilecoinResult>,

    /// Standard conditions, keyed by `type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    #[schemars(transform = condition_constraints)]
    pub conditions: Option<Vec<Condition>>,

    /// The `metadata.generation` this status reflects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// Mean seconds per partition spent in each stage of the proving pipeline.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct StageSeconds {
    /// Building the circuit and its witness on the CPU.
    pub synthesis: f64,
    /// Waiting in the channel between synthesis and the GPU.
    pub queue_wait: f64,
    /// Multi-scalar multiplications and FFTs on the GPU.
    pub gpu: f64,
    /// Assembling the proof and verifying it on the CPU.
    pub finalize: f64,
}

impl ProofJobStatus {
    /// Whether what `pod` wrote into this status (a partition proof, a Filecoin result)
    /// counts: `pod` is one the job was assigned to (`assignedPods`, recorded only by the
    /// operator; ADR 0014). The operator and the provers apply the same rule.
    pub fn counts_work_of(&self, pod: &str) -> bool {
        // Without `assignedPods` (an operator that predates it) the proofs are trusted as
        // that operator trusted them, until the list is recorded.
        progress::counts_work_of(self.assigned_pods.as_deref(), self.attempts, pod)
    }

    /// The distinct partitions of `0..partitions` whose verified proof counts
    /// ([`ProofJobStatus::counts_work_of`]), ascending: the one rule for progress, success and
    /// what is left to prove.
    pub fn proved_partitions(&self, partitions: u32) -> BTreeSet<u32> {
        let records = self.proofs.iter().flatten().map(|proof| ProofRecord {
            partition: i64::from(proof.partition),
            verified: proof.verified,
            proved_by: &proof.proved_by,
        });
        progress::proved_partitions(records, partitions, |pod| self.counts_work_of(pod))
    }
}

impl ProofJob {
    /// Partitions that still need a proof that counts.
    pub fn remaining_partitions(&self) -> u32 {
        let partitions = u32::try_from(self.spec.partition_count()).unwrap_or(0);
        let proved = self
            .status
            .as_ref()
            .map_or(0, |status| status.proved_partitions(partitions).len());
        partitions - u32::try_from(proved).unwrap_or(partitions)
    }
}

/// A job waits in its pool's queue when it is not finished, not suspended, not assigned and
/// not being deleted; the queue's order is the model's.
impl QueueEntry for ProofJob {
    fn pool(&self) -> &str {
        &self.spec.pool
    }

    fn is_waiting(&self) -> bool {
        let finished = self
            .status
            .as_ref()
            .and_then(|status| status.phase)
            .is_some_and(|phase| phase.is_finished());
        let assigned = self
            .metadata
            .labels
            .as_ref()
            .is_some_and(|labels| labels.contains_key(ASSIGNED_POD_LABEL));
        // The operator takes a job off its pod in two writes, the label and then the status
        // that says why (its failure record, its Event). Until the second lands the status
        // still names the pod: the job is not offered again before its attempt is recorded.
        let leaving = self
            .status
            .as_ref()
            .is_some_and(|status| status.pod.is_some());
        !finished
            && !self.spec.suspend
            && !assigned
            && !leaving
            && self.metadata.deletion_timestamp.is_none()
    }

    fn priority(&self) -> i32 {
        self.spec.priority
    }

    fn created(&self) -> Option<i64> {
        self.metadata
            .creation_timestamp
            .as_ref()
            .map(|time| time.0.as_microsecond())
    }

    fn name(&self) -> &str {
        self.metadata.name.as_deref().unwrap_or_default()
    }
}

/// How one attempt of a job failed.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AttemptFailure {
    /// The attempt's number (`status.attempts` when it failed).
    pub attempt: i32,
    /// The prover pod it ran on.
    pub pod: String,
    /// A CamelCase reason: `PodDeleted`, `PodTerminating`, or the prover container's
    /// termination reason (`Error`, `OOMKilled`, ...).
    pub reason: String,
    /// What happened, with the prover's own last words when it left any (its termination
    /// message: the error that ended it, or the last lines of its log).
    pub message: String,
    /// When the operator saw it fail.
    pub time: Time,
}

/// A prover's report that it could not prove the job on its attempt. The prover stays up and
/// takes the next job; the operator decides what follows from `permanent`.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProverFailure {
    /// The prover pod that reports it.
    pub pod: String,
    /// The attempt it failed (`status.attempts` when the prover started it); a report of an
    /// earlier attempt is history.
    pub attempt: i32,
    /// A CamelCase reason: `InvalidInput` (the input can never prove: fix it and submit
    /// again), `DoesNotFit` (the pool's provers have too little memory for it), `Stalled` (no
    /// progress within the pool's `progressDeadlineSeconds`), `GpuLost` (the prover's GPU
    /// failed in a way that means the device is gone: the job is handed back, not charged to
    /// its `backoffLimit`), or a transient one such as `StorageUnavailable`,
    /// `ParametersUnavailable`, `ProvingError`.
    pub reason: String,
    /// What went wrong and what to do about it.
    pub message: String,
    /// True when retrying cannot help: the job fails at once.
    pub permanent: bool,
    /// When the prover gave up.
    pub time: Time,
}

/// The [`ProverFailure::reason`] of a prover whose GPU was lost mid-job.
pub const GPU_LOST_REASON: &str = "GpuLost";

impl ProverFailure {
    /// Whether the attempt ended because the prover lost its GPU: a disruption of the prover,
    /// not a failure of the job (the input played no part in it).
    pub fn is_gpu_lost(&self) -> bool {
        self.reason == GPU_LOST_REASON
    }
}

/// The proof of one partition.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PartitionProof {
    /// Index of the partition, from 0 to `spec.partitions - 1`.
    pub partition: i32,
    /// The Groth16 proof, compressed and base64-encoded.
    pub proof: String,
    /// Whether the proof passed verification against the public inputs.
    pub verified: bool,
    /// The partition's public inputs, as hex-encoded field elements, when there are at most
    /// four of them; otherwise empty (Filecoin proofs; merkle-sha256 beyond ~860,000
    /// constraints), and a verifier derives them from the job: one entry per partition
    /// must keep the status within etcd's request limit at 1,024 partitions.
    #[serde(default)]
    #[schemars(length(max = MAX_STATUS_PUBLIC_INPUTS))]
    pub public_inputs: Vec<String>,
    /// Name of the prover pod that produced the proof.
    pub proved_by: String,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn only_succeeded_and_failed_are_finished() {
        use ProofJobPhase::*;
        let finished: Vec<_> = [Pending, Queued, Running, Succeeded, Failed]
            .into_iter()
            .filter(|phase| phase.is_finished())
            .collect();
        assert_eq!(finished, [Succeeded, Failed]);
    }

    #[test]
    fn phases_serialize_as_their_names() {
        let json = serde_json::to_string(&ProofJobPhase::Succeeded).unwrap();
        assert_eq!(json, r#""Succeeded""#);
    }

    #[test]
    fn circuit_rule_lists_every_circuit() {
        let rule = circuit_rule();
        assert_eq!(rule.rule, "self in ['mul-chain', 'merkle-sha256']");
        let message = serde_json::to_value(&rule).unwrap()["message"].clone();
        assert_eq!(message, "circuit must be one of mul-chain, merkle-sha256");
    }

    #[test]
    fn every_circuit_has_a_minimum_size() {
        let named: Vec<&str> = CIRCUIT_MIN_CONSTRAINTS.iter().map(|(c, _)| *c).collect();
        assert_eq!(
            named, CIRCUITS,
            "one minimum per circuit, in the same order"
        );
        assert_eq!(circuit_min_constraints("mul-chain"), Some(MIN_CONSTRAINTS));
        assert_eq!(circuit_min_constraints("merkle-sha256"), Some(26_870));
        assert_eq!(circuit_min_constraints("sha-tree"), None);
    }

    #[test]
    fn the_minimum_rule_covers_the_circuits_above_the_common_minimum() {
        let rule = circuit_minimum_rule();
        assert_eq!(
            rule.rule,
            "!has(self.circuit) || !has(self.constraints) || \
             ((self.circuit != 'merkle-sha256' || self.constraints >= 26870))"
        );
    }

    #[test]
    fn omitted_fields_take_their_defaults() {
        let spec: ProofJobSpec = serde_json::from_value(serde_json::json!({
            "pool": "gpu", "circuit": "mul-chain", "constraints": 4096, "partitions": 2,
        }))
        .unwrap();
        assert_eq!((spec.seed, spec.priority, spec.suspend), (0, 0, false));
        assert_eq!(spec.backoff_limit, 3);
        assert_eq!(spec.active_deadline_seconds, None);
    }
}
