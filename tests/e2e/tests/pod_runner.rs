//! The pod runner against a real API server, with shell pods: it must behave like the
//! kubelet the scenarios rely on (binding, env, memory cgroup, status, deletion, exit codes).
//!
//! Needs `KUBECONFIG` (e.g. `eval "$(../shared/kube-testenv/start.sh)"`); skips without it.

use std::time::Duration;

use k8s_openapi::api::core::v1::Pod;
use kube::api::{Api, DeleteParams};
use proofpipe_e2e::cluster::TestNamespace;
use proofpipe_e2e::fixtures;
use proofpipe_e2e::runner::NODE_NAME;
use proofpipe_e2e::wait::eventually;
use proofpipe_e2e::{ImageMap, PodRunner};

const TIMEOUT: Duration = Duration::from_secs(30);

async fn setup(test: &str) -> Option<(TestNamespace, PodRunner)> {
    let namespace = TestNamespace::create(test).await?;
    let images = ImageMap::new().with_prefix("e2e-shell", ["/bin/sh"]);
    let runner = PodRunner::start(namespace.client.clone(), &namespace.name, images).await;
    Some((namespace, runner))
}

/// Waits until pod `name` satisfies `check`, which says what it sees when it does not.
async fn wait_pod(
    api: &Api<Pod>,
    runner: &PodRunner,
    name: &str,
    what: &str,
    check: impl Fn(&Pod) -> Result<(), String>,
) -> Pod {
    eventually(what, TIMEOUT, || async {
        let pod = api.get(name).await.map_err(|err| err.to_string())?;
        check(&pod).map(|()| pod)
    })
    .await
    .unwrap_or_else(|err| panic!("{err}\npod log:\n{}", runner.pod_log(name)))
}

fn phase(pod: &Pod) -> &str {
    pod.status
        .as_ref()
        .and_then(|s| s.phase.as_deref())
        .unwrap_or("")
}

fn condition(pod: &Pod, type_: &str) -> Option<String> {
    let conditions = pod.status.as_ref()?.conditions.as_ref()?;
    conditions
        .iter()
        .find(|c| c.type_ == type_)
        .map(|c| c.status.clone())
}

fn has_phase(expected: &'static str) -> impl Fn(&Pod) -> Result<(), String> {
    move |pod| match phase(pod) {
        found if found == expected => Ok(()),
        found => Err(format!("phase {found:?}")),
    }
}

fn exit_code(pod: &Pod) -> Option<i32> {
    let statuses = pod.status.as_ref()?.container_statuses.as_ref()?;
    Some(
        statuses
            .first()?
            .state
            .as_ref()?
            .terminated
            .as_ref()?
            .exit_code,
    )
}

#[tokio::test]
async fn pod_runs_ready_in_its_memory_cgroup_and_deletion_kills_it() {
    let Some((namespace, runner)) = setup("runner-limited").await else {
        return;
    };
    let api: Api<Pod> = namespace.api();
    namespace
        .apply(&fixtures::load("runner/limited-pod.yaml"))
        .await;

    let pod = wait_pod(&api, &runner, "limited", "Running and Ready", |pod| match (
        phase(pod),
        condition(pod, "Ready").as_deref(),
    ) {
        ("Running", Some("True")) => Ok(()),
        other => Err(format!("(phase, Ready) = {other:?}")),
    })
    .await;
    let spec = pod.spec.as_ref().unwrap();
    assert_eq!(spec.node_name.as_deref(), Some(NODE_NAME));
    let status = pod.status.as_ref().unwrap();
    assert_eq!(status.pod_ip.as_deref(), Some("127.0.0.1"));
    assert!(status.start_time.is_some());
    for type_ in ["PodScheduled", "Initialized", "ContainersReady"] {
        assert_eq!(condition(&pod, type_).as_deref(), Some("True"), "{type_}");
    }

    // The Downward API values, then the cgroups the process found itself in.
    let log = eventually("the pod's output", TIMEOUT, || async {
        let log = runner.pod_log("limited");
        if log.contains("POD=") {
            Ok(log)
        } else {
            Err(format!("log so far: {log:?}"))
        }
    })
    .await
    .unwrap();
    let expected_env = format!("POD=limited NS={} MEM={}", namespace.name, 64 << 20);
    assert!(
        log.contains(&expected_env),
        "expected {expected_env:?} in:\n{log}"
    );

    match runner.pod_cgroup_dir("limited") {
        Some(dir) => {
            let limit = std::fs::read_to_string(dir.join("memory.limit_in_bytes"))
                .or_else(|_| std::fs::read_to_string(dir.join("memory.max")))
                .expect("the pod cgroup has a memory limit file");
            assert_eq!(limit.trim(), (64u64 << 20).to_string());
            // /proc/self/cgroup of the process names the pod's cgroup (its path relative to
            // the hierarchy root is a suffix of the directory).
            let own = log
                .lines()
                .filter_map(|line| line.splitn(3, ':').nth(2))
                .find(|path| dir.ends_with(path.trim_start_matches('/')) && path.len() > 1);
            assert!(own.is_some(), "no line of\n{log}\nnames {}", dir.display());
            let procs = std::fs::read_to_string(dir.join("cgroup.procs")).unwrap();
            assert!(
                !procs.trim().is_empty(),
                "the pod's process is in {}",
                dir.display()
            );
        }
        None => eprintln!("no writable memory cgroup on this host: limit not checked"),
    }

    api.delete("limited", &DeleteParams::default())
        .await
        .unwrap();
    eventually("the pod's process to die", TIMEOUT, || async {
        match runner.pod_cgroup_dir("limited") {
            None => Ok(()),
            Some(dir) => Err(format!("still running in {}", dir.display())),
        }
    })
    .await
    .unwrap();
    namespace.delete().await;
}

#[tokio::test]
async fn exit_code_3_fails_the_pod() {
    let Some((namespace, runner)) = setup("runner-exit").await else {
        return;
    };
    let api: Api<Pod> = namespace.api();
    namespace.apply(&fixtures::load("runner/exit-3.yaml")).await;
    let pod = wait_pod(&api, &runner, "exit-3", "phase Failed", has_phase("Failed")).await;
    assert_eq!(exit_code(&pod), Some(3));
    assert_eq!(condition(&pod, "Ready").as_deref(), Some("False"));
    namespace.delete().await;
}

#[tokio::test]
async fn unmapped_image_fails_the_pod_with_a_clear_message() {
    let Some((namespace, runner)) = setup("runner-unmapped").await else {
        return;
    };
    let api: Api<Pod> = namespace.api();
    namespace
        .apply(&fixtures::load("runner/unmapped-image.yaml"))
        .await;
    let pod = wait_pod(
        &api,
        &runner,
        "unmapped",
        "phase Failed",
        has_phase("Failed"),
    )
    .await;
    let status = pod.status.unwrap();
    assert_eq!(status.reason.as_deref(), Some("UnmappedImage"));
    let message = status.message.unwrap_or_default();
    assert!(
        message.contains("registry.example/not-mapped:1"),
        "{message}"
    );
    namespace.delete().await;
}

#[tokio::test]
async fn killed_process_fails_the_pod_with_137() {
    let Some((namespace, runner)) = setup("runner-kill").await else {
        return;
    };
    let api: Api<Pod> = namespace.api();
    namespace
        .apply(&fixtures::load("runner/limited-pod.yaml"))
        .await;
    wait_pod(
        &api,
        &runner,
        "limited",
        "phase Running",
        has_phase("Running"),
    )
    .await;
    runner.kill_pod_process("limited").unwrap();
    let pod = wait_pod(
        &api,
        &runner,
        "limited",
        "phase Failed",
        has_phase("Failed"),
    )
    .await;
    assert_eq!(exit_code(&pod), Some(137));
    assert!(
        runner.kill_pod_process("limited").is_err(),
        "nothing left to kill"
    );
    namespace.delete().await;
}

#[tokio::test]
async fn exceeding_the_memory_limit_is_an_oom_kill() {
    if !runner_has_cgroups() {
        eprintln!("SKIPPED: no writable memory cgroup on this host");
        return;
    }
    let Some((namespace, runner)) = setup("runner-oom").await else {
        return;
    };
    let api: Api<Pod> = namespace.api();
    namespace.apply(&fixtures::load("runner/oom.yaml")).await;
    let pod = wait_pod(&api, &runner, "oom", "phase Failed", has_phase("Failed")).await;
    let statuses = pod.status.unwrap().container_statuses.unwrap();
    let terminated = statuses[0].state.clone().unwrap().terminated.unwrap();
    assert_eq!(
        terminated.reason.as_deref(),
        Some("OOMKilled"),
        "{terminated:?}"
    );
    assert_eq!(terminated.exit_code, 137);
    namespace.delete().await;
}

/// Whether this host gives the runner memory cgroups (the runner says so loudly if not).
fn runner_has_cgroups() -> bool {
    proofpipe_e2e::cgroup::RunnerCgroup::create(&format!("probe-{}", std::process::id()))
        .map(|cgroup| cgroup.remove())
        .is_ok()
}
