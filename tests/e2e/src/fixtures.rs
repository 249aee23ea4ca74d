//! The YAML objects of `tests/e2e/fixtures/`.

use std::path::PathBuf;

use kube::api::DynamicObject;
use serde::Deserialize;

/// The directory of the fixture files.
pub fn dir() -> PathBuf {
    PathBuf::from(env!("CARGO_MANIFEST_DIR")).join("fixtures")
}

/// Every document of fixture file `name` (a path relative to [`dir`]), in order.
pub fn load(name: &str) -> Vec<DynamicObject> {
    let path = dir().join(name);
    let text = std::fs::read_to_string(&path)
        .unwrap_or_else(|err| panic!("read fixture {}: {err}", path.display()));
    parse(&text).unwrap_or_else(|err| panic!("fixture {}: {err}", path.display()))
}

/// Parses a multi-document YAML stream; empty documents are skipped.
pub fn parse(text: &str) -> Result<Vec<DynamicObject>, serde_yaml_ng::Error> {
    let mut objects = Vec::new();
    for document in serde_yaml_ng::Deserializer::from_str(text) {
        let value = serde_json::Value::deserialize(document)?;
        if !value.is_null() {
            let object = serde_json::from_value(value)
                .map_err(<serde_yaml_ng::Error as serde::de::Error>::custom)?;
            objects.push(object);
        }
    }
    Ok(objects)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn multi_document_streams_skip_empty_documents() {
        let objects = parse(
            "---\napiVersion: v1\nkind: ConfigMap\nmetadata: {name: a}\n---\n---\n\
             apiVersion: proofpipe.dev/v1alpha1\nkind: ProofJob\nmetadata: {name: b}\nspec: {}\n",
        )
        .unwrap();
        let names: Vec<_> = objects
            .iter()
            .map(|o| o.metadata.name.clone().unwrap())
            .collect();
        assert_eq!(names, ["a", "b"]);
        assert_eq!(objects[1].types.as_ref().unwrap().kind, "ProofJob");
    }

    #[test]
    fn every_fixture_parses() {
        let mut files = Vec::new();
        for sub in ["", "invalid", "runner"] {
            for entry in std::fs::read_dir(dir().join(sub)).unwrap() {
                let path = entry.unwrap().path();
                if path.extension().is_some_and(|ext| ext == "yaml") {
                    files.push(path.strip_prefix(dir()).unwrap().display().to_string());
                }
            }
        }
        assert!(files.len() >= 6, "{files:?}");
        for file in files {
            assert!(!load(&file).is_empty(), "{file} has no objects");
        }
    }
}
