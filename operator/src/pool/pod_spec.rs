//! Builds a prover Pod from its ProverPool (ADR 0003, "Prover pod spec"; ADR 0013): the
//! pool's pod template, with the operator's settings on top. No client: the Pod is plain
//! data, tested against YAML fixtures and the restricted Pod Security Standard.

use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, EmptyDirVolumeSource, EnvVar, EnvVarSource,
    HTTPGetAction, ObjectFieldSelector, Pod, PodSecurityContext, PodSpec, Probe,
    ResourceFieldSelector, SeccompProfile, SecurityContext, Volume, VolumeMount,
};
use k8s_openapi::apimachinery::pkg::api::resource::Quantity;
use k8s_openapi::apimachinery::pkg::util::intstr::IntOrString;
use kube::Resource;
use kube::api::ObjectMeta;
use proofpipe_crds::{
    GPU_RESOURCE, PROVER_CONTAINER, PodTemplateMetadata, ProverPool, RESERVED_ENV_PREFIX,
    RESERVED_VOLUME_PREFIX, USER_PROVER_ENV,
};

use sha2::{Digest, Sha256};

use crate::names::{
    MANAGED_BY_LABEL, NAME_LABEL, POOL_LABEL, PROVER_APP, PROVER_SERVICE_ACCOUNT,
    TEMPLATE_HASH_LABEL,
};

/// The daemon's `/metrics`, `/readyz` and `/healthz` port, unless its args say
/// `--listen` (see [`listen_port`]).
const METRICS_PORT: i32 = 9100;
/// Name of [`METRICS_PORT`], which the probes use.
const METRICS_PORT_NAME: &str = "metrics";

/// Where the prover writes when its root filesystem is read-only, each given an emptyDir
/// named `proofpipe-<name>` unless the template mounts something there itself: temporary
/// files, Filecoin's default parameter and parent caches (`/var/tmp/filecoin-*`) and the
/// synthetic circuits' parameter cache (`~/.cache/proofpipe/params`, home of the prover
/// image's user, scripts/images.sh).
pub const SCRATCH_PATHS: &[(&str, &str)] = &[
    ("tmp", "/tmp"),
    ("var-tmp", "/var/tmp"),
    ("cache", "/home/proofpipe/.cache"),
];

/// The prover pod `name` of `pool`, owned by the pool.
pub fn prover_pod(pool: &ProverPool, name: &str) -> Pod {
    let pool_name = pool.metadata.name.clone().unwrap_or_default();
    let template = &pool.spec.template;
    let spec = prover_pod_spec(pool, &pool_name);

    let mut labels = template.metadata.labels.clone().unwrap_or_default();
    // The operator's labels win: the API server refuses them in a template, and one that got
    // past it must not move a pod out of its pool's selector.
    labels.extend([
        (POOL_LABEL.to_owned(), pool_name),
        (NAME_LABEL.to_owned(), PROVER_APP.to_owned()),
        (
            MANAGED_BY_LABEL.to_owned(),
            crate::names::FIELD_MANAGER.to_owned(),
        ),
        (
            TEMPLATE_HASH_LABEL.to_owned(),
            spec_hash(&template.metadata, &spec),
        ),
    ]);
    Pod {
        metadata: ObjectMeta {
            name: Some(name.to_owned()),
            namespace: pool.metadata.namespace.clone(),
            labels: Some(labels),
            annotations: template.metadata.annotations.clone(),
            owner_references: pool.controller_owner_ref(&()).map(|owner| vec![owner]),
            ..ObjectMeta::default()
        },
        spec: Some(spec),
        status: None,
    }
}

/// The template's pod spec with the operator's settings on top.
fn prover_pod_spec(pool: &ProverPool, pool_name: &str) -> PodSpec {
    let mut spec = pool.spec.template.spec.clone();
    // The daemon's RBAC is granted to this account (prover_rbac.rs).
    spec.service_account_name = Some(PROVER_SERVICE_ACCOUNT.into());
    spec.service_account = None;
    // A prover that exits (crash, OOM kill) leaves a Failed pod: the operator requeues its
    // job at once and replaces the pod, instead of waiting for a restart loop on a node that
    // may be the cause.
    spec.restart_policy = Some("Never".into());
    restricted_pod_defaults(spec.security_context.get_or_insert_default());
    for container in spec
        .init_containers
        .iter_mut()
        .flatten()
        .chain(spec.containers.iter_mut())
    {
        restricted_container_defaults(container.security_context.get_or_insert_default());
    }

    let index = match spec
        .containers
        .iter()
        .position(|c| c.name == PROVER_CONTAINER)
    {
        Some(index) => index,
        // The API server refuses such a template; one that bypassed it gets a container
        // without an image, and the pod's creation fails naming it.
        None => {
            spec.containers.insert(
                0,
                Container {
                    name: PROVER_CONTAINER.into(),
                    ..Container::default()
                },
            );
            0
        }
    };
    let prover = &mut spec.containers[index];
    complete_prover(prover, pool, pool_name);
    let scratch = scratch_mounts(prover);
    if !scratch.is_empty() {
        let volumes = spec.volumes.get_or_insert_default();
        volumes.extend(scratch.iter().map(|mount| Volume {
            name: mount.name.clone(),
            empty_dir: Some(EmptyDirVolumeSource::default()),
            ..Volume::default()
        }));
        let mounts = prover.volume_mounts.get_or_insert_default();
        // Before the template's own, which may be nested in them (a PVC under /var/tmp).
        mounts.splice(0..0, scratch);
    }
    spec
}

/// The operator's part of the prover container: the daemon's args, identity and sizing env,
/// port and probes.
fn complete_prover(prover: &mut Container, pool: &ProverPool, pool_name: &str) {
    let pipeline = &pool.spec.pipeline;
    let mut env = vec![
        field_env("PROOFPIPE_POD_NAME", "metadata.name"),
        field_env("PROOFPIPE_NAMESPACE", "metadata.namespace"),
        value_env("PROOFPIPE_POOL", pool_name),
        value_env(
            "PROOFPIPE_PARTITION_WORKERS",
            pipeline.partition_workers.as_str(),
        ),
        value_env(
            "PROOFPIPE_CHANNEL_CAPACITY",
            pipeline.channel_capacity.as_str(),
        ),
        value_env("PROOFPIPE_GPU_WORKERS", pipeline.gpu_workers.as_str()),
        value_env(
            "PROOFPIPE_PROGRESS_DEADLINE_SECONDS",
            &pool.spec.progress_deadline_seconds.to_string(),
        ),
        // The daemon prefers its cgroup's limit; this is the fallback where the cgroup has none.
        EnvVar {
            name: "PROOFPIPE_MEMORY_LIMIT".into(),
            value_from: Some(EnvVarSource {
                resource_field_ref: Some(ResourceFieldSelector {
                    container_name: Some(PROVER_CONTAINER.into()),
                    resource: "limits.memory".into(),
                    divisor: Some(Quantity("1".into())),
                }),
                ..EnvVarSource::default()
            }),
            ..EnvVar::default()
        },
    ];
    if requests_gpu(prover) {
        // The prover reports (and with PROOFPIPE_REQUIRE_GPU refuses) a GPU stage on the CPU.
        env.push(value_env("PROOFPIPE_GPU_EXPECTED", "true"));
    }
    // The contract's variables are the operator's even where a template bypassed admission.
    env.extend(prover.env.take().into_iter().flatten().filter(|var| {
        !var.name.starts_with(RESERVED_ENV_PREFIX) || USER_PROVER_ENV.contains(&var.name.as_str())
    }));
    prover.env = Some(env);

    prover.args = Some(
        ["daemon".to_owned()]
            .into_iter()
            .chain(prover.args.take().into_iter().flatten())
            .collect(),
    );

    // The probes follow the daemon's listen address: a `--listen` in the template's args moves
    // the port. Port 0 (a free port, for tests that run many provers on one host) cannot be
    // probed: such a container gets neither the port nor probes.
    let port = listen_port(prover.args.as_deref().unwrap_or_default());
    let mut ports: Vec<ContainerPort> = port
        .map(|port| ContainerPort {
            name: Some(METRICS_PORT_NAME.into()),
            container_port: port,
            ..ContainerPort::default()
        })
        .into_iter()
        .collect();
    ports.extend(prover.ports.take().into_iter().flatten().filter(|other| {
        Some(other.container_port) != port && other.name.as_deref() != Some(METRICS_PORT_NAME)
    }));
    prover.ports = Some(ports);
    prover.readiness_probe = port.map(|_| http_probe("/readyz"));
    prover.liveness_probe = port.map(|_| http_probe("/healthz"));
    // The prover writes why it failed to /dev/termination-log; if it could not (a panic, a
    // kill), the end of its log stands in. The operator copies it into the job's
    // status.lastFailure, since the pod is replaced.
    prover.termination_message_policy = Some("FallbackToLogsOnError".into());

    // The prover writes only to its scratch paths and the template's volumes.
    prover
        .security_context
        .get_or_insert_default()
        .read_only_root_filesystem
        .get_or_insert(true);
}

/// The restricted profile's pod-level settings, where the template leaves them unset.
fn restricted_pod_defaults(context: &mut PodSecurityContext) {
    context.run_as_non_root.get_or_insert(true);
    context.seccomp_profile.get_or_insert_with(runtime_default);
}

/// The restricted profile's container-level settings, where the template leaves them unset.
fn restricted_container_defaults(context: &mut SecurityContext) {
    context.allow_privilege_escalation.get_or_insert(false);
    context.capabilities.get_or_insert_with(|| Capabilities {
        add: None,
        drop: Some(vec!["ALL".into()]),
    });
}

fn runtime_default() -> SeccompProfile {
    SeccompProfile {
        type_: "RuntimeDefault".into(),
        localhost_profile: None,
    }
}

/// The emptyDir mounts a prover with a read-only root filesystem needs, for the
/// [`SCRATCH_PATHS`] the template does not mount itself.
fn scratch_mounts(prover: &Container) -> Vec<VolumeMount> {
    let read_only_root = prover
        .security_context
        .as_ref()
        .and_then(|context| context.read_only_root_filesystem)
        == Some(true);
    if !read_only_root {
        return Vec::new();
    }
    let mounted: Vec<&str> = prover
        .volume_mounts
        .iter()
        .flatten()
        .map(|mount| mount.mount_path.trim_end_matches('/'))
        .collect();
    SCRATCH_PATHS
        .iter()
        .filter(|(_, path)| !mounted.contains(path))
        .map(|(name, path)| VolumeMount {
            name: format!("{RESERVED_VOLUME_PREFIX}{name}"),
            mount_path: (*path).into(),
            ..VolumeMount::default()
        })
        .collect()
}

/// The template hash of `pool`: the [`TEMPLATE_HASH_LABEL`] a pod created from it now gets.
/// Whether `container` asks for at least one GPU (`nvidia.com/gpu` in its limits or requests).
pub fn requests_gpu(container: &Container) -> bool {
    let Some(resources) = &container.resources else {
        return false;
    };
    [&resources.limits, &resources.requests]
        .into_iter()
        .flatten()
        .filter_map(|map| map.get(GPU_RESOURCE))
        .any(|quantity| quantity.0.trim() != "0")
}

/// Whether the pool's prover container asks for a GPU.
pub fn pool_requests_gpu(pool: &ProverPool) -> bool {
    pool.spec
        .template
        .spec
        .containers
        .iter()
        .find(|c| c.name == PROVER_CONTAINER)
        .is_some_and(requests_gpu)
}

pub fn template_hash(pool: &ProverPool) -> String {
    let pool_name = pool.metadata.name.clone().unwrap_or_default();
    spec_hash(
        &pool.spec.template.metadata,
        &prover_pod_spec(pool, &pool_name),
    )
}

/// A short, stable digest of the pods' labels, annotations and spec as the template gives
/// them. None of it is pod-specific (the pod's name reaches the daemon through the Downward
/// API), so equal templates give equal hashes; serde_json writes struct fields in declaration
/// order and maps sorted, so it is stable.
fn spec_hash(metadata: &PodTemplateMetadata, spec: &PodSpec) -> String {
    let mut hasher = Sha256::new();
    // Empty metadata adds nothing, so a template without labels or annotations keeps the
    // hash a spec alone gives.
    if !metadata.is_empty() {
        hasher.update(serde_json::to_vec(metadata).expect("metadata always serializes"));
    }
    hasher.update(serde_json::to_vec(spec).expect("a PodSpec always serializes"));
    let digest = hasher.finalize();
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

/// The port the daemon listens on, from its args: the last `--listen ADDR` or
/// `--listen=ADDR` (clap's rule), else [`METRICS_PORT`]; `None` for port 0. An address that
/// does not parse keeps the default: the daemon refuses it at start, naming it.
pub fn listen_port(args: &[String]) -> Option<i32> {
    let mut listen = None;
    let mut words = args.iter();
    while let Some(word) = words.next() {
        if word == "--listen" {
            listen = words.next().map(String::as_str);
        } else if let Some(value) = word.strip_prefix("--listen=") {
            listen = Some(value);
        }
    }
    let port = listen
        .and_then(|addr| addr.parse::<std::net::SocketAddr>().ok())
        .map_or(METRICS_PORT, |addr| i32::from(addr.port()));
    (port != 0).then_some(port)
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
    use std::collections::BTreeMap;

    use super::*;

    fn yaml<T: serde::de::DeserializeOwned>(text: &str) -> T {
        serde_yaml_ng::from_str(text).unwrap()
    }

    #[test]
    fn the_pod_matches_the_fixture() {
        let pool: ProverPool = yaml(include_str!("../../fixtures/pool-gpu.yaml"));
        let expected: serde_json::Value =
            yaml(include_str!("../../fixtures/pool-gpu-prover-0.yaml"));
        let built = serde_json::to_value(prover_pod(&pool, "gpu-prover-0")).unwrap();
        assert_eq!(
            built,
            expected,
            "built:\n{}",
            serde_yaml_ng::to_string(&built).unwrap()
        );
    }

    #[test]
    fn the_template_hash_follows_the_template_and_nothing_else() {
        let pool: ProverPool = yaml(include_str!("../../fixtures/pool-gpu.yaml"));
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
        new_image.spec.template.spec.containers[0]
            .image
            .as_mut()
            .unwrap()
            .push_str("-next");
        assert_ne!(template_hash(&new_image), hash);
        let mut new_sizing = pool.clone();
        new_sizing.spec.pipeline.channel_capacity = proofpipe_crds::PipelineOverride::new("3");
        assert_ne!(template_hash(&new_sizing), hash);
        let mut new_label = pool.clone();
        new_label
            .spec
            .template
            .metadata
            .labels
            .get_or_insert_default()
            .insert("team".into(), "other".into());
        assert_ne!(
            template_hash(&new_label),
            hash,
            "labels are the template's too"
        );
        let mut new_affinity = pool.clone();
        new_affinity.spec.template.spec.scheduler_name = Some("gpu-scheduler".into());
        assert_ne!(template_hash(&new_affinity), hash);
    }

    fn prover(pod: &Pod) -> &Container {
        &pod.spec.as_ref().unwrap().containers[0]
    }

    fn mount_paths(container: &Container) -> Vec<&str> {
        container
            .volume_mounts
            .iter()
            .flatten()
            .map(|mount| mount.mount_path.as_str())
            .collect()
    }

    #[test]
    fn the_probes_follow_the_listen_address_in_the_args() {
        let args = |words: &[&str]| words.iter().map(|w| w.to_string()).collect::<Vec<_>>();
        assert_eq!(listen_port(&args(&[])), Some(METRICS_PORT));
        assert_eq!(
            listen_port(&args(&["--listen", "0.0.0.0:9200"])),
            Some(9200)
        );
        assert_eq!(
            listen_port(&args(&["--listen=[::]:9300", "--listen", "0.0.0.0:9400"])),
            Some(9400),
            "the last one wins, as clap takes it"
        );
        assert_eq!(listen_port(&args(&["--listen", "127.0.0.1:0"])), None);
        assert_eq!(
            listen_port(&args(&["--listen", "nonsense"])),
            Some(METRICS_PORT)
        );

        let mut pool: ProverPool = yaml(include_str!("../../fixtures/pool-minimal.yaml"));
        pool.spec.template.spec.containers[0].args = Some(args(&["--listen", "0.0.0.0:9200"]));
        let pod = prover_pod(&pool, "small-prover-0");
        let container = prover(&pod);
        let ports = container.ports.as_deref().unwrap();
        assert_eq!(
            (ports[0].container_port, ports[0].name.as_deref()),
            (9200, Some("metrics"))
        );
        let probe = container.liveness_probe.as_ref().unwrap();
        assert_eq!(
            probe.http_get.as_ref().unwrap().port,
            IntOrString::String("metrics".into()),
            "the probes name the port, which now is 9200"
        );

        pool.spec.template.spec.containers[0].args = Some(args(&["--listen", "127.0.0.1:0"]));
        let pod = prover_pod(&pool, "small-prover-0");
        let container = prover(&pod);
        assert!(container.liveness_probe.is_none() && container.readiness_probe.is_none());
        assert!(container.ports.as_deref().unwrap().is_empty());
    }

    #[test]
    fn scratch_space_is_added_only_where_the_template_has_none() {
        let mut pool: ProverPool = yaml(include_str!("../../fixtures/pool-minimal.yaml"));
        let pod = prover_pod(&pool, "small-prover-0");
        assert_eq!(
            mount_paths(prover(&pod)),
            ["/tmp", "/var/tmp", "/home/proofpipe/.cache"]
        );

        // A template's own mount at a scratch path wins.
        pool.spec.template.spec.containers[0].volume_mounts = Some(vec![VolumeMount {
            name: "fast".into(),
            mount_path: "/tmp/".into(),
            ..VolumeMount::default()
        }]);
        let pod = prover_pod(&pool, "small-prover-0");
        assert_eq!(
            mount_paths(prover(&pod)),
            ["/var/tmp", "/home/proofpipe/.cache", "/tmp/"]
        );

        // A writable root filesystem needs none.
        pool.spec.template.spec.containers[0].security_context = Some(SecurityContext {
            read_only_root_filesystem: Some(false),
            ..SecurityContext::default()
        });
        let pod = prover_pod(&pool, "small-prover-0");
        assert_eq!(mount_paths(prover(&pod)), ["/tmp/"]);
        assert!(
            pod.spec
                .as_ref()
                .unwrap()
                .volumes
                .iter()
                .flatten()
                .all(|v| !v.name.starts_with(RESERVED_VOLUME_PREFIX))
        );
    }

    #[test]
    fn the_contract_variables_are_the_operators_even_past_admission() {
        let mut pool: ProverPool = yaml(include_str!("../../fixtures/pool-minimal.yaml"));
        pool.spec.template.spec.containers[0].env = Some(vec![
            value_env("PROOFPIPE_POOL", "someone-elses"),
            value_env("PROOFPIPE_LOG", "debug"),
        ]);
        let pod = prover_pod(&pool, "small-prover-0");
        let pools: Vec<_> = prover(&pod)
            .env
            .iter()
            .flatten()
            .filter(|var| var.name == "PROOFPIPE_POOL")
            .collect();
        assert_eq!(pools.len(), 1);
        assert_eq!(pools[0].value.as_deref(), Some("small"));
        assert!(
            prover(&pod)
                .env
                .iter()
                .flatten()
                .any(|var| var.name == "PROOFPIPE_LOG"),
            "a user setting is kept"
        );
    }

    #[test]
    fn a_minimal_pool_gets_auto_sizing_and_only_the_daemon_argument() {
        let pool: ProverPool = yaml(include_str!("../../fixtures/pool-minimal.yaml"));
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
