//! The ProverPool reconciler: read the pool's pods and jobs, let the pure cores decide, then
//! apply: prover RBAC, pods, assignments, status.

use std::collections::BTreeSet;
use std::sync::Arc;
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::ListParams;
use kube::runtime::controller::{self, Action};
use kube::runtime::reflector::{self, ObjectRef};
use kube::runtime::{Controller, WatchStreamExt, predicates, watcher};
use kube::{Api, Resource, ResourceExt};
use proofpipe_crds::{AutoscalingSpec, AutoscalingStatus, ProofJob, ProverPool};

use super::writes::{
    create_pod, delete_pod, remove_prover_entries, set_assigned_pod, set_job_status,
    set_pool_replicas, set_pool_status,
};
use super::{CONCURRENCY, Context, error_policy, events, log_outcome, namespace_of, succeeded};
use crate::assignment::{Assignment, assign, busy_pods, idle_ready_pods};
use crate::autoscale::{self, AutoscaleDecision, AutoscaleObservation, Demand, Policy};
use crate::error::{Error, KubeResultExt};
use crate::job_state::{JobObservation, decide};
use crate::metrics::Outcome;
use crate::names::{all_provers_selector, pool_selector};
use crate::pod_spec::{prover_pod, template_hash};
use crate::pool_status::{self, PoolObservation};
use crate::prover_pods::{PodHealth, ProverPod};
use crate::queue::{queue, remaining_partitions};
use crate::scaling::{PodPlan, plan};

/// How often a pool is reconciled with nothing changing, to pick up its provers' reports
/// (status writes, which do not trigger a reconcile) into `status.sizing`.
const RESYNC: Duration = Duration::from_secs(15);

pub(super) async fn run(context: Arc<Context>) {
    let (reader, writer) = reflector::store();
    // Reconcile on spec changes only: the pool's status is written by the operator itself and
    // by every daemon, and reacting to those writes would loop. Pods and jobs trigger
    // reconciles through the watches below; RESYNC picks up the daemons' reports.
    let pools = watcher(context.watched::<ProverPool>(), watcher::Config::default())
        .default_backoff()
        .reflect(writer)
        .applied_objects()
        .predicate_filter(predicates::generation, Default::default());
    Controller::for_stream(pools, reader)
        .owns(
            context.watched::<Pod>(),
            watcher::Config::default().labels(&all_provers_selector()),
        )
        .watches(
            context.watched::<ProofJob>(),
            watcher::Config::default(),
            |job| {
                let namespace = job.namespace()?;
                Some(ObjectRef::new(&job.spec.pool).within(&namespace))
            },
        )
        .with_config(controller::Config::default().concurrency(CONCURRENCY))
        .graceful_shutdown_on(context.stopping())
        .run(reconcile, error_policy, context)
        .for_each(log_outcome::<ProverPool, _>)
        .await;
}

async fn reconcile(pool: Arc<ProverPool>, context: Arc<Context>) -> Result<Action, Error> {
    let guard = context.metrics.reconcile("ProverPool");
    match reconcile_pool(&pool, &context).await {
        Ok((outcome, scale_down_due)) => {
            guard.finish(outcome);
            succeeded(&context, &*pool);
            // A pending scale-down is looked at again when its delay ends, not at the next
            // resync.
            let next =
                scale_down_due.map_or(RESYNC, |due| due.clamp(Duration::from_secs(1), RESYNC));
            Ok(Action::requeue(next))
        }
        Err(error) => {
            if error.is_conflict() {
                guard.finish(Outcome::Conflict);
            }
            Err(error)
        }
    }
}

/// Reconciles one pool; returns what it did, and how soon a pending scale-down is due.
async fn reconcile_pool(
    pool: &ProverPool,
    context: &Context,
) -> Result<(Outcome, Option<Duration>), Error> {
    let name = pool.name_any();
    let namespace = namespace_of(pool)?;
    let metrics_key = format!("{namespace}/{name}");
    if pool.meta().deletion_timestamp.is_some() {
        // Its pods go with it: they carry its controller ownerReference.
        context.metrics.forget_pool(&metrics_key);
        return Ok((Outcome::Unchanged, None));
    }
    context.apply_prover_rbac(&namespace).await?;

    let pods_api: Api<Pod> = context.namespaced(&namespace);
    let jobs_api: Api<ProofJob> = context.namespaced(&namespace);
    let pods = pods_api
        .list(&ListParams::default().labels(&pool_selector(&name)))
        .await
        .context(|| format!("listing the prover pods of ProverPool {namespace}/{name}"))?;
    let jobs: Vec<ProofJob> = jobs_api
        .list(&ListParams::default())
        .await
        .context(|| format!("listing the ProofJobs of namespace {namespace}"))?
        .items
        .into_iter()
        .filter(|job| job.spec.pool == name)
        .collect();
    let template_hash = template_hash(pool);
    let provers: Vec<ProverPod> = pods
        .iter()
        .map(|pod| ProverPod::observe(&name, pod, &template_hash))
        .collect();
    let busy = busy_pods(&jobs);
    let mut outcome = Outcome::Unchanged;
    let pools_api: Api<ProverPool> = context.namespaced(&namespace);
    let queue = queue(&name, &jobs);

    let mut scale_down_due = None;
    let (replicas, autoscaling) = match &pool.spec.autoscaling {
        None => (pool.spec.replicas, None),
        Some(spec) => {
            let decision = autoscale_decision(pool, spec, &provers, &busy, &queue);
            if let Some(change) = decision.change {
                let replicas = i32::try_from(decision.replicas).unwrap_or(i32::MAX);
                set_pool_replicas(&pools_api, pool, replicas).await?;
                tracing::info!(pool = %metrics_key, ?change, reason = %decision.reason, "autoscaled");
                context
                    .publish(
                        &pool.object_ref(&()),
                        events::autoscaled(change, &decision.reason),
                    )
                    .await;
                outcome = Outcome::Applied;
            }
            scale_down_due = decision.scale_down_in;
            let status = autoscaling_status(pool, &decision);
            (
                i32::try_from(decision.replicas).unwrap_or(i32::MAX),
                Some(status),
            )
        }
    };

    let pod_plan = plan(&name, replicas, &provers, &busy);
    if !pod_plan.is_empty() {
        apply_pod_plan(pool, replicas, &namespace, &pod_plan, context).await?;
        outcome = Outcome::Applied;
    }

    // Pods about to be deleted are not offered work.
    let offered: Vec<ProverPod> = provers
        .iter()
        .filter(|pod| !pod_plan.deletes(&pod.name))
        .cloned()
        .collect();
    let mut assigned = BTreeSet::new();
    for assignment in assign(&queue, &idle_ready_pods(&offered, &busy)) {
        match assign_job(&jobs_api, &assignment, context).await {
            Ok(()) => {
                assigned.insert(assignment.job.name_any());
                outcome = Outcome::Applied;
            }
            // The job changed since it was listed (another writer, a user's edit): it is
            // looked at again with its new version.
            Err(error) if error.is_conflict() => outcome = Outcome::Conflict,
            Err(error) => return Err(error),
        }
    }
    let still_queued: Vec<&ProofJob> = queue
        .iter()
        .filter(|job| !assigned.contains(&job.name_any()))
        .copied()
        .collect();
    context.metrics.set_queue_depth(
        &metrics_key,
        still_queued.len(),
        still_queued
            .iter()
            .map(|job| u64::try_from(remaining_partitions(job)).unwrap_or(0))
            .sum(),
    );

    let current = pool.status.clone().unwrap_or_default();
    let status_plan = pool_status::compute(&PoolObservation {
        name: &name,
        generation: pool.meta().generation,
        desired_replicas: replicas,
        template_hash: &template_hash,
        pods: &provers,
        busy: &busy,
        queue: &still_queued,
        current: &current,
        autoscaling,
        now: Timestamp::now(),
    });
    let status = &status_plan.status;
    context.metrics.set_outdated_provers(
        &metrics_key,
        usize::try_from(status.replicas.unwrap_or(0) - status.updated_replicas.unwrap_or(0))
            .unwrap_or(0),
    );
    if let Some(note) = status_plan.newly_unschedulable.clone() {
        tracing::warn!(pool = %metrics_key, "{note}");
        context
            .publish(&pool.object_ref(&()), events::unschedulable(note))
            .await;
    }
    if status_plan.status != pool_status::operator_fields(&current) {
        set_pool_status(&pools_api, pool, &status_plan.status).await?;
        outcome = Outcome::Applied;
    }
    if !status_plan.stale_provers.is_empty() {
        remove_prover_entries(&pools_api, pool, &status_plan.stale_provers).await?;
        outcome = Outcome::Applied;
    }
    Ok((outcome, scale_down_due))
}

/// The autoscaler's decision for `pool` from its pods' and jobs' state.
fn autoscale_decision(
    pool: &ProverPool,
    spec: &AutoscalingSpec,
    provers: &[ProverPod],
    busy: &BTreeSet<String>,
    queue: &[&ProofJob],
) -> AutoscaleDecision {
    let alive_busy = provers
        .iter()
        .filter(|pod| pod.health.is_alive() && busy.contains(&pod.name))
        .count();
    let demand = Demand {
        busy_provers: u32::try_from(alive_busy).unwrap_or(u32::MAX),
        queued_jobs: u32::try_from(queue.len()).unwrap_or(u32::MAX),
        queued_partitions: queue
            .iter()
            .map(|job| u64::try_from(remaining_partitions(job)).unwrap_or(0))
            .sum(),
    };
    let previous = pool.status.as_ref().and_then(|s| s.autoscaling.as_ref());
    autoscale::decide(&AutoscaleObservation {
        policy: Policy::from_spec(spec),
        replicas: u32::try_from(pool.spec.replicas).unwrap_or(0),
        demand,
        surplus_since: previous.and_then(|a| a.surplus_since.as_ref()).map(|t| t.0),
        now: Timestamp::now(),
    })
}

/// `status.autoscaling` for a decision: the scale time moves only when replicas changed.
fn autoscaling_status(pool: &ProverPool, decision: &AutoscaleDecision) -> AutoscalingStatus {
    let previous = pool.status.as_ref().and_then(|s| s.autoscaling.as_ref());
    let last_scale_time = if decision.change.is_some() {
        Some(Time(Timestamp::now()))
    } else {
        previous.and_then(|a| a.last_scale_time.clone())
    };
    AutoscalingStatus {
        desired_replicas: i32::try_from(decision.desired).unwrap_or(i32::MAX),
        reason: decision.reason.clone(),
        surplus_since: decision.surplus_since.map(Time),
        last_scale_time,
    }
}

/// One pod change of a [`PodPlan`].
#[derive(Clone, Copy)]
enum PodChange {
    Replace,
    ScaleDown,
    Roll,
    Create,
}

/// Creates and deletes pods as planned, with a `Scaled` Event for each pod saying why.
async fn apply_pod_plan(
    pool: &ProverPool,
    replicas: i32,
    namespace: &str,
    pod_plan: &PodPlan,
    context: &Context,
) -> Result<(), Error> {
    let api: Api<Pod> = context.namespaced(namespace);
    let pool_ref = pool.object_ref(&());
    let changes = (pod_plan.replace.iter().map(|pod| (PodChange::Replace, pod)))
        .chain(
            pod_plan
                .scale_down
                .iter()
                .map(|pod| (PodChange::ScaleDown, pod)),
        )
        .chain(pod_plan.roll.iter().map(|pod| (PodChange::Roll, pod)))
        .chain(pod_plan.create.iter().map(|pod| (PodChange::Create, pod)));
    for (change, pod) in changes {
        let pod_ref = events::pod_reference(Some(namespace), pod);
        let (note, event) = match change {
            PodChange::Replace => {
                delete_pod(&api, namespace, pod).await?;
                let note = format!("deleted terminated prover pod {pod} to replace it");
                (note.clone(), events::scaled("ReplacePod", note, pod_ref))
            }
            PodChange::ScaleDown => {
                delete_pod(&api, namespace, pod).await?;
                let note = format!(
                    "deleted prover pod {pod} to scale down to {replicas} (idle and not-ready pods go first)"
                );
                (note.clone(), events::scaled("DeletePod", note, pod_ref))
            }
            PodChange::Roll => {
                delete_pod(&api, namespace, pod).await?;
                let note = format!(
                    "deleted idle prover pod {pod} of an earlier template, to replace it from the current one"
                );
                (note.clone(), events::rolled(note, pod_ref))
            }
            PodChange::Create => {
                create_pod(&api, &prover_pod(pool, pod)).await?;
                let note = format!("created prover pod {pod}");
                (note.clone(), events::scaled("CreatePod", note, pod_ref))
            }
        };
        tracing::info!(pool = %format!("{namespace}/{}", pool.name_any()), "{note}");
        context.publish(&pool_ref, event).await;
    }
    Ok(())
}

/// Assigns a job: the label first, conditional on the job's resourceVersion (the write that
/// decides who wins), then the status, conditional on the version the label write returned.
/// If the status write loses a race, the job's own reconcile records the assignment from
/// the label.
async fn assign_job(
    api: &Api<ProofJob>,
    assignment: &Assignment<'_>,
    context: &Context,
) -> Result<(), Error> {
    let job = assignment.job;
    let pod = assignment.pod.name.as_str();
    let labelled = set_assigned_pod(api, job, Some(assignment.pod)).await?;
    let current = job.status.clone().unwrap_or_default();
    let decision = decide(&JobObservation {
        spec: &job.spec,
        generation: job.meta().generation,
        status: &current,
        pool_exists: true,
        assignment: Some((pod, Some(PodHealth::Ready))),
        termination: None,
        now: Timestamp::now(),
    });
    match set_job_status(api, &labelled, &decision.status).await {
        Err(error) if error.is_conflict() => {}
        result => drop(result?),
    }
    context.metrics.jobs_assigned.inc();
    let attempt = decision.status.attempts.unwrap_or(1);
    let pod_ref = events::pod_reference(labelled.namespace().as_deref(), pod);
    tracing::info!(job = %format!("{}/{}", job.namespace().unwrap_or_default(), job.name_any()), %pod, attempt, "assigned");
    context
        .publish(
            &labelled.object_ref(&()),
            events::assigned(pod, &job.spec.pool, attempt, pod_ref),
        )
        .await;
    Ok(())
}
