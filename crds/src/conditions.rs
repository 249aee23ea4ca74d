//! The constraints Kubernetes puts on a standard `metav1.Condition`, added to the status
//! schemas: k8s-openapi's schema of `Condition` carries the types but not the kubebuilder
//! markers (enum, patterns, lengths) of the Go type.

use schemars::Schema;
use serde_json::json;

/// `type` of a condition: a qualified name in CamelCase, e.g. `Complete` or `example.com/Ready`.
pub const CONDITION_TYPE_PATTERN: &str = r"^([a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*/)?(([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9])$";

/// `reason` of a condition: a CamelCase word, as Kubernetes requires.
pub const CONDITION_REASON_PATTERN: &str = r"^[A-Za-z]([A-Za-z0-9_,:]*[A-Za-z0-9_])?$";

/// Applies Condition's constraints to the schema of an (optional) list of conditions.
pub(crate) fn condition_constraints(schema: &mut Schema) {
    let items = schema
        .get_mut("items")
        .and_then(|items| items.get_mut("properties"))
        .and_then(|properties| properties.as_object_mut())
        .expect("a list of Conditions has item properties");
    let constraints = [
        ("status", json!({ "enum": ["True", "False", "Unknown"] })),
        (
            "type",
            json!({ "maxLength": 316, "pattern": CONDITION_TYPE_PATTERN }),
        ),
        (
            "reason",
            json!({ "minLength": 1, "maxLength": 1024, "pattern": CONDITION_REASON_PATTERN }),
        ),
        ("message", json!({ "maxLength": 32768 })),
        ("observedGeneration", json!({ "minimum": 0 })),
    ];
    for (field, extra) in constraints {
        let property = items
            .get_mut(field)
            .and_then(|p| p.as_object_mut())
            .unwrap_or_else(|| panic!("Condition has {field}"));
        for (key, value) in extra.as_object().expect("an object") {
            property.insert(key.clone(), value.clone());
        }
    }
}
