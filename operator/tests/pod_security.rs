//! The prover pods the operator builds meet the restricted Pod Security Standard
//! (https://kubernetes.io/docs/concepts/security/pod-security-standards/), checked by a small
//! pure checker of that profile's rules (baseline's included), itself tested on pods that
//! break each rule.

use k8s_openapi::api::core::v1::{
    Capabilities, Container, ContainerPort, HostPathVolumeSource, Pod, PodSecurityContext,
    SeccompProfile, SecurityContext, Sysctl, Volume,
};
use proofpipe_crds::ProverPool;
use proofpipe_operator::pool::pod_spec::prover_pod;

/// Sysctls the baseline profile allows.
const SAFE_SYSCTLS: &[&str] = &[
    "kernel.shm_rmid_forced",
    "net.ipv4.ip_local_port_range",
    "net.ipv4.ip_unprivileged_port_start",
    "net.ipv4.tcp_syncookies",
    "net.ipv4.ping_group_range",
    "net.ipv4.ip_local_reserved_ports",
    "net.ipv4.tcp_keepalive_time",
    "net.ipv4.tcp_fin_timeout",
    "net.ipv4.tcp_keepalive_intvl",
    "net.ipv4.tcp_keepalive_probes",
];

/// Volume types the restricted profile allows.
const RESTRICTED_VOLUMES: &[&str] = &[
    "configMap",
    "csi",
    "downwardAPI",
    "emptyDir",
    "ephemeral",
    "persistentVolumeClaim",
    "projected",
    "secret",
];

/// SELinux types the baseline profile allows (besides unset).
const SELINUX_TYPES: &[&str] = &[
    "container_t",
    "container_init_t",
    "container_kvm_t",
    "container_engine_t",
];

/// What in `pod` breaks the restricted profile, one line per rule and container.
fn restricted_violations(pod: &Pod) -> Vec<String> {
    let mut found = Vec::new();
    let spec = pod.spec.as_ref().expect("a pod spec");
    let pod_context = spec.security_context.clone().unwrap_or_default();
    let containers: Vec<&Container> = spec
        .init_containers
        .iter()
        .flatten()
        .chain(&spec.containers)
        .collect();

    // Baseline: host namespaces.
    for (name, set) in [
        ("hostNetwork", spec.host_network),
        ("hostPID", spec.host_pid),
        ("hostIPC", spec.host_ipc),
    ] {
        if set == Some(true) {
            found.push(format!("{name} is true"));
        }
    }
    // Baseline: HostProcess, SELinux, sysctls, seccomp at pod level.
    if pod_context
        .windows_options
        .as_ref()
        .and_then(|w| w.host_process)
        == Some(true)
    {
        found.push("pod: windowsOptions.hostProcess".into());
    }
    if let Some(selinux) = &pod_context.se_linux_options {
        check_selinux("pod", selinux, &mut found);
    }
    for Sysctl { name, .. } in pod_context.sysctls.iter().flatten() {
        if !SAFE_SYSCTLS.contains(&name.as_str()) {
            found.push(format!("pod: unsafe sysctl {name}"));
        }
    }
    if let Some(profile) = &pod_context.app_armor_profile {
        check_app_armor("pod", &profile.type_, &mut found);
    }

    // Restricted: volume types (baseline: no hostPath).
    for volume in spec.volumes.iter().flatten() {
        let value = serde_json::to_value(volume).expect("a volume serializes");
        let kind = value
            .as_object()
            .expect("an object")
            .keys()
            .find(|key| *key != "name")
            .cloned()
            .unwrap_or_default();
        if !RESTRICTED_VOLUMES.contains(&kind.as_str()) {
            found.push(format!("volume {}: type {kind}", volume.name));
        }
    }

    let pod_non_root = pod_context.run_as_non_root == Some(true);
    let pod_seccomp = pod_context
        .seccomp_profile
        .as_ref()
        .map(|p| p.type_.as_str());
    if pod_seccomp == Some("Unconfined") {
        found.push("pod: seccompProfile Unconfined".into());
    }
    if pod_context.run_as_user == Some(0) {
        found.push("pod: runAsUser 0".into());
    }
    for container in containers {
        let name = &container.name;
        let context = container.security_context.clone().unwrap_or_default();
        // Baseline.
        if context.privileged == Some(true) {
            found.push(format!("{name}: privileged"));
        }
        if context
            .windows_options
            .as_ref()
            .and_then(|w| w.host_process)
            == Some(true)
        {
            found.push(format!("{name}: windowsOptions.hostProcess"));
        }
        if let Some(selinux) = &context.se_linux_options {
            check_selinux(name, selinux, &mut found);
        }
        if context
            .proc_mount
            .as_deref()
            .is_some_and(|m| m != "Default")
        {
            found.push(format!("{name}: procMount"));
        }
        if let Some(profile) = &context.app_armor_profile {
            check_app_armor(name, &profile.type_, &mut found);
        }
        for port in container.ports.iter().flatten() {
            if port.host_port.is_some_and(|p| p != 0) {
                found.push(format!("{name}: hostPort"));
            }
        }
        // Restricted.
        if context.allow_privilege_escalation != Some(false) {
            found.push(format!("{name}: allowPrivilegeEscalation is not false"));
        }
        match context.run_as_non_root {
            Some(false) => found.push(format!("{name}: runAsNonRoot false")),
            None if !pod_non_root => found.push(format!("{name}: runAsNonRoot unset")),
            _ => {}
        }
        if context.run_as_user == Some(0) {
            found.push(format!("{name}: runAsUser 0"));
        }
        match context.seccomp_profile.as_ref().map(|p| p.type_.as_str()) {
            Some("RuntimeDefault" | "Localhost") => {}
            Some(other) => found.push(format!("{name}: seccompProfile {other}")),
            None if !matches!(pod_seccomp, Some("RuntimeDefault" | "Localhost")) => {
                found.push(format!("{name}: seccompProfile unset"));
            }
            None => {}
        }
        let capabilities = context.capabilities.clone().unwrap_or_default();
        if !capabilities.drop.iter().flatten().any(|c| c == "ALL") {
            found.push(format!("{name}: capabilities do not drop ALL"));
        }
        for added in capabilities.add.iter().flatten() {
            if added != "NET_BIND_SERVICE" {
                found.push(format!("{name}: adds capability {added}"));
            }
        }
    }
    found
}

fn check_selinux(
    who: &str,
    options: &k8s_openapi::api::core::v1::SELinuxOptions,
    found: &mut Vec<String>,
) {
    if options
        .type_
        .as_deref()
        .is_some_and(|t| !SELINUX_TYPES.contains(&t))
    {
        found.push(format!("{who}: seLinuxOptions.type"));
    }
    if options.user.is_some() || options.role.is_some() {
        found.push(format!("{who}: seLinuxOptions user or role"));
    }
}

fn check_app_armor(who: &str, kind: &str, found: &mut Vec<String>) {
    if !matches!(kind, "RuntimeDefault" | "Localhost") {
        found.push(format!("{who}: appArmorProfile {kind}"));
    }
}

fn pool(yaml: &str) -> ProverPool {
    serde_yaml_ng::from_str(yaml).expect("a ProverPool")
}

fn gpu_pool() -> ProverPool {
    pool(include_str!("../fixtures/pool-gpu.yaml"))
}

/// A pool whose template adds an init container and a sidecar, setting no security fields.
fn pool_with_sidecars() -> ProverPool {
    let mut pool = gpu_pool();
    let spec = &mut pool.spec.template.spec;
    let plain = |name: &str| Container {
        name: name.into(),
        image: Some(format!("registry.example/{name}:1")),
        ..Container::default()
    };
    spec.init_containers = Some(vec![plain("fetch-params")]);
    spec.containers.push(plain("log-shipper"));
    pool
}

#[test]
fn prover_pods_meet_the_restricted_profile() {
    for (what, pool) in [
        ("pool-gpu.yaml", gpu_pool()),
        (
            "pool-minimal.yaml",
            pool(include_str!("../fixtures/pool-minimal.yaml")),
        ),
        ("a pool with sidecars", pool_with_sidecars()),
    ] {
        let pod = prover_pod(&pool, "p-prover-0");
        assert_eq!(
            restricted_violations(&pod),
            Vec::<String>::new(),
            "{what}: {}",
            serde_yaml_ng::to_string(&pod).unwrap()
        );
    }
}

#[test]
fn the_checker_finds_each_broken_rule() {
    let compliant = prover_pod(&pool_with_sidecars(), "p-prover-0");
    assert!(restricted_violations(&compliant).is_empty());
    type Breach = (&'static str, fn(&mut Pod), &'static str);
    let breaches: &[Breach] = &[
        (
            "no pod security context",
            |pod| spec(pod).security_context = None,
            "prover: runAsNonRoot unset",
        ),
        (
            "seccomp only at pod level, removed",
            |pod| spec(pod).security_context.as_mut().unwrap().seccomp_profile = None,
            "log-shipper: seccompProfile unset",
        ),
        (
            "unconfined container",
            |pod| {
                context(pod, 0).seccomp_profile = Some(SeccompProfile {
                    type_: "Unconfined".into(),
                    localhost_profile: None,
                })
            },
            "prover: seccompProfile Unconfined",
        ),
        (
            "root user",
            |pod| {
                spec(pod).security_context = Some(PodSecurityContext {
                    run_as_user: Some(0),
                    ..spec(pod).security_context.clone().unwrap()
                })
            },
            "pod: runAsUser 0",
        ),
        (
            "escalation allowed",
            |pod| context(pod, 1).allow_privilege_escalation = None,
            "log-shipper: allowPrivilegeEscalation is not false",
        ),
        (
            "capabilities kept",
            |pod| context(pod, 0).capabilities = None,
            "prover: capabilities do not drop ALL",
        ),
        (
            "capability added",
            |pod| {
                context(pod, 0).capabilities = Some(Capabilities {
                    add: Some(vec!["SYS_ADMIN".into()]),
                    drop: Some(vec!["ALL".into()]),
                })
            },
            "prover: adds capability SYS_ADMIN",
        ),
        (
            "privileged",
            |pod| context(pod, 0).privileged = Some(true),
            "prover: privileged",
        ),
        (
            "host network",
            |pod| spec(pod).host_network = Some(true),
            "hostNetwork is true",
        ),
        (
            "host port",
            |pod| {
                spec(pod).containers[0].ports = Some(vec![ContainerPort {
                    container_port: 9100,
                    host_port: Some(9100),
                    ..ContainerPort::default()
                }])
            },
            "prover: hostPort",
        ),
        (
            "hostPath",
            |pod| {
                spec(pod).volumes.get_or_insert_default().push(Volume {
                    name: "params".into(),
                    host_path: Some(HostPathVolumeSource {
                        path: "/var/tmp".into(),
                        type_: None,
                    }),
                    ..Volume::default()
                })
            },
            "volume params: type hostPath",
        ),
        (
            "unsafe sysctl",
            |pod| {
                spec(pod).security_context.as_mut().unwrap().sysctls = Some(vec![Sysctl {
                    name: "kernel.msgmax".into(),
                    value: "1".into(),
                }])
            },
            "pod: unsafe sysctl kernel.msgmax",
        ),
        (
            "init container escalates",
            |pod| {
                let init = &mut spec(pod).init_containers.as_mut().unwrap()[0];
                init.security_context = Some(SecurityContext::default());
            },
            "fetch-params: allowPrivilegeEscalation is not false",
        ),
    ];
    for (what, breach, expected) in breaches {
        let mut pod = compliant.clone();
        breach(&mut pod);
        let found = restricted_violations(&pod);
        assert!(
            found.iter().any(|line| line == expected),
            "{what}: expected {expected:?} among {found:?}"
        );
    }
}

#[test]
fn the_operator_keeps_what_a_template_sets_explicitly() {
    // Defaults fill only what the template leaves unset; a namespace that allows more (a
    // privileged one, for a hostPath) keeps its choice, and its admission decides.
    let mut pool = gpu_pool();
    pool.spec.template.spec.host_network = Some(true);
    let pod = prover_pod(&pool, "p-prover-0");
    assert_eq!(restricted_violations(&pod), ["hostNetwork is true"]);
}

fn spec(pod: &mut Pod) -> &mut k8s_openapi::api::core::v1::PodSpec {
    pod.spec.as_mut().unwrap()
}

fn context(pod: &mut Pod, container: usize) -> &mut SecurityContext {
    spec(pod).containers[container]
        .security_context
        .get_or_insert_default()
}
