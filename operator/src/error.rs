//! The crate's one error type. Every Kubernetes API call carries the action it was part of
//! ("patching status of ProofJob ns/name"), so a log line or a Warning Event says what failed.

use std::net::SocketAddr;

/// Everything that can go wrong in the operator.
#[derive(Debug, thiserror::Error)]
pub enum Error {
    /// A Kubernetes API call failed; `action` says which call on which object.
    #[error("{action}")]
    Kube {
        action: String,
        #[source]
        source: kube::Error,
    },

    /// A CRD the operator serves is not installed in the cluster.
    #[error(
        "CustomResourceDefinition {name} is not installed; install the CRDs with \
         `proofpipe-operator crds | kubectl apply --server-side -f -`"
    )]
    CrdMissing { name: String },

    /// A namespaced object came without a namespace (only a hand-built object can).
    #[error("{kind} {name} has no namespace")]
    MissingNamespace { kind: String, name: String },

    /// Another replica holds the leader Lease now, or no renewal succeeded within the renew
    /// deadline; this replica must stop reconciling.
    #[error("lost the leader Lease {namespace}/{name}: {reason}")]
    LeaseLost {
        namespace: String,
        name: String,
        reason: String,
    },

    /// A call of a leader-election round did not answer in time.
    #[error("the Lease API call did not answer within {0:?}")]
    LeaseTimeout(std::time::Duration),

    /// A controller write refused because this replica may not act as the leader now: it
    /// lost the Lease, or its renew deadline passed (a pause), or it released the Lease.
    #[error("refused {method} {path}: this replica is not the leader")]
    NotLeader { method: String, path: String },

    /// The HTTP endpoint (metrics, health) could not be served.
    #[error("serving /metrics and health checks on {addr}")]
    Serve {
        addr: SocketAddr,
        #[source]
        source: std::io::Error,
    },

    /// A controller stopped although it should run until the process ends.
    #[error("the {0} controller stopped")]
    ControllerStopped(std::borrow::Cow<'static, str>),

    /// Registering a Prometheus metric failed (a name clash: a programming error).
    #[error("registering metrics")]
    Metrics(#[from] prometheus::Error),
}

impl Error {
    /// Whether this is the API server refusing a write because the object changed since it
    /// was read: a stale `resourceVersion` (409). The watch brings the new version; nothing
    /// is wrong.
    pub fn is_conflict(&self) -> bool {
        match self {
            Self::Kube {
                source: kube::Error::Api(status),
                ..
            } => status.is_conflict(),
            _ => false,
        }
    }

    /// The error and all its causes, joined by `: `, for logs and Warning Events.
    pub fn chain(&self) -> String {
        let mut text = self.to_string();
        let mut source = std::error::Error::source(self);
        while let Some(cause) = source {
            text.push_str(": ");
            text.push_str(&cause.to_string());
            source = cause.source();
        }
        text
    }
}

/// Attaches the action to a failed Kubernetes API call.
pub trait KubeResultExt<T> {
    /// Wraps the error with `action()`, e.g. `"patching status of ProofJob ns/name"`.
    fn context(self, action: impl FnOnce() -> String) -> Result<T, Error>;
}

impl<T> KubeResultExt<T> for Result<T, kube::Error> {
    fn context(self, action: impl FnOnce() -> String) -> Result<T, Error> {
        self.map_err(|source| Error::Kube {
            action: action(),
            source,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn api_error(code: u16, reason: &str) -> kube::Error {
        let status =
            kube::core::Status::failure("the object has been modified", reason).with_code(code);
        kube::Error::Api(Box::new(status))
    }

    #[test]
    fn chain_lists_every_cause() {
        let error: Result<(), _> = Err(api_error(409, "Conflict"));
        let error = error
            .context(|| "patching status of ProofJob ns/a".into())
            .unwrap_err();
        let chain = error.chain();
        assert!(
            chain.starts_with("patching status of ProofJob ns/a: "),
            "{chain}"
        );
        assert!(chain.contains("the object has been modified"), "{chain}");
    }

    #[test]
    fn only_409_is_a_conflict() {
        let conflict: Result<(), _> = Err(api_error(409, "Conflict"));
        assert!(conflict.context(String::new).unwrap_err().is_conflict());
        let invalid: Result<(), _> = Err(api_error(422, "Invalid"));
        assert!(
            !invalid.context(String::new).unwrap_err().is_conflict(),
            "an invalid write of ours is a real error"
        );
        let not_found: Result<(), _> = Err(api_error(404, "NotFound"));
        assert!(!not_found.context(String::new).unwrap_err().is_conflict());
    }
}
