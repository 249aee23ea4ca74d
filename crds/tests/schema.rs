//! Properties of the generated schemas that the API server does not check for us.

use serde_json::Value;

/// Calls `visit(path, schema)` for every property schema under `schema`, depth first.
fn walk_properties(path: &str, schema: &Value, visit: &mut impl FnMut(&str, &Value)) {
    if let Some(properties) = schema.get("properties").and_then(Value::as_object) {
        for (name, property) in properties {
            let path = format!("{path}.{name}");
            visit(&path, property);
            walk_properties(&path, property, visit);
        }
    }
    for nested in ["items", "additionalProperties"] {
        if let Some(inner) = schema.get(nested) {
            walk_properties(&format!("{path}[]"), inner, visit);
        }
    }
}

/// Every CRD's root schema, named by kind.
fn schemas() -> Vec<(String, Value)> {
    proofpipe_crds::crds()
        .into_iter()
        .map(|crd| {
            let version = crd.spec.versions.into_iter().next().expect("one version");
            let schema = version
                .schema
                .and_then(|s| s.open_api_v3_schema)
                .expect("a schema");
            (
                crd.spec.names.kind,
                serde_json::to_value(schema).expect("JSON"),
            )
        })
        .collect()
}

/// Path of the PodSpec that a ProverPool's template embeds.
const EMBEDDED_POD_SPEC: &str = "ProverPool.spec.template.spec";

#[test]
fn every_field_is_documented_for_kubectl_explain() {
    let mut undocumented = Vec::new();
    for (kind, schema) in schemas() {
        walk_properties(&kind, &schema, &mut |path, property| {
            // The embedded PodSpec is Kubernetes' own, documented by `kubectl explain
            // pod.spec`; its descriptions are left out to keep the CRD small (ADR 0013).
            if path.starts_with(EMBEDDED_POD_SPEC) && path != EMBEDDED_POD_SPEC {
                return;
            }
            let description = property.get("description").and_then(Value::as_str);
            if description.is_none_or(|d| d.trim().is_empty()) {
                undocumented.push(path.to_owned());
            }
        });
    }
    assert!(
        undocumented.is_empty(),
        "fields without a description: {undocumented:#?}"
    );
}

#[test]
fn integer_formats_are_ones_kubernetes_knows() {
    // The API server warns on every apply about formats it does not know (e.g. uint32).
    let mut unknown = Vec::new();
    for (kind, schema) in schemas() {
        walk_properties(&kind, &schema, &mut |path, property| {
            if let Some(format) = property.get("format").and_then(Value::as_str)
                && !["int32", "int64", "double", "date-time"].contains(&format)
            {
                unknown.push(format!("{path}: {format}"));
            }
        });
    }
    assert!(unknown.is_empty(), "unrecognized formats: {unknown:#?}");
}

#[test]
fn circuit_description_names_every_circuit() {
    let (_, job) = &schemas()[0];
    let description = job["properties"]["spec"]["properties"]["circuit"]["description"]
        .as_str()
        .expect("circuit is documented");
    for circuit in proofpipe_crds::CIRCUITS {
        assert!(
            description.contains(circuit),
            "{circuit} missing from {description:?}"
        );
    }
}

#[test]
fn each_crd_fits_a_client_side_kubectl_apply() {
    // `kubectl apply` without --server-side stores the whole object in the
    // last-applied-configuration annotation, and annotations are limited to 256 KiB in all.
    const ANNOTATIONS_LIMIT: usize = 256 * 1024;
    for crd in proofpipe_crds::crds() {
        let name = crd.metadata.name.clone().unwrap_or_default();
        let bytes = serde_json::to_vec(&crd).expect("JSON").len();
        assert!(
            bytes < ANNOTATIONS_LIMIT * 3 / 4,
            "CRD {name} is {bytes} bytes as JSON, too close to the {ANNOTATIONS_LIMIT}-byte \
             annotation limit of a client-side kubectl apply"
        );
    }
}
