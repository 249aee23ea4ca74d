//! Builds a prover Pod from its ProverPool (ADR 0003, "Prover pod spec"). No client: the
//! Pod is plain data, tested against YAML fixtures.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::{
    Container, ContainerPort, EnvVar, EnvVarSource, HTTPGetAction, ObjectFieldSelector, Pod,
    PodSpec, Probe, ResourceFieldSelector,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::Resource;
use kube::api::ObjectMeta;
use proofpipe_crds::ProverPool;

use sha2::{Digest, Sha256};

use crate::names::{
    MANAGED_BY_LABEL, NAME_LABEL, POOL_LABEL, PROVER_APP, PROVER_SERVICE_ACCOUNT,
    TEMPLATE_HASH_LABEL,
};

/// Name of the prover container.
const CONTAINER: &str = "prover";
/// The daemon's `/metrics`, `/readyz` and `/healthz` port.
const METRICS_PORT: i32 = 9100;

/// The prover pod `name` of `pool`, owned by the pool.
pub fn prover_pod(pool: &ProverPool, name: &str) -> Pod {
    let pool_name = pool.metadata.name.clone().unwrap_or_default();
    let template = &pool.spec.template;
    let pipeline = &pool.spec.pipeline;

    let mut env = vec![
        field_env("PROOFPIPE_POD_NAME", "metadata.name"),
        field_env("PROOFPIPE_NAMESPACE", "metadata.namespace"),
        value_env("PROOFPIPE_POOL", &pool_name),
        value_env(
            "PROOFPIPE_PARTITION_WORKERS",
            pipeline.partition_workers.as_str(),
        ),
        value_env(
            "PROOFPIPE_CHANNEL_CAPACITY",
            pipeline.channel_capacity.as_str(),
        ),
        value_env("PROOFPIPE_GPU_WORKERS", pipeline.gpu_workers.as_str()),
        // The daemon prefers its cgroup's limit; this is the fallback where the cgroup has none.
        EnvVar {
            name: "PROOFPIPE_MEMORY_LIMIT".into(),
            value_from: Some(EnvVarSource {
                resource_field_ref: Some(ResourceFieldSelector {
                    container_name: Some(CONTAINER.into()),
                    resource: "limits.memory".into(),
                    divisor: Some(Quantity("1".into())),
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        },
    ];
    env.extend(template.env.iter().flatten().cloned());

    let args = ["daemon".to_owned()]
        .into_iter()
        .chain(template.args.iter().flatten().cloned())
        .collect();

    let spec = PodSpec {
        containers: vec![Container {
            name: CONTAINER.into(),
            image: Some(template.image.clone()),
            image_pull_policy: template.image_pull_policy.clone(),
            args: Some(args),
            env: Some(env),
            resources: template.resources.clone(),
            ports: Some(vec![ContainerPort {
                name: Some("metrics".into()),
                container_port: METRICS_PORT,
                ..ContainerPort::default()
            }]),
            volume_mounts: template.volume_mounts.clone(),
            readiness_probe: Some(http_probe("/readyz")),
            liveness_probe: Some(http_probe("/healthz")),
            // The prover writes why it failed to /dev/termination-log; if it could not (a
            // panic, a kill), the end of its log stands in. The operator copies it into the
            // job's status.lastFailure, since the pod is replaced.
            termination_message_policy: Some("FallbackToLogsOnError".into()),
            ..Container::default()
        }],
        service_account_name: Some(PROVER_SERVICE_ACCOUNT.into()),
        node_selector: template.node_selector.clone(),
        tolerations: template.tolerations.clone(),
        volumes: template.volumes.clone(),
        priority_class_name: template.priority_class_name.clone(),
        // A prover that exits (crash, OOM kill) leaves a Failed pod: the operator requeues
        // its job at once and replaces the pod, instead of waiting for a restart loop on a
        // node that may be the cause.
        restart_policy: Some("Never".into()),
        ..PodSpec::default()
    };
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: pool.metadata.namespace.clone(),
            labels: Some(BTreeMap::from([
                (POOL_LABEL.to_owned(), pool_name),
                (NAME_LABEL.to_owned(), PROVER_APP.to_owned()),
                (
                    MANAGED_BY_LABEL.to_owned(),
                    crate::names::FIELD_MANAGER.to_owned(),
                ),
                (TEMPLATE_HASH_LABEL.to_owned(), spec_hash(&spec)),
            ])),
            owner_references: pool.controller_owner_ref(&()).map(|owner| vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// The template hash of `pool`: the [`TEMPLATE_HASH_LABEL`] a pod created from it now gets.
pub fn template_hash(pool: &ProverPool) -> String {
    let pod = prover_pod(pool, "");
    spec_hash(pod.spec.as_ref().expect("prover_pod always sets a spec"))
}

/// A short, stable digest of a pod spec. The spec holds nothing pod-specific (the pod's name
/// reaches the daemon through the Downward API), so equal templates give equal hashes;
/// serde_json writes struct fields in declaration order and maps sorted, so it is stable.
fn spec_hash(spec: &PodSpec) -> String {
    let bytes = serde_json::to_vec(spec).expect("a PodSpec always serializes");
    let digest = Sha256::digest(&bytes);
    // 40 bits, as hex: a label value, unique enough among one pool's few template versions.
    digest[..5]
        .iter()
        .map(|byte| format!("{byte:02x}"))
        .collect()
}

fn value_env(name: &str, value: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: Some(value.into()),
        value_from: None,
    }
}

fn field_env(name: &str, field_path: &str) -> EnvVar {
    EnvVar {
        name: name.into(),
        value: None,
        value_from: Some(EnvVarSource {
            field_ref: Some(ObjectFieldSelector {
                api_version: None,
                field_path: field_path.into(),
            }),
            ..EnvVarSource::default()
        }),
    }
}

fn http_probe(path: &str) -> Probe {
    Probe {
        http_get: Some(HTTPGetAction {
            path: Some(path.into()),
            port: IntOrString::String("metrics".into()),
            ..HTTPGetAction::default()
        }),
        ..Probe::default()
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn yaml<T: serde::de::DeserializeOwned>(text: &str) -> T {
        serde_yaml_ng::from_str(text).unwrap()
    }

    #[test]
    fn the_pod_matches_the_fixture() {
        let pool: ProverPool = yaml(include_str!("../fixtures/pool-gpu.yaml"));
        let expected: serde_json::Value = yaml(include_str!("../fixtures/pool-gpu-prover-0.yaml"));
        let built = serde_json::to_value(prover_pod(&pool, "gpu-prover-0")).unwrap();
        assert_eq!(
            built,
            expected,
            "built:\n{}",
            serde_yaml_ng::to_string(&built).unwrap()
        );
    }

    #[test]
    fn the_template_hash_follows_the_pod_spec_and_nothing_else() {
        let pool: ProverPool = yaml(include_str!("../fixtures/pool-gpu.yaml"));
        let hash = template_hash(&pool);
        assert_eq!(hash.len(), 10);
        assert_eq!(
            prover_pod(&pool, "gpu-prover-7").metadata.labels.unwrap()[TEMPLATE_HASH_LABEL],
            hash,
            "every pod of one template carries the same hash, whatever its name"
        );

        let mut scaled = pool.clone();
        scaled.spec.replicas += 3;
        scaled.status = None;
        assert_eq!(
            template_hash(&scaled),
            hash,
            "scaling does not make pods outdated"
        );

        let mut new_image = pool.clone();
        new_image.spec.template.image.push_str("-next");
        assert_ne!(template_hash(&new_image), hash);
        let mut new_sizing = pool.clone();
        new_sizing.spec.pipeline.channel_capacity = proofpipe_crds::PipelineOverride::new("3");
        assert_ne!(template_hash(&new_sizing), hash);
    }

    #[test]
    fn a_minimal_pool_gets_auto_sizing_and_only_the_daemon_argument() {
        let pool: ProverPool = yaml(include_str!("../fixtures/pool-minimal.yaml"));
        let pod = prover_pod(&pool, "small-prover-2");
        let container = &pod.spec.as_ref().unwrap().containers[0];
        assert_eq!(container.args.as_deref(), Some(&["daemon".to_owned()][..]));
        let env: BTreeMap<_, _> = container
            .env
            .iter()
            .flatten()
            .filter_map(|var| Some((var.name.as_str(), var.value.as_deref()?)))
            .collect();
        assert_eq!(env["PROOFPIPE_POOL"], "small");
        assert_eq!(env["PROOFPIPE_PARTITION_WORKERS"], "auto");
        assert_eq!(env["PROOFPIPE_CHANNEL_CAPACITY"], "auto");
        assert_eq!(env["PROOFPIPE_GPU_WORKERS"], "auto");
        assert_eq!(container.resources, None);
    }
}
