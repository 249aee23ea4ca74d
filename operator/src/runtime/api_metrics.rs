//! Counts the requests the operator sends to the API server, by verb and resource: its load
//! on a control plane shared with other teams, and the scale benchmark's measure.

use kube::Client;
use kube::client::Body;
use prometheus::IntCounterVec;

/// A client that sends through `client` and counts each request in `counter`.
pub fn counted(client: Client, counter: IntCounterVec) -> Client {
    let namespace = client.default_namespace().to_owned();
    let service = tower::service_fn(move |request: http::Request<Body>| {
        let (verb, resource) = classify(
            request.method(),
            request.uri().path(),
            request.uri().query(),
        );
        counter.with_label_values(&[verb, &resource]).inc();
        let client = client.clone();
        async move { client.send(request).await }
    });
    Client::new(service, namespace)
}

/// The Kubernetes verb and resource (with its subresource, e.g. `proofjobs/status`) of a
/// request, from its method and path.
pub fn classify(method: &http::Method, path: &str, query: Option<&str>) -> (&'static str, String) {
    let segments: Vec<&str> = path.split('/').filter(|s| !s.is_empty()).collect();
    // /api/v1/... or /apis/group/version/...
    let rest = match segments.first() {
        Some(&"api") => segments.get(2..),
        Some(&"apis") => segments.get(3..),
        _ => None,
    }
    .unwrap_or_default();
    let rest = match rest {
        ["namespaces", _, resource, more @ ..] => [&[*resource][..], more].concat(),
        other => other.to_vec(),
    };
    let resource = match rest.as_slice() {
        [] => "other".to_owned(),
        [resource] | [resource, _] => (*resource).to_owned(),
        [resource, _, sub, ..] => format!("{resource}/{sub}"),
    };
    let named = rest.len() >= 2;
    let watch = query.is_some_and(|q| q.split('&').any(|p| p == "watch=true" || p == "watch=1"));
    let verb = match *method {
        http::Method::GET if watch => "watch",
        http::Method::GET if named => "get",
        http::Method::GET => "list",
        http::Method::POST => "create",
        http::Method::PUT => "update",
        http::Method::PATCH => "patch",
        http::Method::DELETE => "delete",
        _ => "other",
    };
    (verb, resource)
}

#[cfg(test)]
mod tests {
    use http::Method;

    use super::*;

    #[test]
    fn requests_are_named_as_the_api_server_names_them() {
        let cases = [
            (
                Method::GET,
                "/apis/proofpipe.dev/v1alpha1/proofjobs",
                Some("watch=true&resourceVersion=5"),
                ("watch", "proofjobs"),
            ),
            (
                Method::GET,
                "/apis/proofpipe.dev/v1alpha1/namespaces/ns/proofjobs",
                None,
                ("list", "proofjobs"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/ns/pods/gpu-prover-0",
                None,
                ("get", "pods"),
            ),
            (
                Method::PATCH,
                "/apis/proofpipe.dev/v1alpha1/namespaces/ns/proofjobs/a/status",
                Some("fieldManager=x"),
                ("patch", "proofjobs/status"),
            ),
            (
                Method::POST,
                "/api/v1/namespaces/ns/pods",
                None,
                ("create", "pods"),
            ),
            (
                Method::DELETE,
                "/api/v1/namespaces/ns/pods/p",
                None,
                ("delete", "pods"),
            ),
            (
                Method::PATCH,
                "/apis/proofpipe.dev/v1alpha1/namespaces/ns/proverpools/gpu/scale",
                None,
                ("patch", "proverpools/scale"),
            ),
            (
                Method::GET,
                "/api/v1/namespaces/ns",
                None,
                ("get", "namespaces"),
            ),
            (Method::GET, "/version", None, ("list", "other")),
        ];
        for (method, path, query, (verb, resource)) in cases {
            let got = classify(&method, path, query);
            assert_eq!((got.0, got.1.as_str()), (verb, resource), "{method} {path}");
        }
    }
}
