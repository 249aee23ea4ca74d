//! Start-up check that the CRDs the operator serves are installed.

use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::{Api, Client, CustomResourceExt};
use proofpipe_crds::{ProofJob, ProverPool};

use crate::error::{Error, KubeResultExt};

/// Fails with an install hint when a CRD is missing.
pub async fn ensure_installed(client: &Client) -> Result<(), Error> {
    let api: Api<CustomResourceDefinition> = Api::all(client.clone());
    for name in [ProofJob::crd_name(), ProverPool::crd_name()] {
        let found = api
            .get_opt(name)
            .await
            .context(|| format!("reading CustomResourceDefinition {name}"))?;
        if found.is_none() {
            return Err(Error::CrdMissing {
                name: name.to_owned(),
            });
        }
    }
    Ok(())
}
