//! The whole product on one API server: the CRDs, `proofpipe-operator run` as a child
//! process, and the pod runner starting `proofpipe-prover` for every prover pod.

use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, DynamicObject};
use kube::runtime::watcher;
use proofpipe_crds::{ASSIGNED_POD_LABEL, ProofJob, ProofJobPhase};
use tokio::task::JoinHandle;

use crate::assignments::{AssignmentLog, JobState};
use crate::binaries::binary;
use crate::cluster::TestNamespace;
use crate::fixtures;
use crate::operator::OperatorProcess;
use crate::runner::{ImageMap, PodRunner};
use crate::wait::eventually;

/// How long a scenario waits for any one state: proving is slow in debug builds and the two
/// cores are shared by the operator, two provers and the API server.
pub const TIMEOUT: Duration = Duration::from_secs(120);

/// One scenario's namespace, operator and pod runner.
pub struct Stack {
    /// The scenario's namespace and client.
    pub namespace: TestNamespace,
    /// The kubelet stand-in running the prover pods.
    pub runner: PodRunner,
    operator: OperatorProcess,
    operator_binary: PathBuf,
    // Last: the operator's log and the parameters outlive the processes using them.
    work: tempfile::TempDir,
}

impl Stack {
    /// Starts everything in a fresh namespace; `None` (the test is skipped) without
    /// `KUBECONFIG`. Panics when the binaries are not built.
    pub async fn start(test: &str) -> Option<Self> {
        let namespace = TestNamespace::create(test).await?;
        let operator_binary = binary("proofpipe-operator");
        let images = ImageMap::new().with_prefix(
            "proofpipe-prover",
            [binary("proofpipe-prover").display().to_string()],
        );
        let runner = PodRunner::start(namespace.client.clone(), &namespace.name, images).await;
        let work = tempfile::Builder::new()
            .prefix("proofpipe-e2e-")
            .tempdir()
            .expect("create the scenario's directory");
        std::fs::create_dir(work.path().join("params")).expect("create the params directory");
        let operator = OperatorProcess::start(
            &operator_binary,
            &namespace.name,
            &work.path().join("operator.log"),
        );
        Some(Self {
            namespace,
            runner,
            operator,
            operator_binary,
            work,
        })
    }

    /// Applies the objects of fixture `name`. ProverPools get `PROOFPIPE_PARAMS_DIR` in their
    /// prover container's env, so the scenario's provers generate each circuit's parameters
    /// once.
    pub async fn apply(&self, name: &str) {
        let mut objects = fixtures::load(name);
        let params_dir = self.work.path().join("params").display().to_string();
        for object in &mut objects {
            if object
                .types
                .as_ref()
                .is_some_and(|t| t.kind == "ProverPool")
            {
                add_template_env(object, "PROOFPIPE_PARAMS_DIR", &params_dir);
            }
        }
        self.namespace.apply(&objects).await;
    }

    /// Where the scenario's provers keep the synthetic circuits' parameters (the
    /// `PROOFPIPE_PARAMS_DIR` that [`Stack::apply`] gives pools).
    pub fn params_dir(&self) -> PathBuf {
        self.work.path().join("params")
    }

    /// Verifies `job`'s proofs with the parameters the scenario's provers used, without
    /// trusting their `verified` flags.
    pub fn verify_proofs(&self, job: &ProofJob) -> Result<(), String> {
        crate::verify::verify_job_proofs(job, &self.work.path().join("params"))
    }

    /// SIGKILLs the operator and starts a new one, as a crash and a restart would.
    pub fn restart_operator(&mut self) {
        self.operator.kill();
        self.operator = OperatorProcess::start(
            &self.operator_binary,
            &self.namespace.name,
            &self.work.path().join("operator.log"),
        );
    }

    /// Polls `check` for up to [`TIMEOUT`]; on timeout the test fails with the operator's and
    /// the pods' logs.
    pub async fn wait_for<T, F, Fut>(&mut self, what: &str, check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, String>>,
    {
        self.wait_within(what, TIMEOUT, check).await
    }

    /// [`Stack::wait_for`] with a timeout of its own, for work slower than [`TIMEOUT`].
    pub async fn wait_within<T, F, Fut>(&mut self, what: &str, timeout: Duration, check: F) -> T
    where
        F: FnMut() -> Fut,
        Fut: Future<Output = Result<T, String>>,
    {
        match eventually(what, timeout, check).await {
            Ok(value) => value,
            Err(err) => panic!("{err}\n{}", self.diagnostics()),
        }
    }

    /// The operator's exit status if it died, and the tails of its and the pods' logs.
    pub fn diagnostics(&mut self) -> String {
        let exited = match self.operator.exited() {
            Some(status) => format!("the operator EXITED: {status}\n"),
            None => String::new(),
        };
        format!(
            "{exited}===== operator log (tail)\n{}\n===== pod logs (tails)\n{}",
            self.operator.log_tail(60),
            self.runner.log_tails(30)
        )
    }

    /// The ProofJobs of the scenario.
    pub fn jobs(&self) -> Api<ProofJob> {
        self.namespace.api()
    }

    /// Records every ProofJob change from now on into an [`AssignmentLog`].
    pub fn record_assignments(&self) -> AssignmentRecorder {
        let log = Arc::new(Mutex::new(AssignmentLog::default()));
        let task = tokio::spawn(record(self.jobs(), log.clone()));
        AssignmentRecorder { log, task }
    }
}

/// A watch on ProofJobs feeding an [`AssignmentLog`]; stops when dropped.
pub struct AssignmentRecorder {
    log: Arc<Mutex<AssignmentLog>>,
    task: JoinHandle<()>,
}

impl AssignmentRecorder {
    /// Runs `f` on the log as recorded so far.
    pub fn with_log<T>(&self, f: impl FnOnce(&AssignmentLog) -> T) -> T {
        f(&self.log.lock().expect("assignment log lock"))
    }
}

impl Drop for AssignmentRecorder {
    fn drop(&mut self) {
        self.task.abort();
    }
}

async fn record(api: Api<ProofJob>, log: Arc<Mutex<AssignmentLog>>) {
    let mut events = watcher(api, watcher::Config::default()).boxed();
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Apply(job) | watcher::Event::InitApply(job)) => {
                let state = JobState {
                    assigned_pod: job.labels().get(ASSIGNED_POD_LABEL).cloned(),
                    finished: phase(&job).is_some_and(ProofJobPhase::is_finished),
                };
                log.lock()
                    .expect("assignment log lock")
                    .observe(&job.name_any(), state);
            }
            Ok(watcher::Event::Delete(job)) => {
                log.lock()
                    .expect("assignment log lock")
                    .forget(&job.name_any());
            }
            Ok(watcher::Event::Init | watcher::Event::InitDone) => {}
            Err(err) => eprintln!("assignment recorder: watch error: {err}"),
        }
    }
}

/// The pods of `pods` not being deleted.
pub async fn live_pods(pods: &Api<Pod>) -> Result<Vec<Pod>, String> {
    let list = pods
        .list(&Default::default())
        .await
        .map_err(|e| e.to_string())?;
    Ok(list
        .items
        .into_iter()
        .filter(|pod| pod.metadata.deletion_timestamp.is_none())
        .collect())
}

/// A job's phase, if it has one yet.
pub fn phase(job: &ProofJob) -> Option<ProofJobPhase> {
    job.status.as_ref().and_then(|status| status.phase)
}

/// Appends `name=value` to the env of a ProverPool's prover container (the one named
/// `prover` in `spec.template.spec.containers`).
fn add_template_env(pool: &mut DynamicObject, name: &str, value: &str) {
    let containers = pool.data["spec"]["template"]["spec"]["containers"]
        .as_array_mut()
        .expect("a ProverPool fixture has containers");
    let prover = containers
        .iter_mut()
        .find(|c| c["name"] == proofpipe_crds::PROVER_CONTAINER)
        .expect("a ProverPool fixture has the prover container");
    let entry = serde_json::json!({ "name": name, "value": value });
    match prover["env"].as_array_mut() {
        Some(env) => env.push(entry),
        None => prover["env"] = serde_json::json!([entry]),
    }
}

/// `Ok` when there are `count` jobs and each passes [`check_succeeded`]; else what is wrong.
pub fn check_all_succeeded(jobs: &[ProofJob], count: usize) -> Result<(), String> {
    let problems: Vec<String> = jobs
        .iter()
        .filter_map(|job| check_succeeded(job).err())
        .collect();
    if jobs.len() == count && problems.is_empty() {
        Ok(())
    } else {
        Err(format!(
            "{} of {count} jobs; {}",
            jobs.len(),
            problems.join("\n")
        ))
    }
}

/// What is wrong with a job that should have Succeeded with a verified proof per partition,
/// proved by pods named `<pool>-prover-<n>`; `Ok` when nothing is.
/// The pool's condition of `type_`, if it has one.
pub fn pool_condition(
    status: &proofpipe_crds::ProverPoolStatus,
    type_: &str,
) -> Option<k8s_openapi::apimachinery::pkg::apis::meta::v1::Condition> {
    status
        .conditions
        .iter()
        .flatten()
        .find(|c| c.type_ == type_)
        .cloned()
}

pub fn check_succeeded(job: &ProofJob) -> Result<(), String> {
    let name = job.name_any();
    let status = job.status.as_ref().ok_or(format!("{name}: no status"))?;
    let total = job.spec.partition_count();
    let mut problems = Vec::new();
    if status.phase != Some(ProofJobPhase::Succeeded) {
        problems.push(format!("phase {:?}", status.phase));
    }
    if status.partitions_total != Some(total) || status.partitions_done != Some(total) {
        problems.push(format!(
            "partitionsDone/Total {:?}/{:?}, want {total}/{total}",
            status.partitions_done, status.partitions_total
        ));
    }
    if status.progress.as_deref() != Some(format!("{total}/{total}").as_str()) {
        problems.push(format!("progress {:?}", status.progress));
    }
    let pod_prefix = format!("{}-prover-", job.spec.pool);
    if !status
        .pod
        .as_deref()
        .is_some_and(|pod| pod.starts_with(&pod_prefix))
    {
        problems.push(format!("pod {:?}", status.pod));
    }
    if status.attempts.unwrap_or(0) < 1
        || status.start_time.is_none()
        || status.completion_time.is_none()
    {
        problems.push(format!(
            "attempts {:?}, startTime {:?}, completionTime {:?}",
            status.attempts, status.start_time, status.completion_time
        ));
    }
    let complete = status
        .conditions
        .iter()
        .flatten()
        .any(|c| c.type_ == "Complete" && c.status == "True");
    if !complete {
        problems.push("no Complete=True condition".into());
    }
    let proofs = status.proofs.as_deref().unwrap_or_default();
    let partitions: Vec<i32> = proofs.iter().map(|p| p.partition).collect();
    if partitions
        .iter()
        .copied()
        .collect::<std::collections::BTreeSet<_>>()
        != (0..total).collect()
        || partitions.len() != total as usize
    {
        problems.push(format!("proofs for partitions {partitions:?}"));
    }
    for proof in proofs {
        // A compressed BLS12-381 Groth16 proof is 192 bytes: 256 base64 characters.
        let well_formed = proof.proof.len() == 256
            && proof
                .proof
                .bytes()
                .all(|b| b.is_ascii_alphanumeric() || b == b'+' || b == b'/' || b == b'=');
        if !proof.verified
            || !well_formed
            || proof.public_inputs.is_empty()
            || !proof.proved_by.starts_with(&pod_prefix)
        {
            problems.push(format!(
                "partition {}: verified {}, {} base64 chars, {} public inputs, provedBy {:?}",
                proof.partition,
                proof.verified,
                proof.proof.len(),
                proof.public_inputs.len(),
                proof.proved_by
            ));
        }
    }
    if problems.is_empty() {
        Ok(())
    } else {
        Err(format!("{name}: {}", problems.join("; ")))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn succeeded_job() -> serde_json::Value {
        let proof = |partition: i32| {
            serde_json::json!({
                "partition": partition, "proof": "A".repeat(256), "verified": true,
                "publicInputs": ["0x01"], "provedBy": "gpu-prover-1",
            })
        };
        serde_json::json!({
            "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProofJob",
            "metadata": { "name": "j" },
            "spec": { "pool": "gpu", "circuit": "mul-chain", "constraints": 1024, "partitions": 2 },
            "status": {
                "phase": "Succeeded", "pod": "gpu-prover-1", "attempts": 1,
                "partitionsDone": 2, "partitionsTotal": 2, "progress": "2/2",
                "startTime": "2026-01-01T00:00:00Z", "completionTime": "2026-01-01T00:01:00Z",
                "conditions": [{ "type": "Complete", "status": "True", "reason": "Proved",
                                 "message": "", "lastTransitionTime": "2026-01-01T00:01:00Z" }],
                "proofs": [proof(0), proof(1)],
            },
        })
    }

    fn job(value: serde_json::Value) -> ProofJob {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn a_complete_job_passes() {
        assert_eq!(check_succeeded(&job(succeeded_job())), Ok(()));
    }

    #[test]
    fn each_gap_is_named() {
        let mut value = succeeded_job();
        value["status"]["progress"] = "1/2".into();
        value["status"]["proofs"][1]["verified"] = false.into();
        value["status"]["proofs"].as_array_mut().unwrap().remove(0);
        let err = check_succeeded(&job(value)).unwrap_err();
        assert!(err.contains("progress Some(\"1/2\")"), "{err}");
        assert!(err.contains("proofs for partitions [1]"), "{err}");
        assert!(err.contains("partition 1: verified false"), "{err}");
    }

    #[test]
    fn template_env_is_appended_or_created() {
        let mut pool: DynamicObject = serde_json::from_value(serde_json::json!({
            "apiVersion": "proofpipe.dev/v1alpha1", "kind": "ProverPool",
            "metadata": { "name": "gpu" }, "spec": { "template": { "spec": { "containers": [
                { "name": "sidecar", "image": "s" },
                { "name": "prover", "image": "x" },
            ] } } },
        }))
        .unwrap();
        add_template_env(&mut pool, "A", "1");
        add_template_env(&mut pool, "B", "2");
        let containers = &pool.data["spec"]["template"]["spec"]["containers"];
        assert!(containers[0].get("env").is_none());
        assert_eq!(
            containers[1]["env"],
            serde_json::json!([{ "name": "A", "value": "1" }, { "name": "B", "value": "2" }])
        );
    }
}
