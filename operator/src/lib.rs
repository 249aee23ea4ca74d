//! Library side of the proofpipe operator: rendering the `proofpipe.dev` CRDs.

/// Both CustomResourceDefinitions as one multi-document YAML stream, ProofJob first: the
/// output of `proofpipe-operator crds`, and the content of `crds/proofpipe-crds.yaml`.
pub fn crds_yaml() -> Result<String, serde_yaml_ng::Error> {
    let documents = proofpipe_crds::crds()
        .iter()
        .map(serde_yaml_ng::to_string)
        .collect::<Result<Vec<_>, _>>()?;
    Ok(documents
        .iter()
        .map(|document| format!("---\n{document}"))
        .collect())
}
