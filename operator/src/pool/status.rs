//! A ProverPool's status as a pure function of its pods, its queue and its provers' reports.

use std::collections::BTreeSet;

use k8s_openapi::jiff::Timestamp;
use proofpipe_crds::{
    AutoscalingStatus, GPU_LOST_REASON, ProofJob, ProverPoolStatus, ProverStatus,
};

use crate::conditions::{DesiredCondition, settle};
use crate::names::pool_selector;
use crate::pool::scaling::max_unavailable;
use crate::shared::prover_pods::{PodHealth, ProverPod};
use crate::shared::queue::remaining_partitions;

/// What the pool's status is computed from.
#[derive(Clone, Debug)]
pub struct PoolObservation<'a> {
    pub name: &'a str,
    pub generation: Option<i64>,
    pub desired_replicas: i32,
    /// The hash of the pool's current template ([`crate::pool::pod_spec::template_hash`]).
    pub template_hash: &'a str,
    pub pods: &'a [ProverPod],
    /// Pods with an unfinished job.
    pub busy: &'a BTreeSet<String>,
    /// The jobs still queued after this reconcile's assignments.
    pub queue: &'a [&'a ProofJob],
    pub current: &'a ProverPoolStatus,
    /// The autoscaler's decision, when the pool has `spec.autoscaling`.
    pub autoscaling: Option<AutoscalingStatus>,
    /// The template's prover container requests a GPU.
    pub wants_gpu: bool,
    pub now: Timestamp,
}

/// The status to write and the daemon-owned entries to remove.
#[derive(Clone, Debug, PartialEq)]
pub struct PoolStatusPlan {
    /// The operator-owned fields (never `provers`: each daemon owns its entry).
    pub status: ProverPoolStatus,
    /// `status.provers` entries of pods that no longer exist.
    pub stale_provers: Vec<String>,
    /// The scheduler's message when prover pods have just become unschedulable, for a
    /// Warning Event (once per episode, not on every reconcile).
    pub newly_unschedulable: Option<String>,
    /// The condition's message when prover pods have just started waiting for quota (their
    /// scheduling gates, e.g. Kueue's), for a Normal Event once per episode.
    pub newly_waiting_for_quota: Option<String>,
}

/// The reason of a False `ProversSchedulable` while pods wait for quota, not for nodes.
pub const WAITING_FOR_QUOTA: &str = "WaitingForQuota";

/// The condition a node autoscaler's users watch: False while some prover pod cannot be
/// scheduled.
pub const SCHEDULABLE_CONDITION: &str = "ProversSchedulable";

/// False while some prover pods still run an earlier template.
pub const UP_TO_DATE_CONDITION: &str = "ProversUpToDate";

/// False while a prover of a pool that requests GPUs found none usable and proves on the CPU,
/// or while a prover reports its GPU lost mid-job.
pub const GPU_CONDITION: &str = "ProversOnGpu";

/// The operator-owned part of a pool status.
pub fn operator_fields(status: &ProverPoolStatus) -> ProverPoolStatus {
    ProverPoolStatus {
        provers: None,
        ..status.clone()
    }
}

pub fn compute(observation: &PoolObservation) -> PoolStatusPlan {
    let alive: Vec<&ProverPod> = observation
        .pods
        .iter()
        .filter(|pod| pod.health.is_alive())
        .collect();
    let replicas = count(alive.len());
    let ready = count(
        alive
            .iter()
            .filter(|pod| pod.health == PodHealth::Ready)
            .count(),
    );
    let existing: BTreeSet<&str> = observation
        .pods
        .iter()
        .map(|pod| pod.name.as_str())
        .collect();
    let reports: Vec<&ProverStatus> = observation.current.provers.iter().flatten().collect();

    let sizing = reports
        .iter()
        .filter(|report| existing.contains(report.pod.as_str()))
        .filter_map(|report| report.sizing.as_ref())
        .max_by_key(|sizing| sizing.predicted_peak_bytes)
        .cloned();
    let stale_provers = reports
        .iter()
        .filter(|report| !existing.contains(report.pod.as_str()))
        .map(|report| report.pod.clone())
        .collect();

    let desired = observation.desired_replicas;
    let message = format!("{ready}/{desired} provers ready");
    let waiting = observation.queue.len();
    let ready_condition = if desired == 0 && replicas == 0 && waiting > 0 {
        // "0/0 ready" would read as fine while work waits for provers that will never come.
        DesiredCondition::new(
            "Ready",
            false,
            "NoProvers",
            format!(
                "0 provers and {waiting} jobs waiting: raise spec.replicas or set spec.autoscaling"
            ),
        )
    } else if ready == desired && replicas == desired {
        DesiredCondition::new("Ready", true, "AllProversReady", message)
    } else if replicas != desired {
        DesiredCondition::new(
            "Ready",
            false,
            "Scaling",
            format!("{message}, {replicas} exist"),
        )
    } else {
        DesiredCondition::new("Ready", false, "ProversNotReady", message)
    };

    let unschedulable: Vec<&ProverPod> = alive
        .iter()
        .copied()
        .filter(|pod| pod.unschedulable.is_some())
        .collect();
    let gated: Vec<&ProverPod> = alive
        .iter()
        .copied()
        .filter(|pod| pod.gated.is_some())
        .collect();
    let schedulable_condition = match (unschedulable.first(), gated.first()) {
        (None, None) => DesiredCondition::new(
            SCHEDULABLE_CONDITION,
            true,
            "Scheduled",
            "every prover pod has a node or is being placed",
        ),
        // Held by their scheduling gates: no node would help, and none is asked for.
        (None, Some(first)) => DesiredCondition::new(
            SCHEDULABLE_CONDITION,
            false,
            WAITING_FOR_QUOTA,
            format!(
                "{} prover pod(s) wait for quota ({}: scheduling gate {}); Kueue admits a pod when its ClusterQueue has room for its requests, and no node autoscaler adds nodes for a gated pod: check `kubectl get clusterqueue` and the pool's LocalQueue (docs/autoscaling.md)",
                gated.len(),
                first.name,
                first.gated.as_deref().unwrap_or_default()
            ),
        ),
        (Some(first), _) => DesiredCondition::new(
            SCHEDULABLE_CONDITION,
            false,
            "Unschedulable",
            format!(
                "{} prover pod(s) cannot be scheduled ({}: {}); a node autoscaler adds nodes for them, else check the template's resources, nodeSelector and tolerations",
                unschedulable.len(),
                first.name,
                first.unschedulable.as_deref().unwrap_or_default()
            ),
        ),
    };
    let up_to_date_condition = up_to_date_condition(observation, &alive);
    let live_reports: Vec<&ProverStatus> = reports
        .iter()
        .copied()
        .filter(|report| existing.contains(report.pod.as_str()))
        .collect();
    let gpu_condition = gpu_condition(observation.wants_gpu, &live_reports);
    let was =
        |reason: &str| {
            observation.current.conditions.iter().flatten().any(|c| {
                c.type_ == SCHEDULABLE_CONDITION && c.status == "False" && c.reason == reason
            })
        };
    let newly = |reason: &str| {
        (!schedulable_condition.status && schedulable_condition.reason == reason && !was(reason))
            .then(|| schedulable_condition.message.clone())
    };
    let newly_unschedulable = newly("Unschedulable");
    let newly_waiting_for_quota = newly(WAITING_FOR_QUOTA);

    let status = ProverPoolStatus {
        replicas: Some(replicas),
        updated_replicas: Some(count(alive.iter().filter(|pod| !pod.outdated).count())),
        template_hash: Some(observation.template_hash.to_owned()),
        unschedulable_replicas: Some(count(unschedulable.len())),
        autoscaling: observation.autoscaling.clone(),
        ready_replicas: Some(ready),
        selector: Some(pool_selector(observation.name)),
        sizing,
        queued_jobs: Some(count(observation.queue.len())),
        queued_partitions: Some(
            observation
                .queue
                .iter()
                .map(|job| remaining_partitions(job))
                .sum(),
        ),
        provers: None,
        conditions: Some(settle(
            observation.current.conditions.as_deref(),
            vec![
                ready_condition,
                schedulable_condition,
                up_to_date_condition,
                gpu_condition,
            ],
            observation.generation,
            observation.now,
        )),
        observed_generation: observation.generation,
    };
    PoolStatusPlan {
        status,
        stale_provers,
        newly_unschedulable,
        newly_waiting_for_quota,
    }
}

/// Whether every prover runs the current template; while not, what the roll waits for.
fn up_to_date_condition(observation: &PoolObservation, alive: &[&ProverPod]) -> DesiredCondition {
    let hash = observation.template_hash;
    let outdated: Vec<&str> = alive
        .iter()
        .filter(|pod| pod.outdated)
        .map(|pod| pod.name.as_str())
        .collect();
    if outdated.is_empty() {
        return DesiredCondition::new(
            UP_TO_DATE_CONDITION,
            true,
            "TemplateApplied",
            format!("every prover pod runs the current template ({hash})"),
        );
    }
    let busy: Vec<&str> = outdated
        .iter()
        .copied()
        .filter(|pod| observation.busy.contains(*pod))
        .collect();
    let mut message = format!(
        "{} of {} prover pods run an earlier template than the current one ({hash}); idle ones are replaced, {} at a time",
        outdated.len(),
        alive.len(),
        max_unavailable(usize::try_from(observation.desired_replicas).unwrap_or(0)),
    );
    if !busy.is_empty() {
        message.push_str(&format!(
            "; busy ones when their job ends: {}",
            busy.join(", ")
        ));
    }
    DesiredCondition::new(UP_TO_DATE_CONDITION, false, "Rolling", message)
}

/// Whether the provers of a pool that requests GPUs prove on them: False, naming one, while
/// some report a GPU stage on the CPU (no usable GPU: a driver or device-plugin fault, ~20x
/// slower proofs); False first of all while some report their GPU lost mid-job (ADR 0032:
/// they take no work until their pods are replaced).
fn gpu_condition(wants_gpu: bool, reports: &[&ProverStatus]) -> DesiredCondition {
    let lost: Vec<&ProverStatus> = reports
        .iter()
        .copied()
        .filter(|report| report.gpu_lost.is_some())
        .collect();
    if let Some((first, loss)) = lost
        .first()
        .and_then(|first| Some((first, first.gpu_lost.as_ref()?)))
    {
        return DesiredCondition::new(
            GPU_CONDITION,
            false,
            GPU_LOST_REASON,
            format!(
                "{} of {} provers lost their GPU mid-job and take no work ({} lost GPU {}: {}); their jobs went back to the queue; delete such a pod to replace it (or set PROOFPIPE_REQUIRE_GPU=true in the template so such provers exit), and check the node if it happens again (docs/operating.md)",
                lost.len(),
                reports.len(),
                first.pod,
                loss.device,
                loss.message
            ),
        );
    }
    if !wants_gpu {
        return DesiredCondition::new(
            GPU_CONDITION,
            true,
            "NoGpuRequested",
            "the template's prover container requests no nvidia.com/gpu: the GPU stage runs on the CPU",
        );
    }
    let on_cpu: Vec<&ProverStatus> = reports
        .iter()
        .copied()
        .filter(|report| report.gpu.as_ref().is_some_and(|gpu| gpu.on_cpu()))
        .collect();
    match on_cpu.first() {
        None => DesiredCondition::new(
            GPU_CONDITION,
            true,
            "GpusInUse",
            "every prover that reported proves on its GPU",
        ),
        Some(first) => DesiredCondition::new(
            GPU_CONDITION,
            false,
            "ProvingOnCpu",
            format!(
                "{} of {} provers found no usable GPU and prove on the CPU, many times slower ({}: {}); check the nodes' NVIDIA driver and device plugin, or set PROOFPIPE_REQUIRE_GPU=true in the template so such provers exit instead",
                on_cpu.len(),
                reports.len(),
                first.pod,
                first.gpu.as_ref().map_or("", |gpu| gpu.message.as_str())
            ),
        ),
    }
}

fn count(n: usize) -> i32 {
    i32::try_from(n).unwrap_or(i32::MAX)
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::{Condition, Time};
    use proofpipe_crds::{PipelineSizing, ProverPhase, StageBuffers};

    use super::*;
    use crate::shared::prover_pods::tests::prover;
    use crate::shared::queue::tests::job;

    /// The condition of `type_` in `status`; panics if there is none.
    fn find_condition<'a>(status: &'a ProverPoolStatus, type_: &str) -> &'a Condition {
        status
            .conditions
            .iter()
            .flatten()
            .find(|c| c.type_ == type_)
            .unwrap_or_else(|| panic!("no {type_} condition in {status:?}"))
    }

    fn report(pod: &str, peak: Option<i64>) -> ProverStatus {
        ProverStatus {
            pod: pod.into(),
            phase: ProverPhase::Idle,
            current_job: None,
            buffers: StageBuffers::default(),
            estimated_bytes: 0,
            sizing: peak.map(|predicted_peak_bytes| PipelineSizing {
                partition_workers: 2,
                channel_capacity: 1,
                gpu_workers: 1,
                predicted_peak_bytes,
                memory_limit_bytes: Some(64 << 30),
                memory_estimate: format!("{predicted_peak_bytes}B/64GiB"),
                predicted_device_bytes: None,
                streamed_queries: Vec::new(),
            }),
            stage: None,
            last_progress_time: None,
            proofs_completed: 0,
            gpu: None,
            gpu_lost: None,
            resident_parameters: None,
            last_report: Time(Timestamp::UNIX_EPOCH),
        }
    }

    #[test]
    fn a_gpu_pool_whose_provers_prove_on_the_cpu_says_which_and_why() {
        let with_gpu = |pod: &str, backend: &str, message: &str| ProverStatus {
            gpu: Some(proofpipe_crds::GpuReport {
                backend: backend.into(),
                message: message.into(),
                devices: Vec::new(),
            }),
            ..report(pod, None)
        };
        let on_cpu = with_gpu("p-0", "cpu", "this build has no GPU backend");
        let on_gpu = with_gpu("p-1", "cuda", "CUDA on 1 GPU(s)");
        let condition = gpu_condition(true, &[&on_cpu, &on_gpu]);
        assert!(!condition.status);
        assert_eq!(condition.reason, "ProvingOnCpu");
        assert!(
            condition.message.contains("1 of 2 provers")
                && condition
                    .message
                    .contains("p-0: this build has no GPU backend"),
            "{}",
            condition.message
        );
        let fine = gpu_condition(true, &[&on_gpu, &report("p-2", None)]);
        assert_eq!((fine.status, fine.reason), (true, "GpusInUse"));
        let cpu_pool = gpu_condition(false, &[&on_cpu]);
        assert_eq!((cpu_pool.status, cpu_pool.reason), (true, "NoGpuRequested"));
    }

    #[test]
    fn a_prover_that_lost_its_gpu_turns_the_gpu_condition_false_whatever_the_template() {
        let lost = ProverStatus {
            gpu_lost: Some(proofpipe_crds::GpuLoss {
                device: 1,
                message: "GPU 1 is lost: ... cudaErrorECCUncorrectable".into(),
                time: Time(Timestamp::UNIX_EPOCH),
            }),
            ..report("p-0", None)
        };
        for wants_gpu in [true, false] {
            let condition = gpu_condition(wants_gpu, &[&lost, &report("p-1", None)]);
            assert_eq!((condition.status, condition.reason), (false, "GpuLost"));
            assert!(
                condition.message.starts_with(
                    "1 of 2 provers lost their GPU mid-job and take no work (p-0 lost GPU 1: \
                     GPU 1 is lost: ... cudaErrorECCUncorrectable)"
                ),
                "{}",
                condition.message
            );
        }
    }

    #[test]
    fn counts_queue_sizing_and_stale_entries() {
        let pods = [
            prover(0, PodHealth::Ready),
            prover(1, PodHealth::Starting),
            prover(2, PodHealth::Terminating),
        ];
        let jobs = [job("a", 0, 0), job("b", 0, 1)];
        let queue: Vec<&ProofJob> = jobs.iter().collect();
        let current = ProverPoolStatus {
            provers: Some(vec![
                report("gpu-prover-0", Some(10)),
                report("gpu-prover-1", Some(30)),
                report("gpu-prover-2", None),
                report("gpu-prover-9", Some(99)),
            ]),
            ..ProverPoolStatus::default()
        };
        let plan = compute(&PoolObservation {
            name: "gpu",
            generation: Some(3),
            desired_replicas: 2,
            template_hash: "h1",
            busy: &BTreeSet::new(),
            pods: &pods,
            queue: &queue,
            current: &current,
            autoscaling: None,
            wants_gpu: false,
            now: Timestamp::UNIX_EPOCH,
        });
        let status = &plan.status;
        assert_eq!((status.replicas, status.ready_replicas), (Some(2), Some(1)));
        assert_eq!(
            status.selector.as_deref(),
            Some("proofpipe.dev/pool=gpu,app.kubernetes.io/name=proofpipe-prover")
        );
        // The largest predicted peak among pods that still exist (gpu-prover-9 is gone).
        assert_eq!(
            status.sizing.as_ref().map(|s| s.predicted_peak_bytes),
            Some(30)
        );
        assert_eq!(
            (status.queued_jobs, status.queued_partitions),
            (Some(2), Some(8))
        );
        assert_eq!(status.provers, None);
        assert_eq!(status.observed_generation, Some(3));
        let ready = &status.conditions.as_ref().unwrap()[0];
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("False", "ProversNotReady")
        );
        assert_eq!(ready.observed_generation, Some(3));
        assert_eq!(plan.stale_provers, ["gpu-prover-9"]);
    }

    /// The Ready condition of a pool of `pods` wanting `desired` provers, with `queue`
    /// waiting.
    fn ready_condition(
        desired: i32,
        pods: &[ProverPod],
        queue: &[&ProofJob],
    ) -> k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition {
        compute(&PoolObservation {
            name: "gpu",
            generation: Some(1),
            desired_replicas: desired,
            template_hash: "h1",
            busy: &BTreeSet::new(),
            pods,
            queue,
            current: &ProverPoolStatus::default(),
            autoscaling: None,
            wants_gpu: false,
            now: Timestamp::UNIX_EPOCH,
        })
        .status
        .conditions
        .unwrap()
        .remove(0)
    }

    #[test]
    fn ready_when_every_desired_prover_is() {
        let pods = [prover(0, PodHealth::Ready), prover(1, PodHealth::Ready)];
        let ready = ready_condition(2, &pods, &[]);
        assert_eq!(
            (ready.status.as_str(), ready.reason.as_str()),
            ("True", "AllProversReady")
        );
        assert_eq!(ready.message, "2/2 provers ready");
        assert_eq!(ready_condition(3, &pods, &[]).reason, "Scaling");
    }

    #[test]
    fn a_pool_of_no_provers_with_waiting_jobs_is_not_ready() {
        let job = crate::shared::queue::tests::job("waiting", 0, 0);
        let idle = ready_condition(0, &[], &[]);
        assert_eq!(
            (idle.status.as_str(), idle.reason.as_str()),
            ("True", "AllProversReady")
        );
        let waiting = ready_condition(0, &[], &[&job]);
        assert_eq!(
            (waiting.status.as_str(), waiting.reason.as_str()),
            ("False", "NoProvers")
        );
        assert!(
            waiting.message.contains("1 jobs waiting"),
            "{}",
            waiting.message
        );
    }

    #[test]
    fn unschedulable_pods_are_counted_and_warned_about_once() {
        let mut pending = prover(1, PodHealth::Starting);
        pending.unschedulable =
            Some("0/2 nodes are available: 2 Insufficient nvidia.com/gpu.".into());
        let pods = [prover(0, PodHealth::Ready), pending];
        let observe = |current: &ProverPoolStatus| {
            compute(&PoolObservation {
                name: "gpu",
                generation: Some(1),
                desired_replicas: 2,
                template_hash: "h1",
                busy: &BTreeSet::new(),
                pods: &pods,
                queue: &[],
                current,
                autoscaling: None,
                wants_gpu: false,
                now: Timestamp::UNIX_EPOCH,
            })
        };
        let first = observe(&ProverPoolStatus::default());
        assert_eq!(first.status.unschedulable_replicas, Some(1));
        let condition = find_condition(&first.status, SCHEDULABLE_CONDITION);
        assert_eq!(
            (condition.status.as_str(), condition.reason.as_str()),
            ("False", "Unschedulable")
        );
        assert!(
            condition
                .message
                .contains("gpu-prover-1: 0/2 nodes are available"),
            "{}",
            condition.message
        );
        assert!(first.newly_unschedulable.is_some());

        // Already reported: no second Event.
        let again = observe(&first.status);
        assert_eq!(again.newly_unschedulable, None);
        assert_eq!(
            again.status, first.status,
            "nothing changed, nothing to write"
        );
    }

    #[test]
    fn gated_pods_wait_for_quota_and_are_not_unschedulable() {
        let mut gated = prover(1, PodHealth::Starting);
        gated.gated = Some("kueue.x-k8s.io/admission".into());
        let observe = |pods: &[ProverPod], current: &ProverPoolStatus| {
            compute(&PoolObservation {
                name: "gpu",
                generation: Some(1),
                desired_replicas: 2,
                template_hash: "h1",
                busy: &BTreeSet::new(),
                pods,
                queue: &[],
                current,
                autoscaling: None,
                wants_gpu: false,
                now: Timestamp::UNIX_EPOCH,
            })
        };
        let pods = [prover(0, PodHealth::Ready), gated.clone()];
        let first = observe(&pods, &ProverPoolStatus::default());
        assert_eq!(first.status.unschedulable_replicas, Some(0));
        let condition = find_condition(&first.status, SCHEDULABLE_CONDITION);
        assert_eq!(
            (condition.status.as_str(), condition.reason.as_str()),
            ("False", WAITING_FOR_QUOTA)
        );
        assert!(
            condition
                .message
                .contains("1 prover pod(s) wait for quota (gpu-prover-1: scheduling gate kueue.x-k8s.io/admission)"),
            "{}",
            condition.message
        );
        assert_eq!(
            first.newly_unschedulable, None,
            "no Warning: no node is missing"
        );
        assert!(first.newly_waiting_for_quota.is_some());
        assert_eq!(
            observe(&pods, &first.status).newly_waiting_for_quota,
            None,
            "once"
        );

        // A pod no node can take outranks the wait for quota, and is warned about.
        let mut unschedulable = prover(2, PodHealth::Starting);
        unschedulable.unschedulable = Some("0/1 nodes are available".into());
        let both = observe(&[gated, unschedulable], &first.status);
        let condition = find_condition(&both.status, SCHEDULABLE_CONDITION);
        assert_eq!(condition.reason, "Unschedulable");
        assert!(both.newly_unschedulable.is_some());
        assert_eq!(both.status.unschedulable_replicas, Some(1));
    }

    #[test]
    fn a_rolling_pool_counts_updated_pods_and_names_the_busy_ones_it_waits_for() {
        let pods = [
            prover(0, PodHealth::Ready),
            crate::shared::prover_pods::tests::outdated_prover(1, PodHealth::Ready),
            crate::shared::prover_pods::tests::outdated_prover(2, PodHealth::Ready),
            crate::shared::prover_pods::tests::outdated_prover(3, PodHealth::Terminating),
        ];
        let busy = BTreeSet::from(["gpu-prover-2".to_owned()]);
        let observe = |pods: &[ProverPod]| {
            compute(&PoolObservation {
                name: "gpu",
                generation: Some(4),
                desired_replicas: 3,
                template_hash: "ab12cd34ef",
                pods,
                busy: &busy,
                queue: &[],
                current: &ProverPoolStatus::default(),
                autoscaling: None,
                wants_gpu: false,
                now: Timestamp::UNIX_EPOCH,
            })
            .status
        };
        let rolling = observe(&pods);
        assert_eq!(
            rolling.updated_replicas,
            Some(1),
            "terminating pods do not count"
        );
        assert_eq!(rolling.template_hash.as_deref(), Some("ab12cd34ef"));
        let condition = find_condition(&rolling, UP_TO_DATE_CONDITION);
        assert_eq!(
            (condition.status.as_str(), condition.reason.as_str()),
            ("False", "Rolling")
        );
        assert_eq!(
            condition.message,
            "2 of 3 prover pods run an earlier template than the current one (ab12cd34ef); \
             idle ones are replaced, 1 at a time; busy ones when their job ends: gpu-prover-2"
        );

        let done = observe(&[prover(0, PodHealth::Ready), prover(4, PodHealth::Starting)]);
        assert_eq!(done.updated_replicas, Some(2));
        let condition = find_condition(&done, UP_TO_DATE_CONDITION);
        assert_eq!(
            (condition.status.as_str(), condition.reason.as_str()),
            ("True", "TemplateApplied")
        );
    }
}
