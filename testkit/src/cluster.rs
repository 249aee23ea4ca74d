//! A test's own namespace on the API server named by `KUBECONFIG`, with proofpipe's CRDs
//! installed.

use std::time::{Duration, SystemTime, UNIX_EPOCH};

use k8s_openapi::NamespaceResourceScope;
use k8s_openapi::api::core::v1::Namespace;
use k8s_openapi::apiextensions_apiserver::pkg::apis::apiextensions::v1::CustomResourceDefinition;
use kube::api::{
    Api, ApiResource, DeleteParams, DynamicObject, GroupVersionKind, ObjectMeta, Patch,
    PatchParams, PostParams,
};
use kube::{Client, Resource};

use crate::wait::eventually;

/// The field manager of the objects the tests apply.
pub const FIELD_MANAGER: &str = "proofpipe-tests";

/// A client and a fresh namespace.
pub struct TestNamespace {
    /// The client, from `KUBECONFIG`.
    pub client: Client,
    /// The namespace's name.
    pub name: String,
}

impl TestNamespace {
    /// Connects through `KUBECONFIG`, installs the CRDs and creates a namespace named after
    /// `test`; `None` when there is no cluster ([`cluster_client`]).
    pub async fn create(test: &str) -> Option<Self> {
        let client = cluster_client(test).await?;
        install_crds(&client).await;
        let nanos = SystemTime::now()
            .duration_since(UNIX_EPOCH)
            .expect("clock after 1970")
            .as_nanos();
        let name = format!("{test}-{}", nanos % 1_000_000_000_000);
        let namespace = Namespace {
            metadata: ObjectMeta {
                name: Some(name.clone()),
                ..ObjectMeta::default()
            },
            ..Namespace::default()
        };
        Api::<Namespace>::all(client.clone())
            .create(&PostParams::default(), &namespace)
            .await
            .expect("create the test namespace");
        Some(Self { client, name })
    }

    /// A typed API for `K` in this namespace.
    pub fn api<K>(&self) -> Api<K>
    where
        K: Resource<Scope = NamespaceResourceScope, DynamicType = ()>,
    {
        Api::namespaced(self.client.clone(), &self.name)
    }

    /// An untyped API for the kind of `object` (its `apiVersion` and `kind`).
    pub fn api_for(&self, object: &DynamicObject) -> Api<DynamicObject> {
        let types = object
            .types
            .as_ref()
            .expect("fixtures carry apiVersion and kind");
        let (group, version) = types
            .api_version
            .split_once('/')
            .unwrap_or(("", types.api_version.as_str()));
        let gvk = GroupVersionKind::gvk(group, version, &types.kind);
        Api::namespaced_with(
            self.client.clone(),
            &self.name,
            &ApiResource::from_gvk(&gvk),
        )
    }

    /// Server-side applies `objects` into this namespace, failing the test on rejection.
    pub async fn apply(&self, objects: &[DynamicObject]) {
        let params = PatchParams::apply(FIELD_MANAGER).force();
        for object in objects {
            let name = object.metadata.name.clone().expect("fixtures are named");
            self.api_for(object)
                .patch(&name, &params, &Patch::Apply(object))
                .await
                .unwrap_or_else(|err| panic!("apply {name}: {err}"));
        }
    }

    /// Creates `object` and returns the API server's error message, failing the test if the
    /// object is accepted.
    pub async fn rejection(&self, object: &DynamicObject) -> String {
        match self
            .api_for(object)
            .create(&PostParams::default(), object)
            .await
        {
            Err(kube::Error::Api(status)) => status.message,
            other => panic!("expected the API server to reject {object:?}, got {other:?}"),
        }
    }

    /// Deletes the namespace (what is in it stays: the testenv has no namespace controller).
    pub async fn delete(self) {
        Api::<Namespace>::all(self.client)
            .delete(&self.name, &DeleteParams::default())
            .await
            .expect("delete the test namespace");
    }
}

/// A client from `KUBECONFIG`; `None`, after printing why, when it is unset. Under CI
/// (`CI=true`) a cluster test that skips is a test that did not run: it fails instead.
pub async fn cluster_client(test: &str) -> Option<Client> {
    if std::env::var_os("KUBECONFIG").is_none() {
        if std::env::var("CI").is_ok_and(|ci| ci == "true") {
            panic!("CI must run {test}: KUBECONFIG is unset");
        }
        eprintln!(
            "SKIPPED {test}: KUBECONFIG is not set. Start an API server with \
             `eval \"$(../shared/kube-testenv/start.sh)\"` to run it."
        );
        return None;
    }
    Some(
        Client::try_default()
            .await
            .expect("a client from KUBECONFIG"),
    )
}

/// Server-side applies both CRDs and waits until they are Established.
pub async fn install_crds(client: &Client) {
    let api = Api::<CustomResourceDefinition>::all(client.clone());
    let params = PatchParams::apply(FIELD_MANAGER).force();
    for crd in proofpipe_crds::crds() {
        let name = crd.metadata.name.clone().expect("CRDs are named");
        api.patch(&name, &params, &Patch::Apply(&crd))
            .await
            .unwrap_or_else(|err| panic!("apply CRD {name}: {err}"));
        eventually(
            &format!("CRD {name} Established"),
            Duration::from_secs(30),
            || async {
                let crd = api.get(&name).await.map_err(|err| err.to_string())?;
                let established = crd
                    .status
                    .and_then(|status| status.conditions)
                    .unwrap_or_default()
                    .iter()
                    .any(|c| c.type_ == "Established" && c.status == "True");
                if established {
                    Ok(())
                } else {
                    Err("not yet".into())
                }
            },
        )
        .await
        .unwrap_or_else(|err| panic!("{err}"));
    }
}
