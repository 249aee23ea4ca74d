//! `ProverPool`: a set of GPU prover pods that take ProofJobs from a shared queue.

use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
use kube::core::Rule;
use kube::{CustomResource, KubeSchema};
use schemars::JsonSchema;
use serde::{Deserialize, Serialize};

use crate::conditions::condition_constraints;
use crate::pipeline::PipelineOverride;
use crate::pod_template::ProverPodTemplate;

/// The longest ProverPool name. Its prover pods are named `<pool>-prover-<n>` and that name
/// is a label value on the jobs they prove (`proofpipe.dev/assigned-pod`), at most 63
/// characters; `n` below 2^31 has at most 10 digits.
pub const MAX_POOL_NAME: usize = 63 - "-prover-".len() - 10;

/// What a ProverPool (or `spec.pool` of a ProofJob) may be named: a DNS label, since the name
/// is a label value and the prefix of pod names.
pub const POOL_NAME_PATTERN: &str = "^[a-z0-9]([-a-z0-9]*[a-z0-9])?$";

/// The provers a ProverPool runs and how they are sized.
// Each printer column repeats `type_`, which clippy mistakes for a duplicated attribute.
#[allow(clippy::duplicated_attributes)]
#[derive(CustomResource, KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[kube(
    group = "proofpipe.dev",
    version = "v1alpha1",
    kind = "ProverPool",
    namespaced,
    shortname = "pp",
    category = "proofpipe",
    status = "ProverPoolStatus",
    derive = "PartialEq",
    validation = pool_name_length_rule(),
    validation = pool_name_pattern_rule(),
    doc = "A ProverPool runs GPU prover pods that take ProofJobs naming it from a shared, \
           priority-ordered queue.",
    scale(
        spec_replicas_path = ".spec.replicas",
        status_replicas_path = ".status.replicas",
        label_selector_path = ".status.selector"
    ),
    printcolumn(
        name = "Ready",
        type_ = "integer",
        json_path = ".status.readyReplicas",
        description = "Prover pods ready to take work"
    ),
    printcolumn(
        name = "Desired",
        type_ = "integer",
        json_path = ".spec.replicas",
        description = "Prover pods requested"
    ),
    printcolumn(
        name = "Up-to-date",
        type_ = "integer",
        json_path = ".status.updatedReplicas",
        description = "Prover pods created from the current template",
        priority = "1"
    ),
    printcolumn(
        name = "Unschedulable",
        type_ = "integer",
        json_path = ".status.unschedulableReplicas",
        description = "Prover pods no node can take yet (the signal for a node autoscaler)"
    ),
    printcolumn(
        name = "Queue",
        type_ = "integer",
        json_path = ".status.queuedPartitions",
        description = "Partitions waiting for a prover"
    ),
    printcolumn(
        name = "PW",
        type_ = "integer",
        json_path = ".status.sizing.partitionWorkers",
        description = "Partition workers per prover"
    ),
    printcolumn(
        name = "Capacity",
        type_ = "integer",
        json_path = ".status.sizing.channelCapacity",
        description = "Capacity of the channel from synthesis to the GPU"
    ),
    printcolumn(
        name = "Memory",
        type_ = "string",
        json_path = ".status.sizing.memoryEstimate",
        description = "Predicted peak memory of a prover against its limit"
    ),
    printcolumn(
        name = "Age",
        type_ = "date",
        json_path = ".metadata.creationTimestamp"
    )
)]
#[serde(rename_all = "camelCase")]
pub struct ProverPoolSpec {
    /// Number of prover pods. Also set through the scale subresource (`kubectl scale`, HPA,
    /// KEDA); when `autoscaling` is set, the operator adjusts it within those bounds.
    #[serde(default = "default_replicas")]
    #[schemars(range(min = 0))]
    pub replicas: i32,

    /// The pod every prover in the pool is created from: a pod template whose container
    /// named `prover` runs the prover daemon.
    pub template: ProverPodTemplate,

    /// Overrides for the proving pipeline's sizing; `auto` lets each prover derive the value
    /// from its memory limit and the job's circuit. The operator holds a job that not even
    /// one partition of fits the prover container's memory limit (condition `Assigned`,
    /// reason `DoesNotFit`).
    #[serde(default)]
    pub pipeline: PipelineSpec,

    /// Scale the pool with its queue. Unset means `replicas` is left as set.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<AutoscalingSpec>,

    /// Seconds a prover may make no progress in a stage of a job (fetching the input,
    /// loading parameters, a partition moving through the pipeline, verifying) before it is
    /// stalled: it reports the job back for a retry and restarts, and its liveness probe fails.
    /// Longer than the slowest single step: a 32 GiB PoRep parameter load or one partition's
    /// synthesis.
    #[serde(default = "default_progress_deadline_seconds")]
    #[schemars(range(min = 1))]
    pub progress_deadline_seconds: i32,
}

fn default_replicas() -> i32 {
    1
}

/// The default of `spec.progressDeadlineSeconds`: 15 minutes, past a 64 GiB parameter load
/// from a slow volume.
pub fn default_progress_deadline_seconds() -> i32 {
    900
}

fn pool_name_length_rule() -> Rule {
    Rule::new(format!("self.metadata.name.size() <= {MAX_POOL_NAME}")).message(
        format!(
            "metadata.name must be at most {MAX_POOL_NAME} characters: prover pods are named \
             <pool>-prover-<n>, and that name is a label value (at most 63)"
        )
        .as_str(),
    )
}

fn pool_name_pattern_rule() -> Rule {
    Rule::new(format!("self.metadata.name.matches('{POOL_NAME_PATTERN}')")).message(
        "metadata.name must be a DNS label (lowercase letters, digits and '-'): it is the \
         value of the proofpipe.dev/pool label",
    )
}

/// Sizing overrides for each prover's proving pipeline. Each is `auto` or a positive integer.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PipelineSpec {
    /// Partitions synthesized concurrently on the CPU.
    #[serde(default)]
    pub partition_workers: PipelineOverride,

    /// Synthesized partitions that may wait for the GPU at once.
    #[serde(default)]
    pub channel_capacity: PipelineOverride,

    /// Partitions on the GPU at once.
    #[serde(default)]
    pub gpu_workers: PipelineOverride,
}

/// Bounds and targets for scaling the pool with its queue.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, PartialEq)]
#[x_kube(validation = Rule::new("self.minReplicas <= self.maxReplicas")
    .message("minReplicas must not exceed maxReplicas"))]
#[serde(rename_all = "camelCase")]
pub struct AutoscalingSpec {
    /// Fewest prover pods; 0 lets an idle pool scale to zero.
    #[serde(default)]
    #[schemars(range(min = 0))]
    pub min_replicas: i32,

    /// Most prover pods. At least 1 and at least `minReplicas`.
    #[schemars(range(min = 1))]
    pub max_replicas: i32,

    /// Queued partitions per prover the pool is scaled to hold.
    #[serde(default = "default_target_queued_partitions_per_prover")]
    #[schemars(range(min = 1))]
    pub target_queued_partitions_per_prover: i32,

    /// Seconds the queue must stay short before the pool scales down.
    #[serde(default = "default_scale_down_delay_seconds")]
    #[schemars(range(min = 0))]
    pub scale_down_delay_seconds: i32,
}

fn default_target_queued_partitions_per_prover() -> i32 {
    4
}

fn default_scale_down_delay_seconds() -> i32 {
    300
}

/// What the operator and provers have observed about a ProverPool.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProverPoolStatus {
    /// Prover pods that exist.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub replicas: Option<i32>,

    /// Prover pods ready to take work.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub ready_replicas: Option<i32>,

    /// Prover pods created from the current template (`templateHash`); the others are
    /// replaced as soon as they are idle.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub updated_replicas: Option<i32>,

    /// Hash of the pod spec the current template gives, the value of the pods'
    /// `proofpipe.dev/template-hash` label: `kubectl get pods -l
    /// 'proofpipe.dev/template-hash!=<hash>'` lists the outdated ones.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub template_hash: Option<String>,

    /// Prover pods the scheduler cannot place (no node with a free GPU, or none matching the
    /// template's selectors and tolerations). A node autoscaler (cluster-autoscaler,
    /// Karpenter) adds nodes for exactly these pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub unschedulable_replicas: Option<i32>,

    /// What the autoscaler decided last; unset when `spec.autoscaling` is.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub autoscaling: Option<AutoscalingStatus>,

    /// Label selector of the pool's prover pods, in string form, for the scale subresource.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub selector: Option<String>,

    /// The pipeline sizing the provers run with, after resolving `auto` (the largest
    /// predicted peak among the provers' reports).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizing: Option<PipelineSizing>,

    /// ProofJobs waiting for a prover.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_jobs: Option<i32>,

    /// Partitions of those jobs waiting for a prover.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub queued_partitions: Option<i32>,

    /// The pool's prover pods as they last reported, keyed by `pod`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["pod".into()]))]
    pub provers: Option<Vec<ProverStatus>>,

    /// Standard conditions, keyed by `type`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(merge_strategy = ListMerge::Map(vec!["type".into()]))]
    #[schemars(transform = condition_constraints)]
    pub conditions: Option<Vec<Condition>>,

    /// The `metadata.generation` this status reflects.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub observed_generation: Option<i64>,
}

/// The autoscaler's last decision, kept in the status so that a restarted operator keeps
/// counting the scale-down delay where the previous one left it.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct AutoscalingStatus {
    /// Provers the queue needs, within `minReplicas..=maxReplicas`.
    pub desired_replicas: i32,
    /// How `desiredReplicas` follows from the queue, e.g. `3 busy + 2 for 7 queued partitions
    /// in 2 jobs (target 4 per prover)`.
    pub reason: String,
    /// Since when the pool has had more provers than its queue needs. The surplus is removed
    /// once it has lasted `scaleDownDelaySeconds`; unset while there is none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub surplus_since: Option<Time>,
    /// When the autoscaler last changed `spec.replicas`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_scale_time: Option<Time>,
}

/// Resolved pipeline sizing and the memory it is predicted to need.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PipelineSizing {
    /// Partitions synthesized concurrently on the CPU.
    pub partition_workers: i32,
    /// Synthesized partitions that may wait for the GPU at once.
    pub channel_capacity: i32,
    /// Partitions on the GPU at once.
    pub gpu_workers: i32,
    /// Predicted peak memory of one prover with this sizing, in bytes.
    pub predicted_peak_bytes: i64,
    /// The prover container's memory limit in bytes; unset when the template sets none.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub memory_limit_bytes: Option<i64>,
    /// Predicted peak against the limit, e.g. `41.2GiB/64GiB`, for `kubectl get`.
    pub memory_estimate: String,
    /// Predicted GPU memory of each device with this sizing, in bytes; unset when the GPU
    /// stage runs on the CPU.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub predicted_device_bytes: Option<i64>,
    /// The proving key's queries (`h`, `l`, `a`, `b_g1`, `b_g2`) whose base points the GPU
    /// cannot hold beside its workers (its memory, or `PROOFPIPE_GPU_MEMORY`), so each MSM
    /// streams them from page-locked host memory; empty when every base is on the GPU.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub streamed_queries: Vec<String>,
}

/// One prover pod as it last reported.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProverStatus {
    /// Name of the prover pod.
    pub pod: String,
    /// Idle (waiting for a job) or Busy (proving one).
    pub phase: ProverPhase,
    /// The ProofJob the prover is working on, if any.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub current_job: Option<String>,
    /// Partitions in each pipeline stage.
    pub buffers: StageBuffers,
    /// The prover's own estimate of its current memory use, in bytes.
    pub estimated_bytes: i64,
    /// The sizing this prover derived from its cgroup memory limit for its current (or
    /// last) job.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub sizing: Option<PipelineSizing>,
    /// What the prover is doing for its current job: `fetching input`, `loading parameters`,
    /// `proving`, `verifying`, `writing proofs`.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stage: Option<String>,
    /// When the current job last made progress (a stage began or a partition moved), to
    /// within 30 s; stalled provers are told apart by it.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub last_progress_time: Option<Time>,
    /// Partitions the prover has proved since it started.
    pub proofs_completed: i64,
    /// The GPU stage's backend and devices, as the prover found them when it started.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu: Option<GpuReport>,
    /// Set once the prover's GPU failed mid-job in a way that means the device is gone (an
    /// uncorrectable ECC error, fallen off the bus, a poisoned CUDA context): the prover takes
    /// no more work (the operator assigns it none) until its pod is replaced.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub gpu_lost: Option<GpuLoss>,
    /// The Filecoin parameter sets the prover keeps loaded between jobs, by registered proof
    /// (e.g. `StackedDrg32GiBV1_1`).
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub resident_parameters: Option<Vec<String>>,
    /// When the prover last reported.
    pub last_report: Time,
}

/// What a prover proves its GPU stage with.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GpuReport {
    /// `cuda`, or `cpu` when the stage runs on the CPU (no usable GPU, a build without CUDA,
    /// or `PROOFPIPE_BACKEND=cpu`).
    pub backend: String,
    /// Why this backend: the devices found, or why none could be used.
    pub message: String,
    /// The GPUs the backend uses.
    #[serde(default, skip_serializing_if = "Vec::is_empty")]
    pub devices: Vec<GpuDeviceReport>,
}

impl GpuReport {
    /// The backend name of a GPU stage on the CPU.
    pub const CPU: &'static str = "cpu";

    /// Whether the GPU stage runs on the CPU.
    pub fn on_cpu(&self) -> bool {
        self.backend == Self::CPU
    }
}

/// A GPU a prover lost mid-job.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GpuLoss {
    /// The CUDA device ordinal.
    pub device: i32,
    /// The error, as the CUDA runtime named it, e.g. `GPU 0 is lost: CUDA running the
    /// quotient failed with cudaErrorECCUncorrectable (error 214): ...`.
    pub message: String,
    /// When the prover saw it.
    pub time: Time,
}

/// One GPU of a prover.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct GpuDeviceReport {
    /// The CUDA device ordinal.
    pub id: i32,
    /// Its memory in bytes.
    pub memory_bytes: i64,
    /// Its memory free when the prover started, in bytes.
    pub free_bytes: i64,
    /// Compute capability, e.g. `9.0`.
    pub compute_capability: String,
}

/// Whether a prover is working on a job.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize, JsonSchema)]
pub enum ProverPhase {
    /// Waiting for a job.
    Idle,
    /// Proving a job's partitions.
    Busy,
}

/// Partitions in each stage of a prover's pipeline.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Copy, Debug, Default, PartialEq, Eq)]
#[serde(rename_all = "camelCase")]
pub struct StageBuffers {
    /// Being synthesized on the CPU.
    pub synthesizing: i32,
    /// Synthesized, waiting for the GPU.
    pub queued: i32,
    /// On the GPU.
    pub gpu: i32,
    /// Being assembled into proofs and verified.
    pub finalizing: i32,
}
