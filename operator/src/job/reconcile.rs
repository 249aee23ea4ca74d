//! The ProofJob reconciler: observe the job's pool and assigned pod, let
//! [`crate::job::state`] decide, then apply: label, status, deletion, Events. A job being
//! deleted is unassigned, which also drops its finalizer.

use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource, ResourceExt};
use proofpipe_crds::ProofJob;
use proofpipe_model::sizing::Fit;

use crate::error::Error;
use crate::job::events;
use crate::job::state::{JobEvent, JobObservation, ProverProgress, decide, operator_fields};
use crate::names::{ASSIGNED_POD_LABEL, ASSIGNED_POD_UID_ANNOTATION, FINALIZER};
use crate::runtime::controller::{Context, namespace_of, succeeded};
use crate::runtime::informers::Caches;
use crate::runtime::metrics::Outcome;
use crate::runtime::writes::{delete_job, remove_finalizer, set_assigned_pod, set_job_status};
use crate::shared::prover_pods::{assigned_pod_health, termination as termination_of};
use proofpipe_crds::fit::ProverLimits;

/// Reconciles one ProofJob. Every change of the job triggers it (the daemons' proofs arrive
/// as status writes, and each one may complete the job), as do changes of its pod and the
/// appearance or removal of its pool: the informers decide (crate::runtime::triggers).
pub(crate) async fn reconcile(job: Arc<ProofJob>, context: Arc<Context>) -> Result<Action, Error> {
    let guard = context.metrics.reconcile("ProofJob");
    let namespace = namespace_of(&*job)?;
    let api: Api<ProofJob> = context.namespaced(&namespace);
    let wrote = AtomicBool::new(false);
    let result = if job.meta().deletion_timestamp.is_some() {
        cleanup(&job, &api, &wrote).await
    } else {
        apply(&job, &namespace, &context, &wrote).await
    };
    if result.is_ok() && wrote.load(Ordering::Relaxed) {
        // The next reconcile of this job must not decide from the version before the write.
        Caches::settle(&context.caches.jobs, |store| {
            Caches::moved_past(store, &*job)
        })
        .await;
    }
    match &result {
        Ok(_) => {
            guard.finish(if wrote.load(Ordering::Relaxed) {
                Outcome::Applied
            } else {
                Outcome::Unchanged
            });
            succeeded(&context, &*job);
        }
        Err(error) if error.is_conflict() => guard.finish(Outcome::Conflict),
        Err(_) => {}
    }
    result
}

async fn apply(
    job: &ProofJob,
    namespace: &str,
    context: &Context,
    wrote: &AtomicBool,
) -> Result<Action, Error> {
    let name = job.name_any();
    let caches = &context.caches;
    let pool = caches
        .pools
        .get(&ObjectRef::new(&job.spec.pool).within(namespace));
    let pool_exists = pool.is_some();
    let does_not_fit =
        pool.as_deref()
            .and_then(|pool| match ProverLimits::of(pool).fit(&job.spec) {
                Fit::TooLarge(too_large) => Some(too_large.to_string()),
                Fit::Fits | Fit::Unknown => None,
            });
    let assigned_pod = job.labels().get(ASSIGNED_POD_LABEL).cloned();
    let mut termination = None;
    let pod_health = match &assigned_pod {
        Some(pod) => {
            let found = caches.pods.get(&ObjectRef::new(pod).within(namespace));
            let assigned_uid = job.annotations().get(ASSIGNED_POD_UID_ANNOTATION);
            let health = assigned_pod_health(found.as_deref(), assigned_uid.map(String::as_str));
            if health.is_some() {
                // Read before the pool replaces the pod: it keeps a terminated pod until
                // its job has been requeued.
                termination = found.as_deref().and_then(termination_of);
            }
            health
        }
        None => None,
    };
    let current = job.status.clone().unwrap_or_default();
    // The assigned prover's heartbeat, from its entry of the pool's status.
    let entry = assigned_pod.as_deref().and_then(|pod| {
        pool.as_deref()?
            .status
            .as_ref()?
            .provers
            .as_ref()?
            .iter()
            .find(|entry| entry.pod == pod && entry.current_job.as_deref() == Some(name.as_str()))
            .cloned()
    });
    let progress = entry.as_ref().and_then(|entry| {
        Some(ProverProgress {
            stage: entry.stage.as_deref()?,
            last_progress: entry.last_progress_time.as_ref()?.0,
            deadline: Duration::from_secs(
                pool.as_deref()?
                    .spec
                    .progress_deadline_seconds
                    .unsigned_abs()
                    .into(),
            ),
        })
    });
    let decision = decide(&JobObservation {
        spec: &job.spec,
        generation: job.meta().generation,
        status: &current,
        pool_exists,
        does_not_fit,
        assignment: assigned_pod.as_deref().map(|pod| (pod, pod_health)),
        termination: termination.as_deref(),
        progress,
        retry_delay: context.retry_delay,
        now: Timestamp::now(),
    });

    let api: Api<ProofJob> = context.namespaced(namespace);
    let finishing = decision
        .status
        .phase
        .is_some_and(|phase| phase.is_finished());
    let mut latest = job.clone();
    // Write order matters if the operator stops between two writes. A job leaving its pod
    // for the queue loses the label first: a label left behind would look like a new
    // assignment and count an attempt. A job failing records Failed first: without the
    // status, a removed label would send it back to the queue for another attempt.
    if decision.unassign && !finishing {
        latest = set_assigned_pod(&api, &latest, None).await?;
        wrote.store(true, Ordering::Relaxed);
    }
    if decision.status != operator_fields(&current) {
        latest = set_job_status(&api, &latest, &decision.status).await?;
        wrote.store(true, Ordering::Relaxed);
    }
    if decision.unassign && finishing {
        latest = set_assigned_pod(&api, &latest, None).await?;
        wrote.store(true, Ordering::Relaxed);
    }
    if let Some(event) = &decision.event {
        observe(context, job, event, &latest);
        tracing::info!(job = %format!("{namespace}/{name}"), ?event, "job changed");
        context
            .publish(&latest.object_ref(&()), events::job_event(event, namespace))
            .await;
    }
    if decision.delete {
        tracing::info!(job = %format!("{namespace}/{name}"), "ttlSecondsAfterFinished passed; deleting");
        delete_job(&api, &latest).await?;
        wrote.store(true, Ordering::Relaxed);
    }
    Ok(decision
        .requeue_after
        .map_or_else(Action::await_change, Action::requeue))
}

/// The job is being deleted: take it off its pod so that the daemon cancels it, which lets
/// the finalizer go in the same write (it is set with the assignment: ADR 0029). Its proofs
/// go with it.
async fn cleanup(job: &ProofJob, api: &Api<ProofJob>, wrote: &AtomicBool) -> Result<Action, Error> {
    let mut latest = job.clone();
    if job.labels().contains_key(ASSIGNED_POD_LABEL) || has_finalizer(job) {
        latest = match set_assigned_pod(api, job, None).await {
            // The finalizer was the last one: the job is gone.
            Err(Error::Kube {
                source: kube::Error::Api(status),
                ..
            }) if status.is_not_found() => return Ok(Action::await_change()),
            result => result?,
        };
        wrote.store(true, Ordering::Relaxed);
    }
    // A finalizer another field manager added (an operator before ADR 0029) stays after
    // the apply: remove it by name.
    if has_finalizer(&latest) {
        remove_finalizer(api, &latest).await?;
        wrote.store(true, Ordering::Relaxed);
    }
    Ok(Action::await_change())
}

fn has_finalizer(job: &ProofJob) -> bool {
    job.finalizers().iter().any(|f| f == FINALIZER)
}

/// The metrics a job's transition feeds.
fn observe(context: &Context, job: &ProofJob, event: &JobEvent, latest: &ProofJob) {
    let metrics = &context.metrics;
    let namespace = job.namespace().unwrap_or_default();
    let pool = job.spec.pool.as_str();
    let age = || {
        let created = job.metadata.creation_timestamp.as_ref()?.0;
        let seconds = (Timestamp::now() - created)
            .total(k8s_openapi::jiff::Unit::Second)
            .ok()?;
        Some(seconds.max(0.0))
    };
    match event {
        JobEvent::Assigned { attempt, .. } => {
            metrics.jobs_assigned.inc();
            if *attempt == 1
                && let Some(waited) = age()
            {
                metrics
                    .queue_wait
                    .with_label_values(&[&namespace, pool])
                    .observe(waited);
            }
        }
        JobEvent::Requeued { .. } => metrics.jobs_requeued.inc(),
        JobEvent::Succeeded { .. } | JobEvent::Failed { .. } => {
            let phase = latest
                .status
                .as_ref()
                .and_then(|status| status.phase)
                .map_or("Unknown", |phase| phase.as_str());
            if let Some(took) = age() {
                metrics
                    .time_to_proof
                    .with_label_values(&[&namespace, pool, phase])
                    .observe(took);
            }
        }
        JobEvent::Suspended { .. } | JobEvent::Stalled { .. } | JobEvent::Held { .. } => {}
    }
}
