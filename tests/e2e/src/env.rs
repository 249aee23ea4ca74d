//! A container's environment as a kubelet resolves it: plain values plus the Downward API
//! sources the prover pods use. Sources the runner cannot honour are errors, never silently
//! empty variables.

use k8s_openapi::api::core::v1::{Container, EnvVar, EnvVarSource, Pod};

use crate::quantity::{InvalidQuantity, parse_bytes};

/// The IP the runner reports for every pod: its processes share the host's network.
pub const POD_IP: &str = "127.0.0.1";

/// Why a container's environment cannot be built.
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
pub enum EnvError {
    /// A `valueFrom` the runner does not emulate (ConfigMaps, Secrets, other fields).
    #[error("env {name}: {source_kind} is not emulated by the pod runner")]
    Unsupported {
        /// The variable.
        name: String,
        /// What it asked for, e.g. `fieldRef status.hostIPs`.
        source_kind: String,
    },
    /// A quantity in the spec that does not parse.
    #[error("env {name}: {error}")]
    Quantity {
        /// The variable.
        name: String,
        /// The parse error.
        error: InvalidQuantity,
    },
}

/// Resolves `container`'s `env` in order, as `(name, value)` pairs.
///
/// `node_memory_bytes` stands in for `limits.memory` when the container sets no memory limit,
/// as a kubelet substitutes the node's allocatable memory.
pub fn resolve_env(
    pod: &Pod,
    container: &Container,
    node_memory_bytes: u64,
) -> Result<Vec<(String, String)>, EnvError> {
    container
        .env
        .iter()
        .flatten()
        .map(|var| {
            Ok((
                var.name.clone(),
                resolve_var(pod, container, var, node_memory_bytes)?,
            ))
        })
        .collect()
}

fn resolve_var(
    pod: &Pod,
    container: &Container,
    var: &EnvVar,
    node_memory_bytes: u64,
) -> Result<String, EnvError> {
    let Some(source) = &var.value_from else {
        return Ok(var.value.clone().unwrap_or_default());
    };
    let unsupported = |source_kind: String| EnvError::Unsupported {
        name: var.name.clone(),
        source_kind,
    };
    match source {
        EnvVarSource {
            field_ref: Some(field),
            ..
        } => pod_field(pod, &field.field_path)
            .ok_or_else(|| unsupported(format!("fieldRef {}", field.field_path))),
        EnvVarSource {
            resource_field_ref: Some(resource),
            ..
        } => {
            if resource
                .container_name
                .as_deref()
                .is_some_and(|name| !name.is_empty() && name != container.name)
            {
                return Err(unsupported("resourceFieldRef of another container".into()));
            }
            let quantity_of = |value: &str| {
                parse_bytes(value).map_err(|error| EnvError::Quantity {
                    name: var.name.clone(),
                    error,
                })
            };
            let resources = container.resources.as_ref();
            let bytes = match resource.resource.as_str() {
                "limits.memory" => resources
                    .and_then(|r| r.limits.as_ref())
                    .and_then(|limits| limits.get("memory"))
                    .map(|q| quantity_of(&q.0))
                    .transpose()?
                    .unwrap_or(node_memory_bytes),
                "requests.memory" => resources
                    .and_then(|r| r.requests.as_ref())
                    .and_then(|requests| requests.get("memory"))
                    .map(|q| quantity_of(&q.0))
                    .transpose()?
                    .unwrap_or(0),
                other => return Err(unsupported(format!("resourceFieldRef {other}"))),
            };
            let divisor = match &resource.divisor {
                Some(divisor) => quantity_of(&divisor.0)?.max(1),
                None => 1,
            };
            Ok(bytes.div_ceil(divisor).to_string())
        }
        EnvVarSource {
            config_map_key_ref: Some(_),
            ..
        } => Err(unsupported("configMapKeyRef".into())),
        EnvVarSource {
            secret_key_ref: Some(_),
            ..
        } => Err(unsupported("secretKeyRef".into())),
        _ => Err(unsupported("this valueFrom".into())),
    }
}

/// The Downward API fields the runner knows, with the values it reports for them.
fn pod_field(pod: &Pod, path: &str) -> Option<String> {
    let spec = pod.spec.as_ref();
    match path {
        "metadata.name" => pod.metadata.name.clone(),
        "metadata.namespace" => pod.metadata.namespace.clone(),
        "metadata.uid" => pod.metadata.uid.clone(),
        "spec.nodeName" => spec.and_then(|s| s.node_name.clone()),
        "spec.serviceAccountName" => spec.and_then(|s| s.service_account_name.clone()),
        "status.podIP" | "status.hostIP" => Some(POD_IP.to_owned()),
        _ => None,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn pod(container: serde_json::Value) -> (Pod, Container) {
        let pod: Pod = serde_json::from_value(serde_json::json!({
            "metadata": { "name": "gpu-prover-0", "namespace": "e2e", "uid": "u-1" },
            "spec": { "nodeName": "testenv-node", "serviceAccountName": "proofpipe-prover",
                      "containers": [container] },
        }))
        .unwrap();
        let container = pod.spec.as_ref().unwrap().containers[0].clone();
        (pod, container)
    }

    fn resolve(container: serde_json::Value) -> Result<Vec<(String, String)>, EnvError> {
        let (pod, container) = pod(container);
        resolve_env(&pod, &container, 8 << 30)
    }

    fn pairs(items: &[(&str, &str)]) -> Vec<(String, String)> {
        items
            .iter()
            .map(|(k, v)| (k.to_string(), v.to_string()))
            .collect()
    }

    #[test]
    fn plain_values_and_downward_api_fields_in_order() {
        let env = resolve(serde_json::json!({
            "name": "prover",
            "env": [
                { "name": "PLAIN", "value": "x" },
                { "name": "EMPTY" },
                { "name": "POD", "valueFrom": { "fieldRef": { "fieldPath": "metadata.name" } } },
                { "name": "NS", "valueFrom": { "fieldRef": { "fieldPath": "metadata.namespace" } } },
                { "name": "NODE", "valueFrom": { "fieldRef": { "fieldPath": "spec.nodeName" } } },
                { "name": "IP", "valueFrom": { "fieldRef": { "fieldPath": "status.podIP" } } },
            ],
        }));
        assert_eq!(
            env,
            Ok(pairs(&[
                ("PLAIN", "x"),
                ("EMPTY", ""),
                ("POD", "gpu-prover-0"),
                ("NS", "e2e"),
                ("NODE", "testenv-node"),
                ("IP", "127.0.0.1"),
            ]))
        );
    }

    #[test]
    fn memory_limit_with_divisor_rounds_up() {
        let env = resolve(serde_json::json!({
            "name": "prover",
            "resources": { "limits": { "memory": "1536Mi" } },
            "env": [
                { "name": "BYTES", "valueFrom": { "resourceFieldRef": {
                    "resource": "limits.memory", "divisor": "1" } } },
                { "name": "DEFAULT_DIVISOR", "valueFrom": { "resourceFieldRef": {
                    "resource": "limits.memory" } } },
                { "name": "GIB", "valueFrom": { "resourceFieldRef": {
                    "containerName": "prover", "resource": "limits.memory", "divisor": "1Gi" } } },
            ],
        }));
        assert_eq!(
            env,
            Ok(pairs(&[
                ("BYTES", "1610612736"),
                ("DEFAULT_DIVISOR", "1610612736"),
                ("GIB", "2"),
            ]))
        );
    }

    #[test]
    fn missing_memory_limit_is_the_node_memory() {
        let env = resolve(serde_json::json!({
            "name": "prover",
            "env": [{ "name": "M", "valueFrom": { "resourceFieldRef": { "resource": "limits.memory" } } }],
        }));
        assert_eq!(env, Ok(pairs(&[("M", "8589934592")])));
    }

    #[test]
    fn unsupported_sources_are_errors_naming_the_variable() {
        for (source, kind) in [
            (
                serde_json::json!({ "fieldRef": { "fieldPath": "metadata.labels['a']" } }),
                "fieldRef metadata.labels['a']",
            ),
            (
                serde_json::json!({ "configMapKeyRef": { "name": "c", "key": "k" } }),
                "configMapKeyRef",
            ),
            (
                serde_json::json!({ "secretKeyRef": { "name": "s", "key": "k" } }),
                "secretKeyRef",
            ),
            (
                serde_json::json!({ "resourceFieldRef": { "resource": "limits.cpu" } }),
                "resourceFieldRef limits.cpu",
            ),
        ] {
            let err = resolve(serde_json::json!({
                "name": "prover", "env": [{ "name": "V", "valueFrom": source }],
            }))
            .unwrap_err();
            assert_eq!(
                err.to_string(),
                format!("env V: {kind} is not emulated by the pod runner")
            );
        }
    }

    #[test]
    fn bad_memory_quantity_is_an_error() {
        let err = resolve(serde_json::json!({
            "name": "prover",
            "resources": { "limits": { "memory": "lots" } },
            "env": [{ "name": "M", "valueFrom": { "resourceFieldRef": { "resource": "limits.memory" } } }],
        }))
        .unwrap_err();
        assert!(
            matches!(err, EnvError::Quantity { ref name, .. } if name == "M"),
            "{err}"
        );
    }
}
