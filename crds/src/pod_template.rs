//! The pod template a ProverPool embeds: Kubernetes' own PodTemplateSpec shape (labels,
//! annotations and a full PodSpec), whose container named `prover` the operator completes
//! (ADR 0013).
//!
//! The PodSpec's schema is Kubernetes' (from k8s-openapi), so the API server prunes unknown
//! fields and checks every type before the operator sees the pool; its descriptions are left
//! out (`kubectl explain pod.spec` has them) to keep the CRD small, and the rules below add
//! what can never work for a prover pod.

use std::collections::BTreeMap;

use k8s_openapi::api::core::v1::PodSpec;
use kube::KubeSchema;
use kube::core::Rule;
use schemars::{JsonSchema, Schema};
use serde::{Deserialize, Serialize};
use serde_json::{Value, json};

/// Name of the container in `spec.template.spec.containers` that runs the prover daemon; the
/// operator sets its args, `PROOFPIPE_*` env, port and probes.
pub const PROVER_CONTAINER: &str = "prover";

/// Prefix of the environment variables the operator hands the daemon (ADR 0003). A template
/// may not set them: they would override the pod's identity and sizing.
pub const RESERVED_ENV_PREFIX: &str = "PROOFPIPE_";

/// The `PROOFPIPE_*` variables a template may still set: prover settings the operator does
/// not set and that have no part in the operator-prover contract. (`PROOFPIPE_BACKEND`,
/// `PROOFPIPE_REQUIRE_GPU`, `PROOFPIPE_URGENT_RESERVE`, `PROOFPIPE_URGENT_GPU_RESERVE`,
/// `PROOFPIPE_PRELOAD_PARAMS`, `PROOFPIPE_GPU_MEMORY` and the three `PROOFPIPE_*_SYNTHESIS`
/// have no flag; `--log` and `--params-dir` in `args` do the same as the first two.)
pub const USER_PROVER_ENV: &[&str] = &[
    "PROOFPIPE_LOG",
    "PROOFPIPE_PARAMS_DIR",
    "PROOFPIPE_BACKEND",
    "PROOFPIPE_REQUIRE_GPU",
    "PROOFPIPE_URGENT_RESERVE",
    "PROOFPIPE_URGENT_GPU_RESERVE",
    "PROOFPIPE_PRELOAD_PARAMS",
    "PROOFPIPE_GPU_MEMORY",
    "PROOFPIPE_POREP_SYNTHESIS",
    "PROOFPIPE_POST_SYNTHESIS",
    "PROOFPIPE_SNAP_SYNTHESIS",
];

/// Label keys the operator puts on prover pods; a template may not set them.
pub const RESERVED_LABELS: &[&str] = &["app.kubernetes.io/name", "app.kubernetes.io/managed-by"];

/// Prefix of the label keys the operator owns (`proofpipe.dev/pool`, `.../template-hash`).
pub const RESERVED_LABEL_PREFIX: &str = "proofpipe.dev/";

/// Prefix of the volume names the operator adds: emptyDirs for the prover's writable paths
/// when its root filesystem is read-only.
pub const RESERVED_VOLUME_PREFIX: &str = "proofpipe-";

/// The GPU resource the operator's users request; it must be a whole, uncommitted number.
pub const GPU_RESOURCE: &str = "nvidia.com/gpu";

/// Most containers (and, separately, init containers) a template may hold. Bounds the CEL
/// rules' estimated cost, which the API server checks against a budget when the CRD is applied.
pub const MAX_CONTAINERS: i64 = 16;
/// Most `env` entries per container; the same reason.
pub const MAX_ENV: i64 = 256;
/// Longest environment variable name.
pub const MAX_ENV_NAME: i64 = 256;
/// Most entries in a container's `resources.requests` or `resources.limits`.
pub const MAX_RESOURCES: i64 = 32;
/// Longest quantity string in `resources` (`"137438953472"` is 12).
pub const MAX_QUANTITY: i64 = 64;
/// Most labels, and most annotations, on the template's metadata.
pub const MAX_TEMPLATE_METADATA: i64 = 64;

/// The names a shell or a process's environment can hold without surprises (Kubernetes
/// itself now admits any printable ASCII but `=`).
pub const ENV_NAME_PATTERN: &str = "^[A-Za-z_][A-Za-z0-9_]*$";

/// The pod every prover in a pool is created from.
#[derive(Serialize, Deserialize, JsonSchema, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct ProverPodTemplate {
    /// Labels and annotations of the prover pods. The operator adds its own labels
    /// (`proofpipe.dev/pool`, `proofpipe.dev/template-hash`, `app.kubernetes.io/name`,
    /// `app.kubernetes.io/managed-by`), which a template may not set.
    #[serde(default, skip_serializing_if = "PodTemplateMetadata::is_empty")]
    pub metadata: PodTemplateMetadata,

    /// The prover pods' spec: a Kubernetes PodSpec (`kubectl explain pod.spec`). It must hold a
    /// container named `prover` with an image; the operator sets that container's args
    /// (`daemon` then the template's), `PROOFPIPE_*` env, `metrics` port and probes, and the
    /// pod's serviceAccountName and restartPolicy (Never). Security settings the template leaves
    /// unset default to the restricted Pod Security Standard: non-root, no privilege
    /// escalation, all capabilities dropped, RuntimeDefault seccomp, a read-only root
    /// filesystem with emptyDir scratch space at /tmp, /var/tmp and /home/proofpipe/.cache.
    #[schemars(transform = prover_pod_spec_schema)]
    pub spec: PodSpec,
}

/// Labels and annotations of the prover pods.
#[derive(KubeSchema, Serialize, Deserialize, Clone, Debug, Default, PartialEq)]
#[serde(rename_all = "camelCase")]
pub struct PodTemplateMetadata {
    /// Labels of the prover pods, besides the operator's.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[x_kube(validation = reserved_labels_rule())]
    #[schemars(transform = bounded_map)]
    pub labels: Option<BTreeMap<String, String>>,

    /// Annotations of the prover pods.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    #[schemars(transform = bounded_map)]
    pub annotations: Option<BTreeMap<String, String>>,
}

impl PodTemplateMetadata {
    /// Whether neither labels nor annotations are set.
    pub fn is_empty(&self) -> bool {
        self.labels.as_ref().is_none_or(BTreeMap::is_empty)
            && self.annotations.as_ref().is_none_or(BTreeMap::is_empty)
    }
}

fn bounded_map(schema: &mut Schema) {
    schema.insert("maxProperties".into(), MAX_TEMPLATE_METADATA.into());
}

fn reserved_labels_rule() -> Rule {
    let exact: Vec<String> = RESERVED_LABELS
        .iter()
        .map(|label| format!("k != '{label}'"))
        .collect();
    Rule::new(format!(
        "self.all(k, !k.startsWith('{RESERVED_LABEL_PREFIX}') && {})",
        exact.join(" && ")
    ))
    .message(
        format!(
            "labels {RESERVED_LABEL_PREFIX}* and {} are set by the operator",
            RESERVED_LABELS.join(", ")
        )
        .as_str(),
    )
}

/// Kubernetes' PodSpec schema without its descriptions, with the rules a prover pod needs.
fn prover_pod_spec_schema(schema: &mut Schema) {
    let mut spec = std::mem::replace(schema, Schema::from(true)).to_value();
    assert!(
        spec.get("$ref").is_none(),
        "the CRD generator inlines subschemas, so the PodSpec schema is whole here"
    );
    // The field's own description (from its doc comment) stays.
    let description = spec.get("description").cloned();
    strip_descriptions(&mut spec);
    if let Some(description) = description {
        spec["description"] = description;
    }
    let properties = spec["properties"]
        .as_object_mut()
        .expect("a PodSpec has properties");
    // Only `kubectl debug` adds ephemeral containers, to a running pod; a template's would
    // be refused when the pod is created.
    properties.remove("ephemeralContainers");
    for list in ["containers", "initContainers"] {
        let containers = &mut properties[list];
        containers["maxItems"] = MAX_CONTAINERS.into();
        constrain_container(&mut containers["items"]);
    }
    properties["containers"]["minItems"] = 1.into();
    // Pod-level resources (Kubernetes 1.32+) are quantities too.
    constrain_resources(&mut properties["resources"]);
    properties["volumes"]["items"]["properties"]["name"]["x-kubernetes-validations"] = json!([{
        "rule": format!("!self.startsWith('{RESERVED_VOLUME_PREFIX}')"),
        "message": format!(
            "volume names starting with {RESERVED_VOLUME_PREFIX} are the operator's (the \
             prover's scratch space)"
        ),
    }]);
    spec["x-kubernetes-validations"] = json!([
        {
            "rule": format!("self.containers.exists(c, c.name == '{PROVER_CONTAINER}')"),
            "message": format!(
                "containers must include the one named {PROVER_CONTAINER}, which runs the \
                 prover daemon (give it the image; the operator adds the rest)"
            ),
        },
        {
            "rule": "!has(self.restartPolicy)",
            "fieldPath": ".restartPolicy",
            "message": "restartPolicy is set by the operator: Never, so that a failed prover's \
                        job is requeued and its pod replaced",
        },
        {
            "rule": "!has(self.serviceAccountName) && !has(self.serviceAccount)",
            "fieldPath": ".serviceAccountName",
            "message": "serviceAccountName is set by the operator: proofpipe-prover, the account \
                        it grants what the daemon needs",
        },
        {
            "rule": "!has(self.automountServiceAccountToken) || self.automountServiceAccountToken",
            "fieldPath": ".automountServiceAccountToken",
            "message": "automountServiceAccountToken must not be false: the daemon reads and \
                        writes ProofJobs with that token",
        },
    ]);
    *schema = Schema::try_from(spec).expect("the PodSpec schema is an object");
}

/// The rules on one container, of `containers` or `initContainers`.
fn constrain_container(container: &mut Value) {
    container["x-kubernetes-validations"] = json!([{
        "rule": "has(self.image) && self.image != ''",
        "fieldPath": ".image",
        "message": "image is required",
    }]);
    let properties = &mut container["properties"];
    properties["imagePullPolicy"]["enum"] = json!(["Always", "IfNotPresent", "Never"]);
    let env = &mut properties["env"];
    env["maxItems"] = MAX_ENV.into();
    let name = &mut env["items"]["properties"]["name"];
    name["maxLength"] = MAX_ENV_NAME.into();
    name["pattern"] = ENV_NAME_PATTERN.into();
    name["x-kubernetes-validations"] = json!([reserved_env_rule()]);
    constrain_resources(&mut properties["resources"]);
}

/// The rules on a ResourceRequirements: quantities, requests within limits, whole GPUs.
fn constrain_resources(resources: &mut Value) {
    for map in ["requests", "limits"] {
        let quantities = &mut resources["properties"][map];
        quantities["maxProperties"] = MAX_RESOURCES.into();
        quantities["additionalProperties"]["maxLength"] = MAX_QUANTITY.into();
        quantities["x-kubernetes-validations"] = json!([
            {
                "rule": "self.all(k, isQuantity(string(self[k])) && quantity(string(self[k])).compareTo(quantity('0')) >= 0)",
        "message": format!("{map}: every value must be a non-negative quantity such as 500m, 64Gi or 2"),
            },
            {
                "rule": format!(
                    "!('{GPU_RESOURCE}' in self) || !isQuantity(string(self['{GPU_RESOURCE}'])) \
                     || quantity(string(self['{GPU_RESOURCE}'])).isInteger()"
                ),
                "message": format!("{map}: {GPU_RESOURCE} must be a whole number of GPUs"),
            },
        ]);
    }
    resources["x-kubernetes-validations"] = json!([
        {
            "rule": "!has(self.requests) || !has(self.limits) || self.requests.all(k, \
                     !(k in self.limits) || !isQuantity(string(self.requests[k])) \
                     || !isQuantity(string(self.limits[k])) \
                     || quantity(string(self.requests[k])).compareTo(quantity(string(self.limits[k]))) <= 0)",
            "message": "requests must not exceed limits",
        },
        {
            "rule": format!(
                "!has(self.requests) || !('{GPU_RESOURCE}' in self.requests) \
                 || (has(self.limits) && '{GPU_RESOURCE}' in self.limits \
                     && (!isQuantity(string(self.requests['{GPU_RESOURCE}'])) \
                         || !isQuantity(string(self.limits['{GPU_RESOURCE}'])) \
                         || quantity(string(self.requests['{GPU_RESOURCE}'])).compareTo(\
                            quantity(string(self.limits['{GPU_RESOURCE}']))) == 0))"
            ),
            "message": format!(
                "{GPU_RESOURCE}: GPUs cannot be overcommitted, so requests need equal limits \
                 (limits alone is enough)"
            ),
        },
    ]);
}

/// The rule that keeps the operator's `PROOFPIPE_*` variables out of a template.
fn reserved_env_rule() -> Value {
    let allowed: Vec<String> = USER_PROVER_ENV.iter().map(|n| format!("'{n}'")).collect();
    json!({
        "rule": format!(
            "!self.startsWith('{RESERVED_ENV_PREFIX}') || self in [{}]",
            allowed.join(", ")
        ),
        "message": format!(
            "{RESERVED_ENV_PREFIX}* variables are set by the operator (ADR 0003); of them a \
             template may set only {}; prover flags go in args (a --listen there moves the \
             metrics port and the probes with it)",
            USER_PROVER_ENV.join(", ")
        ),
    })
}

fn strip_descriptions(value: &mut Value) {
    match value {
        Value::Object(map) => {
            map.remove("description");
            map.values_mut().for_each(strip_descriptions);
        }
        Value::Array(items) => items.iter_mut().for_each(strip_descriptions),
        _ => {}
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_reserved_env_rule_admits_only_the_user_settings() {
        let rule = reserved_env_rule();
        let text = rule["rule"].as_str().unwrap();
        assert_eq!(
            text,
            "!self.startsWith('PROOFPIPE_') || self in ['PROOFPIPE_LOG', \
             'PROOFPIPE_PARAMS_DIR', 'PROOFPIPE_BACKEND', 'PROOFPIPE_REQUIRE_GPU', \
             'PROOFPIPE_URGENT_RESERVE', 'PROOFPIPE_URGENT_GPU_RESERVE', \
             'PROOFPIPE_PRELOAD_PARAMS', 'PROOFPIPE_GPU_MEMORY', 'PROOFPIPE_POREP_SYNTHESIS', \
             'PROOFPIPE_POST_SYNTHESIS', 'PROOFPIPE_SNAP_SYNTHESIS']"
        );
    }

    /// The variables a template may set, as the API server admits them, are the ones the docs
    /// name where they say so: no more, no fewer.
    #[test]
    fn the_docs_name_the_prover_settings_a_template_may_set() {
        let docs = [
            (
                "docs/operating.md",
                include_str!("../../docs/operating.md"),
                "(except the prover settings",
                "docs/prover-daemon.md):",
            ),
            (
                "docs/prover-daemon.md",
                include_str!("../../docs/prover-daemon.md"),
                "sets any `PROOFPIPE_*` variable but",
                "(ADR 0013)",
            ),
        ];
        for (name, text, from, to) in docs {
            let start = text
                .find(from)
                .unwrap_or_else(|| panic!("{name}: no {from:?}"));
            let len = text[start..]
                .find(to)
                .unwrap_or_else(|| panic!("{name}: no {to:?} after {from:?}"));
            let mut named: Vec<&str> = text[start..start + len]
                .split('`')
                .filter(|word| word.starts_with(RESERVED_ENV_PREFIX) && !word.ends_with('*'))
                .collect();
            named.sort_unstable();
            let mut admitted = USER_PROVER_ENV.to_vec();
            admitted.sort_unstable();
            assert_eq!(named, admitted, "{name}");
        }
    }

    #[test]
    fn the_reserved_labels_rule_names_each_label() {
        let rule = reserved_labels_rule();
        assert_eq!(
            rule.rule,
            "self.all(k, !k.startsWith('proofpipe.dev/') && k != 'app.kubernetes.io/name' \
             && k != 'app.kubernetes.io/managed-by')"
        );
    }

    #[test]
    fn a_template_reads_as_a_pod_template() {
        let template: ProverPodTemplate = serde_json::from_value(json!({
            "metadata": { "labels": { "team": "proofs" } },
            "spec": { "containers": [{ "name": "prover", "image": "p:1" }] },
        }))
        .unwrap();
        assert_eq!(template.spec.containers[0].name, PROVER_CONTAINER);
        assert!(!template.metadata.is_empty());
        let bare: ProverPodTemplate = serde_json::from_value(json!({
            "spec": { "containers": [{ "name": "prover", "image": "p:1" }] },
        }))
        .unwrap();
        assert!(bare.metadata.is_empty());
        assert!(
            serde_json::to_value(&bare)
                .unwrap()
                .get("metadata")
                .is_none(),
            "empty metadata is left out, so it does not change the template hash"
        );
    }
}
