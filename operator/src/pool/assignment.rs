//! Which queued jobs go to which prover pods now: one job per idle prover, Ready pods only,
//! never a prover that reports its GPU lost (ADR 0032); and urgent work (PoSt) that finds no
//! idle prover goes beside a busy prover's long job, one urgent job per prover (ADR 0026).

use std::collections::{BTreeMap, BTreeSet};

use kube::ResourceExt;
use proofpipe_crds::{ProofJob, ProverStatus};

use crate::names::ASSIGNED_POD_LABEL;
use crate::shared::prover_pods::{PodHealth, ProverPod};

/// One decision: put `job` on `pod`.
#[derive(Clone, Debug, PartialEq)]
pub struct Assignment<'a> {
    pub job: &'a ProofJob,
    pub pod: &'a ProverPod,
}

/// Pods that have an unfinished job assigned (by label): they have no room.
pub fn busy_pods<'a>(jobs: impl IntoIterator<Item = &'a ProofJob>) -> BTreeSet<String> {
    jobs.into_iter()
        .filter(|job| !is_finished(job))
        .filter_map(|job| job.labels().get(ASSIGNED_POD_LABEL).cloned())
        .collect()
}

/// Provers whose pool entry says they lost their GPU (`gpuLost`): they take no work until
/// their pod is replaced, Ready or not (a pod stays Ready until its readiness probe fails).
pub fn out_of_rotation<'a>(
    reports: impl IntoIterator<Item = &'a ProverStatus>,
) -> BTreeSet<String> {
    reports
        .into_iter()
        .filter(|report| report.gpu_lost.is_some())
        .map(|report| report.pod.clone())
        .collect()
}

/// Ready pods with no job and in rotation, current-template pods first (an outdated pod that
/// takes a job delays its replacement), then lowest ordinal first (so work packs onto the
/// pods that are kept longest when the pool scales down).
pub fn idle_ready_pods<'a>(
    pods: &'a [ProverPod],
    busy: &BTreeSet<String>,
    out: &BTreeSet<String>,
) -> Vec<&'a ProverPod> {
    let mut idle: Vec<&ProverPod> = pods
        .iter()
        .filter(|pod| pod.health == PodHealth::Ready && !busy.contains(&pod.name))
        .filter(|pod| !out.contains(&pod.name))
        .collect();
    idle.sort_by_key(|pod| (pod.outdated, pod.ordinal.is_none(), pod.ordinal, &pod.name));
    idle
}

/// Ready pods in rotation that may take one urgent job beside the job they prove: each has
/// exactly one unfinished job assigned, and it is not urgent (a prover proves at most one
/// urgent job beside one other). Same order as [`idle_ready_pods`].
pub fn urgent_hosts<'a>(
    pods: &'a [ProverPod],
    jobs: &[ProofJob],
    out: &BTreeSet<String>,
) -> Vec<&'a ProverPod> {
    // Per pod: its unfinished jobs, and whether one is urgent.
    let mut load: BTreeMap<&str, (usize, bool)> = BTreeMap::new();
    for job in jobs.iter().filter(|job| !is_finished(job)) {
        if let Some(pod) = job.labels().get(ASSIGNED_POD_LABEL) {
            let entry = load.entry(pod.as_str()).or_default();
            entry.0 += 1;
            entry.1 |= job.spec.is_urgent();
        }
    }
    let mut hosts: Vec<&ProverPod> = pods
        .iter()
        .filter(|pod| pod.health == PodHealth::Ready && !out.contains(&pod.name))
        .filter(|pod| load.get(pod.name.as_str()) == Some(&(1, false)))
        .collect();
    hosts.sort_by_key(|pod| (pod.outdated, pod.ordinal.is_none(), pod.ordinal, &pod.name));
    hosts
}

fn is_finished(job: &ProofJob) -> bool {
    job.status
        .as_ref()
        .and_then(|status| status.phase)
        .is_some_and(|phase| phase.is_finished())
}

/// Pairs the head of `queue` with the idle pods, in order.
pub fn assign<'a>(queue: &[&'a ProofJob], idle: &[&'a ProverPod]) -> Vec<Assignment<'a>> {
    queue
        .iter()
        .zip(idle)
        .map(|(job, pod)| Assignment { job, pod })
        .collect()
}

#[cfg(test)]
mod tests {
    use proofpipe_crds::{ProofJobPhase, ProofJobStatus};

    use super::*;
    use crate::shared::prover_pods::tests::prover;
    use crate::shared::queue::queue;
    use crate::shared::queue::tests::job;

    #[test]
    fn the_queue_head_goes_to_the_lowest_idle_ready_pod() {
        let mut running = job("running", 0, 0);
        running
            .labels_mut()
            .insert(ASSIGNED_POD_LABEL.into(), "gpu-prover-0".into());
        let mut finished = job("finished", 0, 0);
        finished
            .labels_mut()
            .insert(ASSIGNED_POD_LABEL.into(), "gpu-prover-3".into());
        finished.status = Some(ProofJobStatus {
            phase: Some(ProofJobPhase::Succeeded),
            ..ProofJobStatus::default()
        });
        let jobs = [
            running,
            finished,
            job("low", 0, 0),
            job("high", 5, 9),
            job("extra", -3, 0),
        ];
        let pods = [
            prover(0, PodHealth::Ready),    // busy with "running"
            prover(1, PodHealth::Starting), // not ready
            prover(2, PodHealth::Terminating),
            prover(4, PodHealth::Ready),
            prover(3, PodHealth::Ready), // its job finished: idle
        ];

        let busy = busy_pods(&jobs);
        assert_eq!(busy, BTreeSet::from(["gpu-prover-0".to_owned()]));
        let idle = idle_ready_pods(&pods, &busy, &BTreeSet::new());
        let queue = queue("gpu", &jobs);
        let decided: Vec<(String, String)> = assign(&queue, &idle)
            .into_iter()
            .map(|a| (a.job.name_any(), a.pod.name.clone()))
            .collect();
        assert_eq!(
            decided,
            [
                ("high".into(), "gpu-prover-3".into()),
                ("low".into(), "gpu-prover-4".into())
            ]
        );
    }

    #[test]
    fn current_template_pods_take_work_before_outdated_ones() {
        let pods = [
            crate::shared::prover_pods::tests::outdated_prover(0, PodHealth::Ready),
            prover(5, PodHealth::Ready),
        ];
        let idle: Vec<&str> = idle_ready_pods(&pods, &BTreeSet::new(), &BTreeSet::new())
            .iter()
            .map(|pod| pod.name.as_str())
            .collect();
        assert_eq!(idle, ["gpu-prover-5", "gpu-prover-0"]);
    }

    #[test]
    fn nothing_is_assigned_without_an_idle_ready_pod() {
        let jobs = [job("waiting", 0, 0)];
        let pods = [prover(0, PodHealth::Starting)];
        let idle = idle_ready_pods(&pods, &BTreeSet::new(), &BTreeSet::new());
        assert!(assign(&queue("gpu", &jobs), &idle).is_empty());
    }

    #[test]
    fn a_prover_that_lost_its_gpu_takes_no_work_though_ready_and_idle() {
        let entry = |pod: &str, lost: bool| ProverStatus {
            gpu_lost: lost.then(|| proofpipe_crds::GpuLoss {
                device: 0,
                message: "GPU 0 is lost".into(),
                time: k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                    k8s_openapi::jiff::Timestamp::UNIX_EPOCH,
                ),
            }),
            ..serde_json::from_value(serde_json::json!({
                "pod": pod, "phase": "Idle", "buffers": {
                    "synthesizing": 0, "queued": 0, "gpu": 0, "finalizing": 0,
                },
                "estimatedBytes": 0, "proofsCompleted": 0,
                "lastReport": "2026-01-01T00:00:00Z",
            }))
            .unwrap()
        };
        let reports = [entry("gpu-prover-0", true), entry("gpu-prover-1", false)];
        let out = out_of_rotation(&reports);
        assert_eq!(out, BTreeSet::from(["gpu-prover-0".to_owned()]));

        let pods = [prover(0, PodHealth::Ready), prover(1, PodHealth::Ready)];
        let jobs = [job("first", 0, 0), job("second", 0, 1)];
        let idle = idle_ready_pods(&pods, &BTreeSet::new(), &out);
        let decided: Vec<(String, String)> = assign(&queue("gpu", &jobs), &idle)
            .into_iter()
            .map(|a| (a.job.name_any(), a.pod.name.clone()))
            .collect();
        assert_eq!(decided, [("first".into(), "gpu-prover-1".into())]);

        // Nor urgent work beside a job it still holds.
        let mut held = job("held", 0, 0);
        held.labels_mut()
            .insert(ASSIGNED_POD_LABEL.into(), "gpu-prover-0".into());
        assert!(urgent_hosts(&pods, &[held.clone()], &out).is_empty());
        assert_eq!(
            urgent_hosts(&pods, &[held], &BTreeSet::new())
                .iter()
                .map(|pod| pod.name.as_str())
                .collect::<Vec<_>>(),
            ["gpu-prover-0"]
        );
    }
}
