//! The ProverPool reconciler: read the pool's pods and jobs, let the pure cores decide, then
//! apply: prover RBAC, pods, assignments, status.

use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Pod, ServiceAccount};
use k8s_openapi::api::rbac::v1::{Role, RoleBinding};
use k8s_openapi::jiff::Timestamp;
use kube::runtime::controller::Action;
use kube::runtime::reflector::ObjectRef;
use kube::{Api, Resource, ResourceExt};
use proofpipe_crds::{ProofJob, ProverPool};

use crate::error::Error;
use crate::pool::assignment::Assignment;
use crate::pool::decision::{PoolInput, decide, queued_partitions};
use crate::pool::pod_spec::{prover_pod, template_hash};
use crate::pool::scaling::PodPlan;
use crate::pool::status as pool_status;
use crate::pool::{events, prover_rbac};
use crate::runtime::controller::{CONFLICT_RETRY, Context, namespace_of, succeeded};
use crate::runtime::events::pod_reference;
use crate::runtime::informers::Caches;
use crate::runtime::metrics::Outcome;
use crate::runtime::writes::{
    apply_object, create_pod, delete_pod, remove_prover_entries, set_assigned_pod,
    set_pool_replicas, set_pool_status,
};
use crate::shared::prover_pods::ProverPod;

/// Assignment writes of one pool reconcile in flight at once.
const ASSIGN_CONCURRENCY: usize = 16;

/// Reconciles one ProverPool. Triggered by spec changes of the pool, changes of its pods,
/// and the changes of its jobs that concern it (crate::runtime::triggers); its provers'
/// reports, which are status writes, are picked up by the periodic requeue.
pub(crate) async fn reconcile(
    pool: Arc<ProverPool>,
    context: Arc<Context>,
) -> Result<Action, Error> {
    let guard = context.metrics.reconcile("ProverPool");
    match reconcile_pool(&pool, &context).await {
        Ok((outcome, requeue_after)) => {
            guard.finish(outcome);
            succeeded(&context, &*pool);
            // An assignment that lost a race (the job changed meanwhile, often by its own
            // reconcile) is decided again soon, not at the next resync: the job's change may
            // be one that does not concern the pool, and so triggers nothing.
            if outcome == Outcome::Conflict {
                return Ok(Action::requeue(requeue_after.min(CONFLICT_RETRY)));
            }
            Ok(Action::requeue(requeue_after))
        }
        Err(error) => {
            if error.is_conflict() {
                guard.finish(Outcome::Conflict);
            }
            Err(error)
        }
    }
}

/// Reconciles one pool: observe (caches), decide (pure), apply; returns what it did and when
/// to look again.
async fn reconcile_pool(
    pool: &ProverPool,
    context: &Context,
) -> Result<(Outcome, std::time::Duration), Error> {
    let name = pool.name_any();
    let namespace = namespace_of(pool)?;
    if pool.meta().deletion_timestamp.is_some() {
        // Its pods go with it: they carry its controller ownerReference.
        context.metrics.forget_pool(&namespace, &name);
        return Ok((Outcome::Unchanged, crate::pool::decision::RESYNC));
    }
    apply_prover_rbac_once(context, &namespace).await?;

    let caches = &context.caches;
    let pods = caches.pods_of_pool(&namespace, &name);
    let jobs = caches.jobs_of_pool(&namespace, &name);
    let hash = template_hash(pool);
    let provers: Vec<ProverPod> = pods
        .iter()
        .map(|pod| ProverPod::observe(&name, pod, &hash))
        .collect();
    let decision = decide(&PoolInput {
        pool,
        provers: &provers,
        template_hash: &hash,
        jobs: &jobs,
        now: Timestamp::now(),
    });

    tracing::debug!(
        pool = %format!("{namespace}/{name}"),
        pods = pods.len(),
        jobs = jobs.len(),
        queued = decision.still_queued.len() + decision.assignments.len(),
        assignments = decision.assignments.len(),
        "decided"
    );
    let mut outcome = Outcome::Unchanged;
    let pools_api: Api<ProverPool> = context.namespaced(&namespace);
    let pool_key = format!("{namespace}/{name}");
    if let Some(autoscale) = &decision.autoscale
        && let Some(change) = autoscale.change
    {
        set_pool_replicas(&pools_api, pool, decision.replicas).await?;
        tracing::info!(pool = %pool_key, ?change, reason = %autoscale.reason, "autoscaled");
        context
            .publish(
                &pool.object_ref(&()),
                events::autoscaled(change, &autoscale.reason),
            )
            .await;
        outcome = Outcome::Applied;
    }
    if !decision.pod_plan.is_empty() {
        apply_pod_plan(
            pool,
            decision.replicas,
            &namespace,
            &decision.pod_plan,
            context,
        )
        .await?;
        outcome = Outcome::Applied;
    }
    let jobs_api: Api<ProofJob> = context.namespaced(&namespace);
    let mut lost_race = false;
    // Independent writes (one job each): a pool of hundreds of idle provers fills in one
    // round trip per batch, not one per job.
    let writes: Vec<_> = (decision.assignments.iter())
        .map(|a| assign_job(&jobs_api, a))
        .collect();
    let results: Vec<Result<(), Error>> = futures::stream::iter(writes)
        .buffer_unordered(ASSIGN_CONCURRENCY)
        .collect()
        .await;
    for result in results {
        match result {
            Ok(()) => outcome = Outcome::Applied,
            // The job changed since it was cached (another writer, a user's edit): it is
            // looked at again with its new version.
            Err(error) if error.is_conflict() => lost_race = true,
            Err(error) => return Err(error),
        }
    }
    if outcome == Outcome::Applied {
        // The next reconcile must count the newly assigned pods as busy.
        Caches::settle(&caches.jobs, |store| {
            (decision.assignments.iter()).all(|a| Caches::moved_past(store, a.job))
        })
        .await;
    }
    context.metrics.set_queue_depth(
        &namespace,
        &name,
        decision.still_queued.len(),
        queued_partitions(&decision.still_queued),
    );

    let current = pool.status.clone().unwrap_or_default();
    let status = &decision.status.status;
    context.metrics.set_outdated_provers(
        &namespace,
        &name,
        usize::try_from(status.replicas.unwrap_or(0) - status.updated_replicas.unwrap_or(0))
            .unwrap_or(0),
    );
    context
        .metrics
        .set_ready_provers(&namespace, &name, status.ready_replicas.unwrap_or(0));
    context.metrics.pool_seen(&namespace, &name);
    if let Some(note) = decision.status.newly_unschedulable.clone() {
        tracing::warn!(pool = %pool_key, "{note}");
        context
            .publish(&pool.object_ref(&()), events::unschedulable(note))
            .await;
    }
    if let Some(note) = decision.status.newly_waiting_for_quota.clone() {
        tracing::info!(pool = %pool_key, "{note}");
        context
            .publish(&pool.object_ref(&()), events::waiting_for_quota(note))
            .await;
    }
    let mut wrote_pool = false;
    if *status != pool_status::operator_fields(&current) {
        set_pool_status(&pools_api, pool, status).await?;
        wrote_pool = true;
    }
    if !decision.status.stale_provers.is_empty() {
        remove_prover_entries(&pools_api, pool, &decision.status.stale_provers).await?;
        wrote_pool = true;
    }
    if lost_race {
        outcome = Outcome::Conflict;
    } else if wrote_pool {
        outcome = Outcome::Applied;
    }
    if wrote_pool {
        // The next reconcile must compare with what was just written, not rewrite it.
        Caches::settle(&caches.pools, |store| Caches::moved_past(store, pool)).await;
    }
    Ok((outcome, decision.requeue_after))
}

/// Applies the prover ServiceAccount, Role and RoleBinding of `namespace` once per process:
/// they are the operator's alone (server-side apply with force), so re-applying them on every
/// reconcile would only add load. A user who deletes them gets them back at the operator's
/// next start.
async fn apply_prover_rbac_once(context: &Context, namespace: &str) -> Result<(), Error> {
    if (context.rbac_applied.lock())
        .expect("never poisoned")
        .contains(namespace)
    {
        return Ok(());
    }
    apply_object(
        &context.namespaced::<ServiceAccount>(namespace),
        &prover_rbac::service_account(namespace),
    )
    .await?;
    apply_object(
        &context.namespaced::<Role>(namespace),
        &prover_rbac::role(namespace),
    )
    .await?;
    apply_object(
        &context.namespaced::<RoleBinding>(namespace),
        &prover_rbac::role_binding(namespace),
    )
    .await?;
    (context.rbac_applied.lock())
        .expect("never poisoned")
        .insert(namespace.to_owned());
    Ok(())
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
        let pod_ref = pod_reference(Some(namespace), pod);
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
    // The next reconcile must see these pods (or their absence), or it would plan them again.
    Caches::settle(&context.caches.pods, |store| {
        let cached = |pod: &str| store.get(&ObjectRef::new(pod).within(namespace));
        pod_plan.create.iter().all(|pod| cached(pod).is_some())
            && (pod_plan.replace.iter())
                .chain(&pod_plan.scale_down)
                .chain(&pod_plan.roll)
                .all(|pod| cached(pod).is_none_or(|p| p.metadata.deletion_timestamp.is_some()))
    })
    .await;
    Ok(())
}

/// Assigns a job: writes the assigned-pod label, conditional on the job's resourceVersion
/// (the write that decides who wins). The job's own reconcile records the assignment in its
/// status (it is the one writer of the job's status fields) and publishes the Event.
async fn assign_job(api: &Api<ProofJob>, assignment: &Assignment<'_>) -> Result<(), Error> {
    let job = assignment.job;
    set_assigned_pod(api, job, Some(assignment.pod)).await?;
    tracing::debug!(job = %format!("{}/{}", job.namespace().unwrap_or_default(), job.name_any()), pod = %assignment.pod.name, "assigned");
    Ok(())
}
