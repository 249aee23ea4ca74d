//! [`PodRunner`] plays the kubelet for an API server that has none: it watches the Pods of
//! one namespace, binds each new one, starts its container as a local process inside a memory
//! cgroup holding the pod's limit, and writes the pod's status as the process starts and ends.
//! Deleting a pod stops its process. A pod with scheduling gates (Kueue's) is left Pending
//! as `SchedulingGated`, as the scheduler leaves it, until an update removes its last gate.
//!
//! What it does not emulate: images (an [`ImageMap`] names a local program per image),
//! restarts (a container that exits ends its pod, as with `restartPolicy: Never`), probes
//! (a started container is Ready at once), volumes, ports and network isolation (every pod is
//! `127.0.0.1`), in-cluster credentials (the process gets the host's `KUBECONFIG` instead).

use std::collections::{HashMap, HashSet};
use std::path::{Path, PathBuf};
use std::sync::{Arc, Mutex};
use std::time::Duration;

use futures::StreamExt;
use k8s_openapi::api::core::v1::{Container, Pod, PodStatus};
use k8s_openapi::apimachinery::pkg::apis::meta::v1::Time;
use k8s_openapi::jiff::Timestamp;
use kube::api::{Api, DeleteParams, Patch, PatchParams};
use kube::runtime::watcher;
use kube::{Client, ResourceExt};
use tokio::sync::Notify;
use tokio::task::JoinHandle;

use crate::cgroup::{PodCgroup, RunnerCgroup};
use crate::env::resolve_env;
use crate::process::{Launch, exit_code, signal_group, spawn};
use crate::quantity::parse_bytes;
use crate::status::{self, ContainerRef, Exit};

/// The node every pod is bound to.
pub const NODE_NAME: &str = "testenv-node";

/// The field manager of the runner's writes.
const FIELD_MANAGER: &str = "proofpipe-e2e-pod-runner";

/// Host variables passed to every container, standing in for what a kubelet injects: the
/// API server's address and credentials (here `KUBECONFIG`), a `PATH`, and log settings.
const HOST_ENV: &[&str] = &["PATH", "KUBECONFIG", "RUST_LOG", "RUST_BACKTRACE"];

/// Which local program stands in for which container image.
#[derive(Clone, Debug, Default)]
pub struct ImageMap {
    rules: Vec<(String, Vec<String>)>,
}

impl ImageMap {
    /// No images mapped.
    pub fn new() -> Self {
        Self::default()
    }

    /// Images starting with `prefix` run `entrypoint` (a program and its leading arguments),
    /// as an image's ENTRYPOINT. Earlier rules win.
    pub fn with_prefix<S: Into<String>>(
        mut self,
        prefix: impl Into<String>,
        entrypoint: impl IntoIterator<Item = S>,
    ) -> Self {
        let entrypoint = entrypoint.into_iter().map(Into::into).collect();
        self.rules.push((prefix.into(), entrypoint));
        self
    }

    /// The entrypoint of `image`, if it is mapped.
    pub fn entrypoint(&self, image: &str) -> Option<&[String]> {
        self.rules
            .iter()
            .find(|(prefix, _)| image.starts_with(prefix.as_str()))
            .map(|(_, entrypoint)| entrypoint.as_slice())
    }
}

/// The command line of a container: `command` replaces the image's entrypoint, `args` follow.
pub fn container_argv(container: &Container, entrypoint: &[String]) -> Vec<String> {
    let mut argv = match &container.command {
        Some(command) if !command.is_empty() => command.clone(),
        _ => entrypoint.to_vec(),
    };
    argv.extend(container.args.iter().flatten().cloned());
    argv
}

/// The kubelet stand-in of one namespace. Dropping it kills every process it started.
pub struct PodRunner {
    shared: Arc<Shared>,
    watch: JoinHandle<()>,
}

struct Shared {
    pods_api: Api<Pod>,
    images: ImageMap,
    host_env: Vec<(String, String)>,
    grace_period: Duration,
    node_memory_bytes: u64,
    cgroup: Option<RunnerCgroup>,
    /// Holds each pod's private directory (HOME, working directory, `log`).
    work_dir: tempfile::TempDir,
    pods: Mutex<HashMap<String, PodEntry>>,
}

/// One pod the runner has taken, keyed by uid in [`Shared::pods`].
struct PodEntry {
    name: String,
    /// Order of first sight: pod names are reused (the operator picks the lowest free
    /// ordinal), so the latest pod of a name is the one with the highest `seq`.
    seq: u64,
    dir: PathBuf,
    /// The process group while the container runs.
    pgid: Option<i32>,
    cgroup: Option<Arc<PodCgroup>>,
    stop: Arc<Notify>,
}

impl PodRunner {
    /// Starts watching the Pods of `namespace`. Without a writable memory cgroup the pods run
    /// unlimited, and the runner says so on stderr.
    pub async fn start(client: Client, namespace: &str, images: ImageMap) -> Self {
        let runner_name = format!("proofpipe-e2e-{}-{}", std::process::id(), unique_suffix());
        let cgroup = match RunnerCgroup::create(&runner_name) {
            Ok(cgroup) => {
                eprintln!(
                    "pod runner: memory limits enforced through cgroup {:?}",
                    cgroup.version()
                );
                Some(cgroup)
            }
            Err(reason) => {
                eprintln!(
                    "pod runner: WARNING: no writable memory cgroup ({reason}); pods run \
                     WITHOUT their memory limits"
                );
                None
            }
        };
        let shared = Arc::new(Shared {
            pods_api: Api::namespaced(client, namespace),
            images,
            host_env: HOST_ENV
                .iter()
                .filter_map(|name| Some((name.to_string(), std::env::var(name).ok()?)))
                .collect(),
            grace_period: Duration::from_secs(10),
            node_memory_bytes: host_memory_bytes(),
            cgroup,
            work_dir: tempfile::Builder::new()
                .prefix("proofpipe-e2e-pods-")
                .tempdir()
                .expect("create the pods' directory"),
            pods: Mutex::new(HashMap::new()),
        });
        let watch = tokio::spawn(watch_pods(shared.clone()));
        Self { shared, watch }
    }

    /// SIGKILLs the container of pod `name`, as a crash would; the runner then reports the
    /// pod Failed with exit code 137.
    pub fn kill_pod_process(&self, name: &str) -> Result<(), String> {
        let pods = self.shared.pods.lock().expect("pods lock");
        let pgid = pods
            .values()
            .filter(|entry| entry.name == name)
            .find_map(|entry| entry.pgid)
            .ok_or_else(|| format!("pod {name} has no running process"))?;
        signal_group(pgid, libc::SIGKILL);
        Ok(())
    }

    /// The combined stdout and stderr of the latest pod named `name`, empty if it never
    /// started.
    pub fn pod_log(&self, name: &str) -> String {
        let pods = self.shared.pods.lock().expect("pods lock");
        pods.values()
            .filter(|entry| entry.name == name)
            .max_by_key(|entry| entry.seq)
            .and_then(|entry| std::fs::read_to_string(entry.dir.join("log")).ok())
            .unwrap_or_default()
    }

    /// The last `lines` lines of every pod's log, oldest pod first, for a failing test's
    /// message.
    pub fn log_tails(&self, lines: usize) -> String {
        let pods = self.shared.pods.lock().expect("pods lock");
        let mut entries: Vec<&PodEntry> = pods.values().collect();
        entries.sort_by_key(|entry| entry.seq);
        let mut out = String::new();
        for entry in entries {
            let log = std::fs::read_to_string(entry.dir.join("log")).unwrap_or_default();
            let tail: Vec<&str> = log.lines().rev().take(lines).collect();
            out.push_str(&format!(
                "----- pod {} ({})\n",
                entry.name,
                entry.dir.display()
            ));
            for line in tail.into_iter().rev() {
                out.push_str(line);
                out.push('\n');
            }
        }
        out
    }

    /// The process id of pod `name`'s container while it runs (the leader of its process
    /// group).
    pub fn pod_pid(&self, name: &str) -> Option<i32> {
        let pods = self.shared.pods.lock().expect("pods lock");
        pods.values()
            .filter(|entry| entry.name == name)
            .find_map(|entry| entry.pgid)
    }

    /// The cgroup directory of pod `name` while its container runs.
    pub fn pod_cgroup_dir(&self, name: &str) -> Option<PathBuf> {
        let pods = self.shared.pods.lock().expect("pods lock");
        pods.values()
            .filter(|entry| entry.name == name && entry.pgid.is_some())
            .find_map(|entry| {
                entry
                    .cgroup
                    .as_ref()
                    .map(|cgroup| cgroup.dir().to_path_buf())
            })
    }
}

impl Drop for PodRunner {
    fn drop(&mut self) {
        self.watch.abort();
        let pods = self
            .shared
            .pods
            .lock()
            .unwrap_or_else(|poison| poison.into_inner());
        for entry in pods.values() {
            if let Some(pgid) = entry.pgid {
                signal_group(pgid, libc::SIGKILL);
            }
            if let Some(cgroup) = &entry.cgroup {
                cgroup.remove();
            }
        }
        if let Some(cgroup) = &self.shared.cgroup {
            cgroup.remove();
        }
    }
}

async fn watch_pods(shared: Arc<Shared>) {
    let mut events = watcher(shared.pods_api.clone(), watcher::Config::default()).boxed();
    // Uids listed since the last (re)list began: a pod missing from a relist was deleted
    // while the watch was down, and no Delete event will come for it.
    let mut listed: Option<HashSet<String>> = None;
    while let Some(event) = events.next().await {
        match event {
            Ok(watcher::Event::Init) => listed = Some(HashSet::new()),
            Ok(watcher::Event::InitApply(pod)) => {
                if let (Some(listed), Some(uid)) = (listed.as_mut(), pod.uid()) {
                    listed.insert(uid);
                }
                on_pod(&shared, pod);
            }
            Ok(watcher::Event::InitDone) => {
                if let Some(listed) = listed.take() {
                    let pods = shared.pods.lock().expect("pods lock");
                    for (uid, entry) in pods.iter() {
                        if !listed.contains(uid) {
                            entry.stop.notify_one();
                        }
                    }
                }
            }
            Ok(watcher::Event::Apply(pod)) => on_pod(&shared, pod),
            Ok(watcher::Event::Delete(pod)) => {
                if let Some(entry) = pod.uid().and_then(|uid| {
                    shared
                        .pods
                        .lock()
                        .expect("pods lock")
                        .get(&uid)
                        .map(|e| e.stop.clone())
                }) {
                    entry.notify_one();
                }
            }
            // The watcher retries by itself; say why it had to.
            Err(err) => {
                eprintln!("pod runner: watch error: {err}");
                tokio::time::sleep(Duration::from_secs(1)).await;
            }
        }
    }
}

/// Starts a pod seen for the first time; stops one being deleted.
fn on_pod(shared: &Arc<Shared>, pod: Pod) {
    let Some(uid) = pod.uid() else { return };
    let mut pods = shared.pods.lock().expect("pods lock");
    if let Some(entry) = pods.get(&uid) {
        if pod.metadata.deletion_timestamp.is_some() {
            entry.stop.notify_one();
        }
        return;
    }
    let finished = matches!(
        pod.status.as_ref().and_then(|s| s.phase.as_deref()),
        Some("Succeeded" | "Failed")
    );
    if finished || pod.metadata.deletion_timestamp.is_some() {
        return;
    }
    // A gated pod is not the scheduler's yet (Kueue removes its gate on admission): it is
    // not taken, so the update that removes the last gate starts it.
    if has_scheduling_gates(&pod) {
        if !reports_scheduling_gated(&pod) {
            let (api, name) = (shared.pods_api.clone(), pod.name_any());
            tokio::spawn(async move {
                write_status(&api, &name, &status::scheduling_gated(&now())).await;
            });
        }
        return;
    }
    let name = pod.name_any();
    let seq = pods.len() as u64;
    let dir = shared.work_dir.path().join(format!("{seq:03}-{name}"));
    let stop = Arc::new(Notify::new());
    pods.insert(
        uid.clone(),
        PodEntry {
            name,
            seq,
            dir: dir.clone(),
            pgid: None,
            cgroup: None,
            stop: stop.clone(),
        },
    );
    tokio::spawn(run_pod(shared.clone(), pod, uid, dir, stop));
}

fn has_scheduling_gates(pod: &Pod) -> bool {
    pod.spec
        .as_ref()
        .and_then(|spec| spec.scheduling_gates.as_ref())
        .is_some_and(|gates| !gates.is_empty())
}

/// Whether the pod's status already says it is gated (written once, not on every update).
fn reports_scheduling_gated(pod: &Pod) -> bool {
    pod.status
        .as_ref()
        .and_then(|status| status.conditions.as_ref())
        .is_some_and(|conditions| {
            conditions.iter().any(|c| {
                c.type_ == "PodScheduled" && c.reason.as_deref() == Some("SchedulingGated")
            })
        })
}

/// Why a pod could not be started: the status `reason` and a message.
struct StartError(&'static str, String);

/// Labels of the runner's one node. A pod whose `nodeSelector` asks for anything else is
/// left Pending as Unschedulable, as a scheduler would leave it until a node autoscaler
/// brings a matching node.
pub const NODE_LABELS: [(&str, &str); 2] = [
    ("kubernetes.io/hostname", NODE_NAME),
    ("kubernetes.io/os", "linux"),
];

/// Why no node of the runner can take `pod`, if none can.
fn unschedulable_reason(pod: &Pod) -> Option<String> {
    let selector = pod.spec.as_ref()?.node_selector.as_ref()?;
    let unmatched: Vec<String> = selector
        .iter()
        .filter(|(key, value)| !NODE_LABELS.contains(&(key.as_str(), value.as_str())))
        .map(|(key, value)| format!("{key}={value}"))
        .collect();
    (!unmatched.is_empty()).then(|| {
        format!(
            "0/1 nodes are available: 1 node(s) didn't match Pod's node affinity/selector ({}).",
            unmatched.join(", ")
        )
    })
}

/// A pod's whole life: bind, start, report, wait, stop, report.
async fn run_pod(shared: Arc<Shared>, pod: Pod, uid: String, dir: PathBuf, stop: Arc<Notify>) {
    let name = pod.name_any();
    if let Some(message) = unschedulable_reason(&pod) {
        eprintln!("pod runner: pod {name} is unschedulable: {message}");
        write_status(
            &shared.pods_api,
            &name,
            &status::unschedulable(&now(), &message),
        )
        .await;
        return;
    }
    if let Err(err) = bind(&shared.pods_api, &pod).await {
        eprintln!("pod runner: cannot bind pod {name}: {err}");
        return;
    }
    let Some(container) = pod.spec.as_ref().and_then(|spec| spec.containers.first()) else {
        eprintln!("pod runner: pod {name} has no container; left Pending");
        return;
    };
    let container_ref = ContainerRef {
        name: &container.name,
        image: container.image.as_deref().unwrap_or_default(),
    };
    let started = now();
    let (mut child, cgroup) = match start_container(&shared, &pod, container, &dir, &uid) {
        Ok(running) => running,
        Err(StartError(reason, message)) => {
            eprintln!("pod runner: pod {name} not started: {message}");
            let status = status::not_started(&container_ref, &started, reason, &message);
            write_status(&shared.pods_api, &name, &status).await;
            return;
        }
    };
    let pgid = child.id().map(|pid| pid as i32);
    {
        let mut pods = shared.pods.lock().expect("pods lock");
        if let Some(entry) = pods.get_mut(&uid) {
            entry.pgid = pgid;
            entry.cgroup = cgroup.clone();
        }
    }
    write_status(
        &shared.pods_api,
        &name,
        &status::running(&container_ref, &started),
    )
    .await;

    let deleted;
    let exit_status = tokio::select! {
        result = child.wait() => { deleted = false; result }
        () = stop.notified() => {
            deleted = true;
            if let Some(pgid) = pgid {
                signal_group(pgid, libc::SIGTERM);
            }
            match tokio::time::timeout(shared.grace_period, child.wait()).await {
                Ok(result) => result,
                Err(_) => {
                    if let Some(pgid) = pgid {
                        signal_group(pgid, libc::SIGKILL);
                    }
                    child.wait().await
                }
            }
        }
    };
    // The process is reaped: its pid (and group id) may be reused from here on.
    {
        let mut pods = shared.pods.lock().expect("pods lock");
        if let Some(entry) = pods.get_mut(&uid) {
            entry.pgid = None;
        }
    }
    let (code, signal) = exit_status.map_or((1, None), exit_code);
    let oom_killed = cgroup.as_ref().is_some_and(|cgroup| cgroup.oom_kills() > 0);
    if let Some(cgroup) = &cgroup {
        cgroup.remove();
    }
    let exit = Exit {
        code,
        signal,
        oom_killed,
    };
    eprintln!("pod runner: pod {name} exited: {exit:?}");
    let finished = now();
    // As the kubelet does for terminationMessagePolicy FallbackToLogsOnError (this runner
    // has no /dev/termination-log to offer): a failed container's message is the end of its
    // log.
    let message = (code != 0
        && container.termination_message_policy.as_deref() == Some("FallbackToLogsOnError"))
    .then(|| log_tail_for_termination(&dir.join("log")));
    write_status(
        &shared.pods_api,
        &name,
        &status::terminated(&container_ref, &started, &finished, exit, message),
    )
    .await;
    if deleted {
        // A kubelet ends a graceful deletion once the containers are gone. Finalizers, if
        // any, are their owners' to remove.
        let _ = shared
            .pods_api
            .delete(&name, &DeleteParams::default().grace_period(0))
            .await;
    }
}

/// Sets `spec.nodeName` when no scheduler did, as a scheduler's binding would.
/// The kubelet's fallback termination message: the last 80 lines of the log, at most 2048
/// bytes.
fn log_tail_for_termination(log: &std::path::Path) -> String {
    let text = std::fs::read_to_string(log).unwrap_or_default();
    let lines: Vec<&str> = text.lines().collect();
    let tail = lines[lines.len().saturating_sub(80)..].join("\n");
    let mut start = tail.len().saturating_sub(2048);
    while !tail.is_char_boundary(start) {
        start += 1;
    }
    tail[start..].to_owned()
}

async fn bind(api: &Api<Pod>, pod: &Pod) -> kube::Result<()> {
    if pod
        .spec
        .as_ref()
        .and_then(|spec| spec.node_name.as_ref())
        .is_some()
    {
        return Ok(());
    }
    let patch = serde_json::json!({ "spec": { "nodeName": NODE_NAME } });
    api.patch(&pod.name_any(), &patch_params(), &Patch::Merge(&patch))
        .await
        .map(drop)
}

fn start_container(
    shared: &Shared,
    pod: &Pod,
    container: &Container,
    dir: &Path,
    uid: &str,
) -> Result<(tokio::process::Child, Option<Arc<PodCgroup>>), StartError> {
    let spec = pod
        .spec
        .as_ref()
        .expect("a pod with a container has a spec");
    if spec.containers.len() != 1 || spec.init_containers.as_ref().is_some_and(|c| !c.is_empty()) {
        return Err(StartError(
            "RunContainerError",
            "the pod runner runs pods of exactly one container and no init containers".into(),
        ));
    }
    let image = container.image.as_deref().unwrap_or_default();
    let entrypoint = shared.images.entrypoint(image).ok_or_else(|| {
        StartError(
            "UnmappedImage",
            format!("image {image:?} has no local program in the pod runner's image map"),
        )
    })?;
    let config_error = |message: String| StartError("CreateContainerConfigError", message);
    let pod_env = resolve_env(pod, container, shared.node_memory_bytes)
        .map_err(|err| config_error(err.to_string()))?;
    let memory_limit = container
        .resources
        .as_ref()
        .and_then(|r| r.limits.as_ref())
        .and_then(|limits| limits.get("memory"))
        .map(|quantity| parse_bytes(&quantity.0))
        .transpose()
        .map_err(|err| config_error(format!("limits.memory: {err}")))?;

    let run_error = |message: String| StartError("RunContainerError", message);
    std::fs::create_dir_all(dir)
        .map_err(|err| run_error(format!("create {}: {err}", dir.display())))?;
    let cgroup = match &shared.cgroup {
        Some(runner) => Some(Arc::new(runner.pod(uid, memory_limit).map_err(|err| {
            run_error(format!("create the pod's memory cgroup: {err}"))
        })?)),
        None => None,
    };
    // The container's own variables override the host's, as a pod's env overrides the
    // service variables a kubelet injects; HOME is the pod's private directory.
    let mut env = shared.host_env.clone();
    env.push(("HOME".into(), dir.display().to_string()));
    env.extend(pod_env);
    let launch = Launch {
        argv: container_argv(container, entrypoint),
        env,
        work_dir: dir.to_path_buf(),
        log: dir.join("log"),
        cgroup_procs: cgroup.as_ref().map(|cgroup| cgroup.procs_file()),
    };
    match spawn(&launch) {
        Ok(child) => Ok((child, cgroup)),
        Err(err) => {
            if let Some(cgroup) = &cgroup {
                cgroup.remove();
            }
            Err(run_error(format!("start {:?}: {err}", launch.argv)))
        }
    }
}

async fn write_status(api: &Api<Pod>, name: &str, status: &PodStatus) {
    let patch = serde_json::json!({ "status": status });
    if let Err(err) = api
        .patch_status(name, &patch_params(), &Patch::Merge(&patch))
        .await
    {
        // A pod deleted meanwhile has no status left to write.
        if !matches!(&err, kube::Error::Api(status) if status.code == 404) {
            eprintln!("pod runner: cannot write the status of pod {name}: {err}");
        }
    }
}

fn patch_params() -> PatchParams {
    PatchParams {
        field_manager: Some(FIELD_MANAGER.into()),
        ..PatchParams::default()
    }
}

fn now() -> Time {
    Time(Timestamp::now())
}

/// Tells apart the runners of one process (each test starts its own).
fn unique_suffix() -> u64 {
    use std::sync::atomic::{AtomicU64, Ordering};
    static NEXT: AtomicU64 = AtomicU64::new(0);
    NEXT.fetch_add(1, Ordering::Relaxed)
}

/// The host's MemTotal: what a kubelet reports as `limits.memory` for a container without one.
fn host_memory_bytes() -> u64 {
    std::fs::read_to_string("/proc/meminfo")
        .ok()
        .and_then(|meminfo| {
            let kib = meminfo
                .lines()
                .find_map(|line| line.strip_prefix("MemTotal:"))?;
            kib.trim().trim_end_matches("kB").trim().parse::<u64>().ok()
        })
        .map_or(0, |kib| kib * 1024)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn container(value: serde_json::Value) -> Container {
        serde_json::from_value(value).unwrap()
    }

    #[test]
    fn first_matching_prefix_names_the_entrypoint() {
        let images = ImageMap::new()
            .with_prefix("proofpipe-prover", ["/bin/prover"])
            .with_prefix("proofpipe", ["/bin/other", "--flag"]);
        assert_eq!(
            images.entrypoint("proofpipe-prover:e2e"),
            Some(&["/bin/prover".to_string()][..])
        );
        assert_eq!(
            images.entrypoint("proofpipe-operator:1"),
            Some(&["/bin/other".to_string(), "--flag".to_string()][..])
        );
        assert_eq!(images.entrypoint("busybox"), None);
    }

    #[test]
    fn args_follow_the_entrypoint() {
        let c = container(serde_json::json!({ "name": "c", "args": ["daemon", "--x"] }));
        assert_eq!(
            container_argv(&c, &["/bin/prover".into()]),
            ["/bin/prover", "daemon", "--x"]
        );
    }

    #[test]
    fn command_replaces_the_entrypoint() {
        let c = container(serde_json::json!({
            "name": "c", "command": ["/bin/sh", "-c"], "args": ["exit 3"],
        }));
        assert_eq!(
            container_argv(&c, &["/bin/prover".into(), "--ignored".into()]),
            ["/bin/sh", "-c", "exit 3"]
        );
    }
}
