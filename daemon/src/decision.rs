//! What the daemon does after its view of the ProofJobs assigned to it changed.
//!
//! The view is every ProofJob carrying this pod's assigned-pod label, as the watch last
//! saw it; the daemon has two lanes (a main job, and an urgent job beside it). The label is the operator's word (ADR 0003): a job that loses it was requeued,
//! suspended or deleted, and the daemon stops proving it.

use std::collections::HashSet;
use std::sync::Arc;

use kube::ResourceExt;
use proofpipe_crds::ProofJob;

use super::resume::has_work_left;

#[derive(Clone, Debug, PartialEq)]
pub enum Decision {
    /// Keep proving the running job.
    Continue,
    /// The running job is no longer ours to prove.
    Cancel,
    /// Nothing runs; prove this job.
    Start(Arc<ProofJob>),
    /// Nothing runs and nothing is to be proved.
    Idle,
    /// The prover lost its GPU: stop the running job, still ours, and hand it back to the
    /// queue (ADR 0032).
    HandBack,
}

/// One attempt at a job: its uid and `status.attempts` when the daemon started it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub struct Attempt {
    pub uid: String,
    pub attempt: i32,
}

impl Attempt {
    /// The attempt `job` is on now, if it has a uid.
    pub fn of(job: &ProofJob) -> Option<Self> {
        Some(Self {
            uid: job.uid()?,
            attempt: job.status.as_ref().and_then(|s| s.attempts).unwrap_or(0),
        })
    }
}

/// The uids of the jobs running in each lane.
#[derive(Clone, Copy, Debug, Default)]
pub struct Running<'a> {
    pub main: Option<&'a str>,
    pub urgent: Option<&'a str>,
}

/// What each lane does now.
#[derive(Clone, Debug, PartialEq)]
pub struct Decisions {
    pub main: Decision,
    pub urgent: Decision,
}

/// Decides from the uids of the running jobs, the jobs assigned to this pod (`pod`), and the
/// attempts this process already ended: proved completely (the watch may not show their last
/// proofs yet) or reported failed (the operator has yet to take them off).
///
/// The main lane proves one job at a time; among several waiting, urgent work (PoSt) first,
/// then the oldest. The urgent lane proves one urgent job beside a main job that is not
/// urgent (ADR 0026): the operator puts PoSt on a busy prover when none is idle. No main job
/// starts while the urgent lane runs, since the urgent pipeline is sized into the memory a new
/// main job would plan for. A job is started once the operator has recorded its assignment
/// (`status.pod`), so the attempt it reports on is the operator's. A job whose partitions all
/// have verified proofs (and, for Filecoin work, an assembled proof) is not started: only the
/// operator's Succeeded is still missing.
pub fn decide(
    running: Running<'_>,
    pod: &str,
    assigned: &[Arc<ProofJob>],
    ended: &HashSet<Attempt>,
) -> Decisions {
    let keep = |uid: &str| keep(uid, assigned);
    let startable = startable(running, pod, assigned, ended);
    let start = |job: Option<&&Arc<ProofJob>>| {
        job.map_or(Decision::Idle, |job| Decision::Start(Arc::clone(job)))
    };
    let main = match (running.main, running.urgent) {
        (Some(uid), _) => keep(uid),
        (None, Some(_)) => Decision::Idle,
        (None, None) => start(startable.first()),
    };
    let urgent = match running.urgent {
        Some(uid) => keep(uid),
        None => {
            let hosts_urgent_work = running.main.is_some_and(|uid| {
                assigned
                    .iter()
                    .any(|job| job.uid().as_deref() == Some(uid) && !job.spec.is_urgent())
            });
            if hosts_urgent_work && main == Decision::Continue {
                start(startable.iter().find(|job| job.spec.is_urgent()))
            } else {
                Decision::Idle
            }
        }
    };
    Decisions { main, urgent }
}

/// What a prover whose GPU is lost does (ADR 0032): it starts nothing; a running job still
/// assigned to it is stopped and handed back ([`Decision::HandBack`]: its proofs are kept, the
/// job goes back to the queue without being charged to its `backoffLimit`), one no longer its
/// own is cancelled as ever; and the jobs waiting for it (the operator assigned them before it
/// saw the loss) are handed back at once, the second value.
pub fn decide_without_gpu(
    running: Running<'_>,
    pod: &str,
    assigned: &[Arc<ProofJob>],
    ended: &HashSet<Attempt>,
) -> (Decisions, Vec<Arc<ProofJob>>) {
    let lane = |uid: Option<&str>| match uid.map(|uid| keep(uid, assigned)) {
        Some(Decision::Continue) => Decision::HandBack,
        Some(decision) => decision,
        None => Decision::Idle,
    };
    let decisions = Decisions {
        main: lane(running.main),
        urgent: lane(running.urgent),
    };
    let waiting = startable(running, pod, assigned, ended)
        .into_iter()
        .cloned()
        .collect();
    (decisions, waiting)
}

/// A running job (by uid) is kept while it is still assigned here and open.
/// Whether the process ends now: it lost its GPU, must have one (`PROOFPIPE_REQUIRE_GPU`), and
/// holds no job in either lane (each was handed back first, so its pod's replacement loses
/// nothing). Without the requirement it stays, out of rotation, for a person to look at.
pub fn exit_for_lost_gpu(require_gpu: bool, gpu_lost: bool, holds_a_job: bool) -> bool {
    require_gpu && gpu_lost && !holds_a_job
}

fn keep(uid: &str, assigned: &[Arc<ProofJob>]) -> Decision {
    let still_ours = assigned
        .iter()
        .any(|job| job.uid().as_deref() == Some(uid) && is_open(job));
    if still_ours {
        Decision::Continue
    } else {
        Decision::Cancel
    }
}

/// The assigned jobs this prover may start, in the order it starts them: recorded on `pod`,
/// open, with work left, not running, and not on an attempt this process ended; urgent work
/// first, then the oldest.
fn startable<'a>(
    running: Running<'_>,
    pod: &str,
    assigned: &'a [Arc<ProofJob>],
    ended: &HashSet<Attempt>,
) -> Vec<&'a Arc<ProofJob>> {
    let mut startable: Vec<&Arc<ProofJob>> = assigned
        .iter()
        .filter(|job| Attempt::of(job).is_some_and(|attempt| !ended.contains(&attempt)))
        .filter(|job| job.status.as_ref().and_then(|s| s.pod.as_deref()) == Some(pod))
        .filter(|job| is_open(job) && has_work_left(job))
        .filter(|job| {
            let uid = job.uid();
            uid.as_deref() != running.main && uid.as_deref() != running.urgent
        })
        .collect();
    startable.sort_by(|a, b| {
        (!a.spec.is_urgent(), a.creation_timestamp(), a.name_any()).cmp(&(
            !b.spec.is_urgent(),
            b.creation_timestamp(),
            b.name_any(),
        ))
    });
    startable
}

/// Not finished by the operator and not being deleted.
fn is_open(job: &ProofJob) -> bool {
    let finished = job
        .status
        .as_ref()
        .and_then(|s| s.phase)
        .is_some_and(|phase| phase.is_finished());
    !finished && job.metadata.deletion_timestamp.is_none()
}

#[cfg(test)]
mod tests {
    use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
    use k8s_openapi::jiff::Timestamp;
    use proofpipe_crds::ProofJobPhase;

    use super::*;
    use crate::resume::tests::{job, proof};

    #[test]
    fn a_prover_that_must_have_a_gpu_exits_once_it_lost_it_and_holds_no_job() {
        // (require_gpu, gpu_lost, holds_a_job) -> exits
        for (case, exits) in [
            ((true, true, false), true),
            // Its job is handed back first: the pod's replacement must lose nothing.
            ((true, true, true), false),
            // Without the requirement it stays, out of rotation, for a person to look at.
            ((false, true, false), false),
            ((true, false, false), false),
        ] {
            assert_eq!(exit_for_lost_gpu(case.0, case.1, case.2), exits, "{case:?}");
        }
    }

    const POD: &str = "p";

    /// `job` as the operator leaves it once it recorded the assignment to [`POD`].
    fn recorded(mut job: ProofJob) -> ProofJob {
        job.status.get_or_insert_default().pod = Some(POD.into());
        job
    }

    fn created(name: &str, second: i64) -> Arc<ProofJob> {
        let mut job = recorded(job(name, 2, vec![]));
        job.metadata.creation_timestamp = Some(Time(Timestamp::from_second(second).unwrap()));
        Arc::new(job)
    }

    fn with_phase(job: &ProofJob, phase: ProofJobPhase) -> Arc<ProofJob> {
        let mut job = job.clone();
        job.status.get_or_insert_default().phase = Some(phase);
        Arc::new(job)
    }

    /// The main lane's decision, with nothing in the urgent lane.
    fn decide(running: Option<&str>, assigned: &[Arc<ProofJob>]) -> Decision {
        main_lane(running, assigned, &HashSet::new())
    }

    fn main_lane(
        running: Option<&str>,
        assigned: &[Arc<ProofJob>],
        ended: &HashSet<Attempt>,
    ) -> Decision {
        let running = Running {
            main: running,
            urgent: None,
        };
        super::decide(running, POD, assigned, ended).main
    }

    #[test]
    fn idle_with_nothing_assigned() {
        assert_eq!(decide(None, &[]), Decision::Idle);
    }

    #[test]
    fn an_attempt_ended_here_is_not_started_again_but_the_next_attempt_is() {
        let job = created("a", 1);
        let ended = HashSet::from([Attempt::of(&job).unwrap()]);
        assert_eq!(
            main_lane(None, std::slice::from_ref(&job), &ended),
            Decision::Idle
        );
        // The operator requeued it and gave it back to this pod: attempt 2.
        let mut again = (*job).clone();
        again.status.as_mut().unwrap().attempts = Some(2);
        let again = Arc::new(again);
        assert_eq!(
            main_lane(None, std::slice::from_ref(&again), &ended),
            Decision::Start(again)
        );
    }

    #[test]
    fn a_job_is_started_only_once_its_assignment_is_recorded() {
        let unrecorded = Arc::new(job("a", 2, vec![]));
        assert_eq!(
            decide(None, std::slice::from_ref(&unrecorded)),
            Decision::Idle
        );
        let mut elsewhere = (*unrecorded).clone();
        elsewhere.status.as_mut().unwrap().pod = Some("other".into());
        assert_eq!(decide(None, &[Arc::new(elsewhere)]), Decision::Idle);
    }

    #[test]
    fn starts_the_oldest_open_job() {
        let (old, new) = (created("b", 100), created("a", 200));
        assert_eq!(
            decide(None, &[new.clone(), old.clone()]),
            Decision::Start(old.clone())
        );
        let same_age = created("c", 100);
        assert_eq!(decide(None, &[same_age, old.clone()]), Decision::Start(old));
    }

    #[test]
    fn skips_finished_deleted_and_fully_proved_jobs() {
        let finished = with_phase(&created("a", 1), ProofJobPhase::Succeeded);
        let mut deleting = (*created("b", 2)).clone();
        deleting.metadata.deletion_timestamp = Some(Time(Timestamp::from_second(5).unwrap()));
        let proved = Arc::new(recorded(job(
            "c",
            2,
            vec![proof(0, true, "p"), proof(1, true, "p")],
        )));
        let open = created("d", 4);
        let all = [finished, Arc::new(deleting), proved, open.clone()];
        assert_eq!(decide(None, &all), Decision::Start(open));
        assert_eq!(decide(None, &all[..3]), Decision::Idle);
    }

    #[test]
    fn a_filecoin_job_with_every_partition_proved_is_started_until_its_proof_is_assembled() {
        let mut job = recorded(job("sector", 1, vec![proof(0, true, "p")]));
        job.spec = serde_json::from_value(serde_json::json!({
            "pool": "gpu", "filecoin": {
                "sealProof": "StackedDrg2KiBV1_1",
                "input": { "url": "s3://b/c1.json", "sha256": "ab".repeat(32) },
            },
        }))
        .unwrap();
        let job = Arc::new(job);
        assert_eq!(
            decide(None, std::slice::from_ref(&job)),
            Decision::Start(job.clone())
        );
        let mut assembled = (*job).clone();
        assembled.status.as_mut().unwrap().filecoin = Some(proofpipe_crds::FilecoinResult {
            proof: "AAAA".into(),
            proof_bytes: 192,
            verified: true,
            output_url: None,
            proved_by: "p".into(),
        });
        assert_eq!(decide(None, &[Arc::new(assembled)]), Decision::Idle);
    }

    #[test]
    fn continues_while_the_running_job_keeps_its_label() {
        let running = created("a", 1);
        let uid = running.uid().unwrap();
        assert_eq!(
            decide(Some(&uid), &[running.clone(), created("b", 0)]),
            Decision::Continue
        );
        // Even when its last proof is already in the status: the pipeline is finishing.
        let proved = Arc::new(job("a", 1, vec![proof(0, true, "p")]));
        assert_eq!(decide(Some(&uid), &[proved]), Decision::Continue);
    }

    #[test]
    fn cancels_a_running_job_that_lost_its_label_or_finished() {
        let running = created("a", 1);
        let uid = running.uid().unwrap();
        assert_eq!(decide(Some(&uid), &[created("b", 2)]), Decision::Cancel);
        assert_eq!(
            decide(Some(&uid), &[with_phase(&running, ProofJobPhase::Failed)]),
            Decision::Cancel
        );
        // Deleted and recreated under the same name: another uid, another job.
        let mut recreated = (*running).clone();
        recreated.metadata.uid = Some("other".into());
        assert_eq!(decide(Some(&uid), &[Arc::new(recreated)]), Decision::Cancel);
    }

    /// A WinningPoSt job (urgent work) recorded on [`POD`].
    fn post(name: &str, second: i64) -> Arc<ProofJob> {
        let mut job = (*created(name, second)).clone();
        job.spec = serde_json::from_value(serde_json::json!({
            "pool": "gpu", "priority": 1000, "filecoin": {
                "kind": "WinningPoSt",
                "postProof": "StackedDrgWinning2KiBV1",
                "input": { "url": "s3://b/post.json", "sha256": "ab".repeat(32) },
            },
        }))
        .unwrap();
        Arc::new(job)
    }

    fn lanes(main: Option<&str>, urgent: Option<&str>, assigned: &[Arc<ProofJob>]) -> Decisions {
        super::decide(Running { main, urgent }, POD, assigned, &HashSet::new())
    }

    #[test]
    fn urgent_work_starts_beside_a_long_main_job_and_later_work_waits() {
        let (porep, waiting, winning) = (created("porep", 1), created("older", 0), post("win", 5));
        let uid = porep.uid().unwrap();
        let assigned = [porep.clone(), waiting.clone(), winning.clone()];
        assert_eq!(
            lanes(Some(&uid), None, &assigned),
            Decisions {
                main: Decision::Continue,
                urgent: Decision::Start(winning.clone()),
            }
        );
        // While it runs, the main lane starts nothing new even once its job is gone: the
        // urgent pipeline is sized into the memory a new main job would plan for.
        let win_uid = winning.uid().unwrap();
        assert_eq!(
            lanes(None, Some(&win_uid), &[waiting.clone(), winning.clone()]),
            Decisions {
                main: Decision::Idle,
                urgent: Decision::Continue,
            }
        );
        assert_eq!(
            lanes(Some(&uid), Some(&win_uid), &[porep]),
            Decisions {
                main: Decision::Continue,
                urgent: Decision::Cancel,
            },
            "an urgent job that lost its label is cancelled"
        );
    }

    #[test]
    fn an_idle_prover_starts_urgent_work_first_and_never_two_urgent_jobs_at_once() {
        let (older, winning, second) = (created("older", 0), post("win", 5), post("win-2", 6));
        let idle = lanes(
            None,
            None,
            &[older.clone(), winning.clone(), second.clone()],
        );
        assert_eq!(
            idle,
            Decisions {
                main: Decision::Start(winning.clone()),
                urgent: Decision::Idle,
            }
        );
        let uid = winning.uid().unwrap();
        assert_eq!(
            lanes(Some(&uid), None, &[older, winning, second]),
            Decisions {
                main: Decision::Continue,
                urgent: Decision::Idle,
            },
            "urgent work goes beside long work only"
        );
    }

    #[test]
    fn a_prover_without_its_gpu_hands_back_what_it_holds_and_starts_nothing() {
        let (running, waiting, other) =
            (created("running", 1), created("waiting", 2), post("win", 3));
        let uid = running.uid().unwrap();
        let ended = HashSet::new();
        let assigned = [running.clone(), waiting.clone(), other.clone()];
        let (decisions, hand_back) = decide_without_gpu(
            Running {
                main: Some(&uid),
                urgent: None,
            },
            POD,
            &assigned,
            &ended,
        );
        assert_eq!(
            decisions,
            Decisions {
                main: Decision::HandBack,
                urgent: Decision::Idle,
            }
        );
        // Both waiting jobs, urgent work first; never the running one.
        assert_eq!(hand_back, [other.clone(), waiting.clone()]);

        // A running job the operator took away is cancelled, not handed back; an attempt
        // already handed back is not handed back again.
        let ended = HashSet::from([Attempt::of(&waiting).unwrap()]);
        let (decisions, hand_back) = decide_without_gpu(
            Running {
                main: Some(&uid),
                urgent: None,
            },
            POD,
            &[waiting, other.clone()],
            &ended,
        );
        assert_eq!(decisions.main, Decision::Cancel);
        assert_eq!(hand_back, [other]);
    }
}
