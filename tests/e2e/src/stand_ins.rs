//! Stand-ins for the benchmarks that measure the operator and the gateway alone
//! (`examples/fleet_scale.rs`, [`crate::gateway_load`]): a kubelet that makes every prover pod
//! Ready at once, and reads of a process's /proc figures.

use std::collections::HashSet;
use std::sync::Arc;

use futures::StreamExt;
use k8s_openapi::api::core::v1::Pod;
use kube::ResourceExt;
use kube::api::{Api, Patch, PatchParams};
use kube::runtime::{WatchStreamExt, watcher};
use serde_json::json;
use tokio::sync::Semaphore;

/// Marks every new prover pod Running and Ready, once, with at most `writes` permits' worth
/// of status writes in flight.
pub async fn stand_in_kubelet(pods: Api<Pod>, writes: Arc<Semaphore>) {
    let mut done = HashSet::new();
    let config = watcher::Config::default().labels("app.kubernetes.io/name=proofpipe-prover");
    let mut events = watcher(pods.clone(), config)
        .default_backoff()
        .applied_objects()
        .boxed();
    while let Some(pod) = events.next().await {
        let Ok(pod) = pod else { continue };
        let Some(uid) = pod.uid() else { continue };
        if pod.metadata.deletion_timestamp.is_some() || !done.insert(uid) {
            continue;
        }
        let pods = pods.clone();
        let permit = writes.clone().acquire_owned().await.expect("never closed");
        tokio::spawn(async move {
            let status = json!({"status": {
                "phase": "Running",
                "conditions": [{"type": "Ready", "status": "True"}],
            }});
            if let Err(err) = pods
                .patch_status(
                    &pod.name_any(),
                    &PatchParams::default(),
                    &Patch::Merge(&status),
                )
                .await
            {
                eprintln!("marking {} Ready: {err}", pod.name_any());
            }
            drop(permit);
        });
    }
}

/// A `Vm...:` line of /proc/<pid>/status, in KiB.
pub fn proc_status(pid: u32, field: &str) -> Option<u64> {
    let status = std::fs::read_to_string(format!("/proc/{pid}/status")).ok()?;
    let line = status.lines().find(|line| line.starts_with(field))?;
    line.split_whitespace().nth(1)?.parse().ok()
}
