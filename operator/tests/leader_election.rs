//! Leader election between two real `proofpipe-operator run` processes on one API server:
//!
//! - a leader paused with SIGSTOP past its lease is replaced by the standby, and once it
//!   resumes (SIGCONT) it writes the Lease no more and exits 1 (its renew deadline passed);
//! - a leader stopped with SIGTERM releases the Lease, and the standby takes over within a
//!   retry period or two rather than a whole lease duration.
//!
//! Needs `KUBECONFIG` naming a cluster where CRDs may be installed, such as the local API
//! server of `../shared/kube-testenv` (`eval "$(../shared/kube-testenv/start.sh)"`). Without
//! it the tests print why they are skipped and pass, except under `CI=true`, where they fail.

use std::path::PathBuf;
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex};
use std::time::{Duration, Instant};

use futures::StreamExt;
use k8s_openapi::api::coordination::v1::Lease;
use kube::ResourceExt;
use kube::api::Api;
use kube::runtime::{WatchStreamExt, watcher};
use proofpipe_testkit::cluster::TestNamespace;

const LEASE: &str = "proofpipe-operator";

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn a_paused_leader_is_replaced_and_writes_nothing_after_it_resumes() {
    let Some(test_namespace) = TestNamespace::create("le-pause").await else {
        return;
    };
    // Short, client-go-shaped timing: lease 6 s, renew deadline 4 s, retry 1 s.
    let timing = [
        "--leader-elect-lease-duration=6s",
        "--leader-elect-renew-deadline=4s",
        "--leader-elect-retry-period=1s",
    ];
    let lease_duration = Duration::from_secs(6);
    let retry_period = Duration::from_secs(1);

    let (client, namespace) = (test_namespace.client, test_namespace.name);
    let leases: Api<Lease> = Api::namespaced(client.clone(), &namespace);
    let history = record_holders(leases.clone());

    let mut leader = Operator::start(&namespace, "leader-a", &timing);
    wait_for_holder(
        &leases,
        "leader-a",
        Duration::from_secs(30),
        &mut [&mut leader],
    )
    .await;
    let mut standby = Operator::start(&namespace, "standby-b", &timing);
    // The standby sees a live leader and leaves it alone.
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(holder(&leases).await.as_deref(), Some("leader-a"));

    leader.signal("STOP");
    let paused = Instant::now();
    wait_for_holder(
        &leases,
        "standby-b",
        Duration::from_secs(30),
        &mut [&mut standby],
    )
    .await;
    let took = paused.elapsed();
    eprintln!("the standby took the Lease {took:?} after the leader was paused");
    // It waited for the Lease to go unrenewed for a lease duration on its own clock; the
    // last renewal was at most a retry period (and a round trip) before the pause.
    assert!(
        took + retry_period + Duration::from_millis(500) >= lease_duration,
        "the standby took over {took:?} after the pause, before the lease duration"
    );

    leader.signal("CONT");
    let status = leader.wait_exit(Duration::from_secs(15)).await;
    let log = leader.log();
    assert_eq!(
        status.and_then(|status| status.code()),
        Some(1),
        "the resumed leader steps down by exiting 1; its log:\n{log}"
    );
    assert!(
        log.contains("lost the leader Lease") && log.contains("renew deadline"),
        "it says why it stopped; its log:\n{log}"
    );
    // Time for any late write of the resumed process to show.
    tokio::time::sleep(Duration::from_secs(2)).await;
    let lease = leases.get(LEASE).await.unwrap();
    let spec = lease.spec.unwrap_or_default();
    assert_eq!(spec.holder_identity.as_deref(), Some("standby-b"));
    assert_eq!(spec.lease_transitions, Some(1), "one transition: a to b");

    // Every version of the Lease the watch saw: leader-a, then only standby-b. A write by the
    // resumed leader (a renewal or a claim) would name it again.
    let history = history.lock().unwrap().clone();
    eprintln!("Lease holders seen by the watch: {history:?}");
    let first_b = history
        .iter()
        .position(|holder| holder.as_deref() == Some("standby-b"))
        .unwrap_or_else(|| panic!("the watch saw standby-b take over: {history:?}"));
    assert!(
        history[..first_b]
            .iter()
            .any(|holder| holder.as_deref() == Some("leader-a")),
        "{history:?}"
    );
    assert!(
        history[first_b..]
            .iter()
            .all(|holder| holder.as_deref() == Some("standby-b")),
        "the resumed leader wrote the Lease again: {history:?}"
    );
    assert!(
        standby.exited().is_none(),
        "the new leader keeps running; its log:\n{}",
        standby.log()
    );
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn sigterm_releases_the_lease_to_the_standby() {
    let Some(test_namespace) = TestNamespace::create("le-term").await else {
        return;
    };
    // client-go's defaults: lease 15 s, renew deadline 10 s, retry 2 s.
    let (client, namespace) = (test_namespace.client, test_namespace.name);
    let leases: Api<Lease> = Api::namespaced(client.clone(), &namespace);

    let mut leader = Operator::start(&namespace, "leader-a", &[]);
    wait_for_holder(
        &leases,
        "leader-a",
        Duration::from_secs(30),
        &mut [&mut leader],
    )
    .await;
    let mut standby = Operator::start(&namespace, "standby-b", &[]);
    tokio::time::sleep(Duration::from_secs(3)).await;
    assert_eq!(holder(&leases).await.as_deref(), Some("leader-a"));

    leader.signal("TERM");
    let terminated = Instant::now();
    wait_for_holder(
        &leases,
        "standby-b",
        Duration::from_secs(14),
        &mut [&mut standby],
    )
    .await;
    let took = terminated.elapsed();
    eprintln!("the standby took the Lease {took:?} after the leader got SIGTERM");
    // Released: the standby's next try (every 2 s) takes it, not 15 s after the last renewal.
    assert!(
        took < Duration::from_secs(6),
        "the standby took over {took:?} after SIGTERM; the leader's log:\n{}",
        leader.log()
    );
    let status = leader.wait_exit(Duration::from_secs(12)).await;
    let log = leader.log();
    assert_eq!(
        status.and_then(|status| status.code()),
        Some(0),
        "SIGTERM exits 0; its log:\n{log}"
    );
    assert!(log.contains("released the leader Lease"), "{log}");
}

/// Every holder the Lease is seen with, in order, from a watch started now.
fn record_holders(leases: Api<Lease>) -> Arc<Mutex<Vec<Option<String>>>> {
    let history = Arc::new(Mutex::new(Vec::new()));
    let recorded = history.clone();
    tokio::spawn(async move {
        let mut stream = watcher(leases, watcher::Config::default())
            .applied_objects()
            .boxed();
        while let Some(event) = stream.next().await {
            if let Ok(lease) = event
                && lease.name_any() == LEASE
            {
                let holder = lease.spec.and_then(|spec| spec.holder_identity);
                recorded.lock().unwrap().push(holder);
            }
        }
    });
    history
}

async fn holder(leases: &Api<Lease>) -> Option<String> {
    leases
        .get_opt(LEASE)
        .await
        .unwrap()
        .and_then(|lease| lease.spec?.holder_identity)
}

/// Waits until `identity` holds the Lease; on timeout fails with the logs of `operators`.
async fn wait_for_holder(
    leases: &Api<Lease>,
    identity: &str,
    timeout: Duration,
    operators: &mut [&mut Operator],
) {
    let start = Instant::now();
    while start.elapsed() < timeout {
        if holder(leases).await.as_deref() == Some(identity) {
            return;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    let logs: Vec<String> = operators.iter().map(|operator| operator.log()).collect();
    panic!(
        "{identity} did not hold the Lease within {timeout:?} (holder: {:?}); logs:\n{}",
        holder(leases).await,
        logs.join("\n---\n")
    );
}

/// `proofpipe-operator run` as a child process; dropping it kills it.
struct Operator {
    child: Child,
    log: PathBuf,
    _dir: tempfile::TempDir,
}

impl Operator {
    fn start(namespace: &str, identity: &str, extra: &[&str]) -> Self {
        let dir = tempfile::tempdir().unwrap();
        let log = dir.path().join(format!("{identity}.log"));
        let file = std::fs::File::create(&log).unwrap();
        let child = Command::new(env!("CARGO_BIN_EXE_proofpipe-operator"))
            .args(["run", "--namespace", namespace, "--listen", "127.0.0.1:0"])
            .args(extra)
            .env("POD_NAMESPACE", namespace)
            .env("POD_NAME", identity)
            .env("RUST_LOG", "info")
            .stdin(Stdio::null())
            .stdout(file.try_clone().unwrap())
            .stderr(file)
            .spawn()
            .expect("start proofpipe-operator");
        Self {
            child,
            log,
            _dir: dir,
        }
    }

    /// Sends `SIG<name>` to the process.
    fn signal(&self, name: &str) {
        let status = Command::new("kill")
            .args([format!("-{name}"), self.child.id().to_string()])
            .status()
            .expect("run kill");
        assert!(status.success(), "kill -{name}");
    }

    fn exited(&mut self) -> Option<ExitStatus> {
        self.child.try_wait().unwrap()
    }

    async fn wait_exit(&mut self, timeout: Duration) -> Option<ExitStatus> {
        let start = Instant::now();
        while start.elapsed() < timeout {
            if let Some(status) = self.exited() {
                return Some(status);
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        None
    }

    fn log(&self) -> String {
        std::fs::read_to_string(&self.log).unwrap_or_default()
    }
}

impl Drop for Operator {
    fn drop(&mut self) {
        // SIGKILL ends a stopped process too.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}
