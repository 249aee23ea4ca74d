//! The ProverPool CRD against a real API server: validation messages, pools that can never
//! work refused by field, status and the scale subresource. Needs `KUBECONFIG` (see
//! api_server.rs); without it each test says why it is skipped and passes.

mod support;

use support::*;

#[tokio::test]
async fn invalid_prover_pools_are_rejected() {
    let Some(cluster) = Cluster::connect("invalid-pools").await else {
        return;
    };
    let knob_message = "must be \"auto\" or a positive integer";
    let cases = [
        (json!({ "template": null }), "spec.template: Required value"),
        (
            json!({ "template": {} }),
            "spec.template.spec: Required value",
        ),
        (
            json!({ "replicas": -1 }),
            "spec.replicas in body should be greater than or equal to 0",
        ),
        (
            json!({ "autoscaling": { "minReplicas": 3, "maxReplicas": 2 } }),
            "minReplicas must not exceed maxReplicas",
        ),
        (
            json!({ "autoscaling": { "maxReplicas": 0 } }),
            "spec.autoscaling.maxReplicas in body should be greater than or equal to 1",
        ),
        (
            json!({ "autoscaling": { "maxReplicas": 2, "targetQueuedPartitionsPerProver": 0 } }),
            "spec.autoscaling.targetQueuedPartitionsPerProver in body should be greater than or equal to 1",
        ),
        (
            json!({ "pipeline": { "partitionWorkers": "abc" } }),
            knob_message,
        ),
        (
            json!({ "pipeline": { "channelCapacity": "0" } }),
            knob_message,
        ),
        (json!({ "pipeline": { "gpuWorkers": "-2" } }), knob_message),
        (json!({ "pipeline": { "gpuWorkers": "01" } }), knob_message),
    ];
    for (change, expected) in cases {
        cluster
            .assert_rejected::<ProverPool>(with(valid_pool(), change), expected)
            .await;
    }
    // The knob errors name the field they are about.
    cluster
        .assert_rejected::<ProverPool>(
            with(
                valid_pool(),
                json!({ "pipeline": { "partitionWorkers": "abc" } }),
            ),
            "spec.pipeline.partitionWorkers",
        )
        .await;
    cluster.delete_namespace().await;
}

/// What can never work in a pool's name and pod template is refused at admission, with a
/// message that names the field; the nearest well-formed pool is admitted.

#[tokio::test]
async fn pools_that_can_never_work_are_refused_by_field() {
    let Some(cluster) = Cluster::connect("pool-admission").await else {
        return;
    };
    let longest = "p".repeat(proofpipe_crds::MAX_POOL_NAME);
    let cases = [
        Case::new(
            "no-prover",
            pool_with_pod_spec(json!({ "containers": [{ "name": "sidecar", "image": "s:1" }] })),
            &[
                "spec.template.spec: Invalid value",
                "containers must include the one named prover",
            ],
            pool_with_pod_spec(json!({ "containers": [
                { "name": "sidecar", "image": "s:1" },
                { "name": "prover", "image": "p:1" },
            ] })),
        ),
        Case::new(
            "no-containers",
            pool_with_pod_spec(json!({ "containers": [] })),
            &["spec.template.spec.containers in body should have at least 1 items"],
            valid_pool(),
        ),
        Case::new(
            "no-image",
            pool_with_prover(json!({ "image": null })),
            &[
                "spec.template.spec.containers[0].image",
                "image is required",
            ],
            pool_with_prover(json!({ "image": "p:2" })),
        ),
        Case::new(
            "init-no-image",
            pool_with_pod_spec(json!({ "initContainers": [{ "name": "fetch" }] })),
            &[
                "spec.template.spec.initContainers[0].image",
                "image is required",
            ],
            pool_with_pod_spec(json!({ "initContainers": [{ "name": "fetch", "image": "f:1" }] })),
        ),
        Case::new(
            "pod-resources",
            pool_with_pod_spec(json!({ "resources": { "limits": { "memory": "lots" } } })),
            &[
                "spec.template.spec.resources.limits",
                "every value must be a non-negative quantity",
            ],
            pool_with_pod_spec(json!({ "resources": { "limits": { "memory": "120Gi" } } })),
        ),
        Case::new(
            "pull-policy",
            pool_with_prover(json!({ "imagePullPolicy": "Sometimes" })),
            &["spec.template.spec.containers[0].imagePullPolicy: Unsupported value"],
            pool_with_prover(json!({ "imagePullPolicy": "IfNotPresent" })),
        ),
        Case::new(
            "env-name",
            pool_with_prover(json!({ "env": [{ "name": "1-BAD", "value": "x" }] })),
            &["spec.template.spec.containers[0].env[0].name in body should match"],
            pool_with_prover(json!({ "env": [{ "name": "GOOD_1", "value": "x" }] })),
        ),
        Case::new(
            "reserved-env",
            pool_with_prover(json!({ "env": [
                { "name": "RUST_LOG", "value": "info" },
                { "name": "PROOFPIPE_POOL", "value": "other" },
            ] })),
            &[
                "spec.template.spec.containers[0].env[1].name",
                "PROOFPIPE_* variables are set by the operator",
            ],
            pool_with_prover(json!({ "env": [
                { "name": "RUST_LOG", "value": "info" },
                { "name": "PROOFPIPE_LOG", "value": "debug" },
            ] })),
        ),
        Case::new(
            "reserved-env-init",
            pool_with_pod_spec(
                json!({ "initContainers": [{ "name": "fetch", "image": "f:1",
                "env": [{ "name": "PROOFPIPE_GPU_WORKERS", "value": "9" }] }] }),
            ),
            &[
                "spec.template.spec.initContainers[0].env[0].name",
                "PROOFPIPE_* variables are set by the operator",
            ],
            pool_with_pod_spec(json!({ "initContainers": [{ "name": "fetch", "image": "f:1" }] })),
        ),
        Case::new(
            "not-a-quantity",
            pool_with_resources(json!({ "limits": { "memory": "64 GB" } })),
            &[
                "spec.template.spec.containers[0].resources.limits",
                "every value must be a non-negative quantity",
            ],
            pool_with_resources(json!({ "limits": { "memory": "64Gi" } })),
        ),
        Case::new(
            "negative-quantity",
            pool_with_resources(json!({ "requests": { "cpu": "-2" } })),
            &[
                "spec.template.spec.containers[0].resources.requests",
                "every value must be a non-negative quantity",
            ],
            pool_with_resources(json!({ "requests": { "cpu": 2 } })),
        ),
        Case::new(
            "requests-above-limits",
            pool_with_resources(json!({
                "requests": { "cpu": "16", "memory": "65Gi" },
                "limits": { "cpu": 16, "memory": "64Gi" },
            })),
            &[
                "spec.template.spec.containers[0].resources",
                "requests must not exceed limits",
            ],
            pool_with_resources(json!({
                "requests": { "cpu": "16", "memory": "64Gi" },
                "limits": { "cpu": 16, "memory": "65536Mi" },
            })),
        ),
        Case::new(
            "half-a-gpu",
            pool_with_resources(json!({ "limits": { "nvidia.com/gpu": "500m" } })),
            &[
                "spec.template.spec.containers[0].resources.limits",
                "nvidia.com/gpu must be a whole number of GPUs",
            ],
            pool_with_resources(json!({ "limits": { "nvidia.com/gpu": "1" } })),
        ),
        Case::new(
            "gpu-request-only",
            pool_with_resources(json!({ "requests": { "nvidia.com/gpu": 1 } })),
            &[
                "spec.template.spec.containers[0].resources",
                "GPUs cannot be overcommitted",
            ],
            pool_with_resources(json!({
                "requests": { "nvidia.com/gpu": 1 }, "limits": { "nvidia.com/gpu": "1" },
            })),
        ),
        Case::new(
            "restart-policy",
            pool_with_pod_spec(json!({ "restartPolicy": "Always" })),
            &[
                "spec.template.spec.restartPolicy",
                "restartPolicy is set by the operator",
            ],
            pool_with_pod_spec(json!({ "terminationGracePeriodSeconds": 60 })),
        ),
        Case::new(
            "service-account",
            pool_with_pod_spec(json!({ "serviceAccountName": "mine" })),
            &[
                "spec.template.spec.serviceAccountName",
                "serviceAccountName is set by the operator",
            ],
            pool_with_pod_spec(json!({ "priorityClassName": "proving" })),
        ),
        Case::new(
            "no-token",
            pool_with_pod_spec(json!({ "automountServiceAccountToken": false })),
            &[
                "spec.template.spec.automountServiceAccountToken",
                "the daemon reads and writes ProofJobs",
            ],
            pool_with_pod_spec(json!({ "automountServiceAccountToken": true })),
        ),
        Case::new(
            "scratch-volume",
            pool_with_pod_spec(json!({ "volumes": [{ "name": "proofpipe-tmp", "emptyDir": {} }] })),
            &[
                "spec.template.spec.volumes[0].name",
                "volume names starting with proofpipe- are the operator's",
            ],
            pool_with_pod_spec(json!({ "volumes": [{ "name": "scratch", "emptyDir": {} }] })),
        ),
        Case::new(
            "reserved-label",
            with(
                valid_pool(),
                json!({ "template": {
                "metadata": { "labels": { "proofpipe.dev/pool": "other" } },
                "spec": valid_pool()["template"]["spec"].clone(),
            } }),
            ),
            &["spec.template.metadata.labels", "are set by the operator"],
            with(
                valid_pool(),
                json!({ "template": {
                "metadata": { "labels": { "team": "proofs" },
                              "annotations": { "proofpipe.dev/note": "kept" } },
                "spec": valid_pool()["template"]["spec"].clone(),
            } }),
            ),
        ),
    ];
    for case in cases {
        cluster
            .assert_rejected_named::<ProverPool>(case.name, case.bad, case.expected)
            .await;
        cluster
            .assert_admitted::<ProverPool>(case.name, case.good)
            .await;
    }

    // Names: every derived name (`<pool>-prover-<n>`, a label value) must fit in 63.
    let too_long = format!("{longest}p");
    cluster
        .assert_rejected_named::<ProverPool>(
            &too_long,
            valid_pool(),
            &["metadata.name must be at most 45 characters"],
        )
        .await;
    cluster
        .assert_admitted::<ProverPool>(&longest, valid_pool())
        .await;
    cluster
        .assert_rejected_named::<ProverPool>(
            "gpu.pool",
            valid_pool(),
            &["metadata.name must be a DNS label"],
        )
        .await;
    cluster
        .assert_admitted::<ProverPool>("gpu-pool", valid_pool())
        .await;
    cluster.delete_namespace().await;
}

#[tokio::test]
async fn prover_pool_status_and_scale_subresource() {
    let Some(cluster) = Cluster::connect("scale").await else {
        return;
    };
    let _: ProverPool = cluster.create("gpu", valid_pool()).await;
    let pools = cluster.api::<ProverPool>();
    let selector = format!("{}=gpu", proofpipe_crds::POOL_LABEL);
    let status = ProverPoolStatus {
        replicas: Some(2),
        ready_replicas: Some(1),
        selector: Some(selector.clone()),
        sizing: Some(PipelineSizing {
            partition_workers: 4,
            channel_capacity: 2,
            gpu_workers: 1,
            predicted_peak_bytes: 44_236_390_400,
            memory_limit_bytes: Some(68_719_476_736),
            memory_estimate: "41.2GiB/64GiB".into(),
            predicted_device_bytes: Some(16_106_127_360),
            streamed_queries: vec!["h".into(), "b_g2".into()],
        }),
        queued_jobs: Some(3),
        queued_partitions: Some(12),
        unschedulable_replicas: Some(1),
        updated_replicas: Some(1),
        template_hash: Some("0a1b2c3d4e".into()),
        autoscaling: Some(proofpipe_crds::AutoscalingStatus {
            desired_replicas: 3,
            reason: "1 busy + 2 for 12 queued partitions in 3 jobs (target 4 per prover)".into(),
            surplus_since: None,
            last_scale_time: Some(k8s_openapi::apimachinery::pkg::apis::meta::v1::Time(
                k8s_openapi::jiff::Timestamp::from_second(1_800_000_000).unwrap(),
            )),
        }),
        provers: Some(vec![ProverStatus {
            pod: "gpu-0".into(),
            phase: ProverPhase::Busy,
            current_job: Some("job".into()),
            buffers: StageBuffers {
                synthesizing: 4,
                queued: 2,
                gpu: 1,
                finalizing: 0,
            },
            estimated_bytes: 40_000_000_000,
            sizing: None,
            stage: Some("proving".into()),
            last_progress_time: Some(now()),
            proofs_completed: 17,
            gpu: None,
            gpu_lost: Some(proofpipe_crds::GpuLoss {
                device: 0,
                message: "GPU 0 is lost: CUDA running the quotient failed with \
                          cudaErrorECCUncorrectable (error 214)"
                    .into(),
                time: now(),
            }),
            resident_parameters: None,
            last_report: now(),
        }]),
        conditions: None,
        observed_generation: Some(1),
    };
    let patch = Patch::Merge(json!({ "status": status }));
    let pool = pools
        .patch_status("gpu", &PatchParams::default(), &patch)
        .await
        .expect("the status schema accepts a full ProverPoolStatus");
    assert_eq!(pool.status, Some(status));

    let scale = pools.get_scale("gpu").await.expect("GET /scale");
    assert_eq!(scale.spec.and_then(|spec| spec.replicas), Some(1));
    let scale_status = scale.status.expect("scale status");
    assert_eq!(scale_status.replicas, 2);
    assert_eq!(scale_status.selector.as_deref(), Some(selector.as_str()));

    let patch = Patch::Merge(json!({ "spec": { "replicas": 3 } }));
    pools
        .patch_scale("gpu", &PatchParams::default(), &patch)
        .await
        .expect("PATCH /scale");
    let pool = pools.get("gpu").await.expect("read back");
    assert_eq!(
        pool.spec.replicas, 3,
        "the scale subresource writes spec.replicas"
    );
    cluster.delete_namespace().await;
}

/// The pages that tell a provider what to put in a ProverPool's pod template.
const PROVIDER_DOCS: &[(&str, &str)] = &[
    ("README.md", include_str!("../../README.md")),
    ("docs/operating.md", include_str!("../../docs/operating.md")),
    (
        "docs/prover-daemon.md",
        include_str!("../../docs/prover-daemon.md"),
    ),
    ("docs/gpu-cards.md", include_str!("../../docs/gpu-cards.md")),
];

/// The prover's own variables: the settings these pages are about.
const PROVER_ENV_PREFIXES: &[&str] = &["PROOFPIPE_", "FIL_PROOFS_"];

/// Where a page lists the `PROOFPIPE_*` variables a template may set (between the two
/// strings; the unit test `the_docs_name_the_prover_settings_a_template_may_set` holds those
/// lists to `USER_PROVER_ENV`).
const ADMITTED_LISTS: &[(&str, &str, &str)] = &[
    (
        "docs/operating.md",
        "(except the prover settings",
        "docs/prover-daemon.md):",
    ),
    (
        "docs/prover-daemon.md",
        "sets any `PROOFPIPE_*` variable but",
        "(ADR 0013)",
    ),
];

/// What the pages say about the prover's variables in a pool's pod template.
#[derive(Debug, Default)]
struct DocSettings {
    /// The variables a provider is told to set, each with the value the docs give, in the
    /// order found (the first value a page gives wins), and where.
    settings: Vec<(String, String, String)>,
    /// The other `PROOFPIPE_*` variables the pages name: the operator's, flags' variables and
    /// those the pages say a template may not set. The API server must refuse each.
    refused: Vec<(String, String)>,
}

impl DocSettings {
    fn has(&self, name: &str) -> bool {
        self.settings.iter().any(|(set, _, _)| set == name)
    }

    fn set(&mut self, name: &str, value: &str, page: &str) {
        if !self.has(name) {
            self.settings
                .push((name.to_string(), value.to_string(), page.to_string()));
        }
    }

    /// The env of a prover container that carries every setting.
    fn env(&self) -> Value {
        self.settings
            .iter()
            .map(|(name, value, _)| json!({ "name": name, "value": value }))
            .collect()
    }
}

fn is_prover_env(name: &str) -> bool {
    PROVER_ENV_PREFIXES
        .iter()
        .any(|prefix| name.len() > prefix.len() && name.starts_with(prefix))
        && name
            .chars()
            .all(|c| c.is_ascii_uppercase() || c.is_ascii_digit() || c == '_')
}

/// A page's prose, outside fenced code blocks: its paragraphs (lines joined, so that a code
/// span may wrap) and each table row on its own.
fn prose_blocks(text: &str) -> Vec<String> {
    let mut blocks = Vec::new();
    let mut paragraph = Vec::new();
    let mut fence: Option<&str> = None;
    for line in text.lines() {
        let trimmed = line.trim_start();
        if let Some(open) = fence {
            if trimmed.starts_with(open) {
                fence = None;
            }
            continue;
        }
        let table_row = trimmed.starts_with('|');
        if trimmed.starts_with("```")
            || trimmed.starts_with("~~~")
            || trimmed.is_empty()
            || table_row
        {
            if !paragraph.is_empty() {
                blocks.push(paragraph.join(" "));
                paragraph.clear();
            }
            if table_row {
                blocks.push(trimmed.to_string());
            } else if !trimmed.is_empty() {
                fence = Some(&trimmed[..3]);
            }
            continue;
        }
        paragraph.push(trimmed);
    }
    if !paragraph.is_empty() {
        blocks.push(paragraph.join(" "));
    }
    blocks
}

/// The code spans of a block (`...`).
fn code_spans(block: &str) -> Vec<&str> {
    block.split('`').skip(1).step_by(2).collect()
}

/// The value a table row's description gives as its example: `e.g. `X``, else a span alone
/// in brackets, else its first code span.
fn example_value(description: &str) -> Option<String> {
    let after = |marker: &str| {
        description
            .find(marker)
            .and_then(|at| description[at + marker.len()..].split('`').next())
            .map(str::to_string)
    };
    after("e.g. `")
        .or_else(|| {
            description
                .split("(`")
                .skip(1)
                .find_map(|rest| rest.split_once("`)").map(|(span, _)| span.to_string()))
        })
        .or_else(|| code_spans(description).first().map(|span| span.to_string()))
}

/// Reads what `pages` tell a provider to put in a pool's pod template:
/// - every `NAME=VALUE` code span of a prover variable, unless its paragraph (or table row)
///   says the template may not set it;
/// - every variable of a table row that says "Set it in the pool's ... template `env`", and
///   every variable of the lists of what a template may set, each with the example value its
///   table row gives where no `NAME=VALUE` does;
/// - every `- name: NAME` / `value: V` (or `{name: NAME, value: V}`) env entry of a prover
///   variable in the pages' YAML.
///
/// The other `PROOFPIPE_*` variables the pages name are the ones a template must not set.
fn doc_settings(pages: &[(&str, &str)]) -> DocSettings {
    let mut found = DocSettings::default();
    let mut examples: Vec<(String, String)> = Vec::new();
    let mut said_not: Vec<(String, String)> = Vec::new();
    let mut told: Vec<(String, String)> = Vec::new();
    for &(page, text) in pages {
        for block in prose_blocks(text) {
            let may_not = block.contains("may not set");
            for span in code_spans(&block) {
                if let Some((name, value)) = span.split_once('=')
                    && is_prover_env(name)
                    && !value.is_empty()
                    && !value.contains(char::is_whitespace)
                {
                    if may_not {
                        said_not.push((name.to_string(), page.to_string()));
                    } else {
                        found.set(name, value, page);
                    }
                }
            }
            if block.starts_with('|') {
                let cells: Vec<&str> = block.trim_matches('|').split(" | ").collect();
                let (Some(first), Some(description)) = (cells.first(), cells.last()) else {
                    continue;
                };
                for name in code_spans(first).into_iter().filter(|n| is_prover_env(n)) {
                    if let Some(value) = example_value(description) {
                        examples.push((name.to_string(), value));
                    }
                    if description.contains("Set it in the pool's") {
                        told.push((name.to_string(), page.to_string()));
                    }
                    if may_not {
                        said_not.push((name.to_string(), page.to_string()));
                    }
                }
            }
        }
        let lines: Vec<&str> = text.lines().collect();
        for (at, line) in lines.iter().enumerate() {
            let line = line.trim();
            let entry = if let Some(name) = line.strip_prefix("- name: ") {
                lines
                    .get(at + 1)
                    .and_then(|next| next.trim().strip_prefix("value: "))
                    .map(|value| (name.trim(), value.trim()))
            } else {
                line.strip_prefix("- {name: ")
                    .and_then(|rest| rest.strip_suffix('}'))
                    .and_then(|rest| rest.split_once(", value: "))
            };
            if let Some((name, value)) = entry
                && is_prover_env(name)
            {
                found.set(name, value, page);
            }
        }
    }
    for &(page, from, to) in ADMITTED_LISTS {
        let text = pages
            .iter()
            .find(|(name, _)| *name == page)
            .unwrap_or_else(|| panic!("{page} is not among the pages read"))
            .1;
        let start = text
            .find(from)
            .unwrap_or_else(|| panic!("{page}: no {from:?}"));
        let len = text[start..]
            .find(to)
            .unwrap_or_else(|| panic!("{page}: no {to:?} after {from:?}"));
        for name in text[start..start + len]
            .split('`')
            .filter(|w| is_prover_env(w))
        {
            told.push((name.to_string(), page.to_string()));
        }
    }
    for (name, page) in told {
        if found.has(&name) {
            continue;
        }
        let value = examples
            .iter()
            .find(|(example, _)| *example == name)
            .map(|(_, value)| value.clone())
            .unwrap_or_else(|| {
                panic!("{page} tells a template to set {name} but no page gives it a value")
            });
        found.set(&name, &value, &page);
    }
    for (name, page) in said_not {
        assert!(
            !found.has(&name),
            "{page} says a template may not set {name}, but a page tells a provider to set it"
        );
    }
    for &(page, text) in pages {
        for block in prose_blocks(text) {
            for span in code_spans(&block) {
                for word in span.split(|c: char| !(c.is_ascii_alphanumeric() || c == '_')) {
                    if word.starts_with("PROOFPIPE_")
                        && is_prover_env(word)
                        && !found.has(word)
                        && !found.refused.iter().any(|(name, _)| name == word)
                    {
                        found.refused.push((word.to_string(), page.to_string()));
                    }
                }
            }
        }
    }
    found
}

/// The reading of the pages finds what they plainly say (no cluster needed): a change to the
/// pages that the reading no longer understands fails here, not as an empty pool.
#[test]
fn the_docs_settings_for_a_pool_template_are_read() {
    let found = doc_settings(PROVIDER_DOCS);
    let value = |name: &str| {
        found
            .settings
            .iter()
            .find(|(set, _, _)| set == name)
            .map(|(_, value, _)| value.as_str())
    };
    assert_eq!(
        value("PROOFPIPE_POREP_SYNTHESIS"),
        Some("one-pass"),
        "{found:#?}"
    );
    assert_eq!(value("PROOFPIPE_REQUIRE_GPU"), Some("true"), "{found:#?}");
    assert_eq!(value("PROOFPIPE_GPU_MEMORY"), Some("24GiB"), "{found:#?}");
    assert_eq!(
        value("FIL_PROOFS_PARAMETER_CACHE"),
        Some("/var/tmp/filecoin-proof-parameters"),
        "{found:#?}"
    );
    for name in proofpipe_crds::USER_PROVER_ENV {
        assert!(found.has(name), "{name} is not among {found:#?}");
    }
    for name in [
        "PROOFPIPE_POOL",
        "PROOFPIPE_LOG_FORMAT",
        "PROOFPIPE_MEMORY_LIMIT",
    ] {
        assert!(
            found.refused.iter().any(|(refused, _)| refused == name),
            "{name} is not among the refused of {found:#?}"
        );
    }
}

/// A pool whose prover container carries every setting the docs tell a provider to put in
/// its template is admitted, and each other `PROOFPIPE_*` variable the docs name is refused
/// beside them, naming its entry.
#[tokio::test]
async fn a_pool_with_every_setting_the_docs_give_is_admitted() {
    let found = doc_settings(PROVIDER_DOCS);
    for (name, value, page) in &found.settings {
        eprintln!("documented setting {name}={value} ({page})");
    }
    for (name, page) in &found.refused {
        eprintln!("to be refused: {name} ({page})");
    }
    let Some(cluster) = Cluster::connect("doc-settings").await else {
        return;
    };
    let pool = pool_with_prover(json!({ "env": found.env() }));
    if let Err(err) = cluster
        .raw_api::<ProverPool>()
        .create(
            &PostParams::default(),
            &raw_object::<ProverPool>("documented", pool),
        )
        .await
    {
        let told: Vec<String> = found
            .settings
            .iter()
            .enumerate()
            .map(|(at, (name, value, page))| format!("env[{at}] {name}={value} ({page})"))
            .collect();
        panic!(
            "the API server refused a pool with the settings the docs tell a provider to put \
             in its template: {err}\nthe settings: {told:#?}"
        );
    }
    let at = found.settings.len();
    for (name, page) in &found.refused {
        let mut env = found.env();
        env.as_array_mut()
            .expect("a list")
            .push(json!({ "name": name, "value": "1" }));
        let result = cluster
            .raw_api::<ProverPool>()
            .create(
                &PostParams::default(),
                &raw_object::<ProverPool>("refused", pool_with_prover(json!({ "env": env }))),
            )
            .await;
        let message = match result {
            Err(kube::Error::Api(status)) => status.message,
            other => {
                panic!("{name} (named in {page}) in a template: expected a refusal, got {other:?}")
            }
        };
        let field = format!("spec.template.spec.containers[0].env[{at}].name");
        assert!(
            message.contains(&field)
                && message.contains("PROOFPIPE_* variables are set by the operator"),
            "{name} (named in {page}): expected the refusal to name {field}, got {message:?}"
        );
        for index in 0..at {
            let other = format!("env[{index}].name");
            assert!(
                !message.contains(&other),
                "{name}: the documented setting {} was refused too: {message:?}",
                found.settings[index].0
            );
        }
    }
    cluster.delete_namespace().await;
}
