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

#[test]
fn every_field_is_documented_for_kubectl_explain() {
    let mut undocumented = Vec::new();
    for (kind, schema) in schemas() {
        walk_properties(&kind, &schema, &mut |path, property| {
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
