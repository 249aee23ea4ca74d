//! The identity of the prover daemons in a namespace: ServiceAccount `proofpipe-prover` and a
//! Role of least privilege bound to it. Built here without a client; applied by the pool
//! reconciler in each namespace that has a ProverPool.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::ServiceAccount;
use k8s_openapi::api::rbac::v1::{PolicyRule, Role, RoleBinding, RoleRef, Subject};
use kube::api::ObjectMeta;

use crate::names::{FIELD_MANAGER, MANAGED_BY_LABEL, PROVER_SERVICE_ACCOUNT};

fn metadata(namespace: &str) -> ObjectMeta {
    ObjectMeta {
        name: Some(PROVER_SERVICE_ACCOUNT.into()),
        namespace: Some(namespace.into()),
        labels: Some(BTreeMap::from([(
            MANAGED_BY_LABEL.into(),
            FIELD_MANAGER.into(),
        )])),
        ..ObjectMeta::default()
    }
}

pub fn service_account(namespace: &str) -> ServiceAccount {
    ServiceAccount {
        metadata: metadata(namespace),
        ..ServiceAccount::default()
    }
}

fn rule(resources: &[&str], verbs: &[&str]) -> PolicyRule {
    rule_in("proofpipe.dev", resources, verbs)
}

fn rule_in(group: &str, resources: &[&str], verbs: &[&str]) -> PolicyRule {
    PolicyRule {
        api_groups: Some(vec![group.into()]),
        resources: Some(resources.iter().map(|r| (*r).into()).collect()),
        verbs: verbs.iter().map(|v| (*v).into()).collect(),
        ..PolicyRule::default()
    }
}

pub fn role(namespace: &str) -> Role {
    Role {
        metadata: metadata(namespace),
        rules: Some(vec![
            // The daemon's only read: a watch of the ProofJobs labelled with its pod name
            // (kube-runtime's watcher: a list, then watches; daemon/mod.rs supervise). The
            // spec and status it needs come with the watched objects, so no get.
            rule(&["proofjobs"], &["list", "watch"]),
            // It applies its verified partition proofs, the stage timings and a Filecoin
            // result to the status of the job assigned to it (server-side apply, a patch;
            // daemon/kube_api.rs apply_job_status). Which job and which entries is checked
            // by the chart's ValidatingAdmissionPolicy (ADR 0014): RBAC cannot name them.
            rule(&["proofjobs/status"], &["patch"]),
            // It applies its own entry of its pool's `status.provers` (apply_pool_status);
            // it never reads the pool: its settings come in PROOFPIPE_* env.
            rule(&["proverpools/status"], &["patch"]),
            // It tells the job's owner why proving failed with a `ProvingFailed` Event; the
            // recorder patches a repeated Event into a series instead of creating another.
            rule_in("events.k8s.io", &["events"], &["create", "patch"]),
        ]),
    }
}

pub fn role_binding(namespace: &str) -> RoleBinding {
    RoleBinding {
        metadata: metadata(namespace),
        role_ref: RoleRef {
            api_group: Some("rbac.authorization.k8s.io".into()),
            kind: "Role".into(),
            name: PROVER_SERVICE_ACCOUNT.into(),
        },
        subjects: Some(vec![Subject {
            kind: "ServiceAccount".into(),
            name: PROVER_SERVICE_ACCOUNT.into(),
            namespace: Some(namespace.into()),
            ..Subject::default()
        }]),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_role_grants_only_what_a_daemon_uses() {
        let rules = role("proving").rules.unwrap();
        let granted: Vec<(String, Vec<String>)> = rules
            .iter()
            .map(|rule| {
                (
                    rule.resources.as_ref().unwrap().join(","),
                    rule.verbs.clone(),
                )
            })
            .collect();
        let expected = [
            ("proofjobs", vec!["list", "watch"]),
            ("proofjobs/status", vec!["patch"]),
            ("proverpools/status", vec!["patch"]),
            ("events", vec!["create", "patch"]),
        ];
        assert_eq!(granted.len(), expected.len());
        for ((resource, verbs), (want_resource, want_verbs)) in granted.iter().zip(expected) {
            assert_eq!(resource, want_resource);
            assert_eq!(verbs, &want_verbs);
        }
        let groups: Vec<&str> = rules
            .iter()
            .map(|rule| rule.api_groups.as_ref().unwrap()[0].as_str())
            .collect();
        assert_eq!(
            groups,
            [
                "proofpipe.dev",
                "proofpipe.dev",
                "proofpipe.dev",
                "events.k8s.io"
            ]
        );
    }

    #[test]
    fn the_binding_names_the_service_account_of_its_namespace() {
        let binding = role_binding("proving");
        let subject = &binding.subjects.unwrap()[0];
        assert_eq!(
            (subject.name.as_str(), subject.namespace.as_deref()),
            ("proofpipe-prover", Some("proving"))
        );
        assert_eq!(
            binding.role_ref.name,
            role("proving").metadata.name.unwrap()
        );
        assert_eq!(
            service_account("proving").metadata.namespace.as_deref(),
            Some("proving")
        );
    }
}
