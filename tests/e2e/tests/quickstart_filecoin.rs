//! docs/quickstart-filecoin.md, run: every fenced block of the page is a step of this test, in
//! the page's order (`proofpipe_e2e::doc_steps`). `e2e:run` blocks run as written under bash;
//! `e2e:apply` manifests are applied as written (the pool also equals the chart's
//! `examples/prover-pool-2kib.yaml`); `e2e:values` is chart-check's; `e2e:played` blocks are
//! what the test does instead, as their comments say (the operator and the gateway as
//! binaries, pods by the pod runner, a local directory for the parameter volume, a local HTTP
//! server for proofs.filecoin.io).
//!
//! On the way it checks what the page promises: `params fetch` resumes a download that broke
//! off and replaces a local file whose digest does not match, the pool proves with those
//! parameters, curio's `Prove` gets the proof, and `verify_seal` accepts it.
//!
//! Needs `KUBECONFIG` (skips without it), `PROOFPIPE_FILECOIN_TESTDATA` (its 2 KiB PoRep
//! parameters are served) and `PROOFPIPE_GRPC_PYTHON`, which `scripts/test.sh` exports.

use std::collections::BTreeMap;
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::time::Duration;

use axum::Router;
use k8s_openapi::api::core::v1::Pod;
use kube::api::{DynamicObject, ListParams};
use proofpipe_crds::{ProofJobPhase, ProverPool};
use proofpipe_e2e::binaries::binary;
use proofpipe_e2e::doc_steps::{DocStep, StepMode, doc_steps};
use proofpipe_e2e::filecoin::required_env;
use proofpipe_e2e::gateway::start_gateway;
use proofpipe_e2e::process::free_port;
use proofpipe_e2e::stack::{Stack, live_pods};
use proofpipe_filecoin::fetch::{ManifestEntry, ParamKind, file_digest, required_names};
use tower_http::services::ServeDir;

const PAGE: &str = "docs/quickstart-filecoin.md";
const EXAMPLE_POOL: &str = "charts/proofpipe/examples/prover-pool-2kib.yaml";
/// Sealing a 2 KiB sector, or proving one on 2 cores of a test build, fits easily.
const STEP_TIMEOUT: Duration = Duration::from_secs(1200);
/// Bytes of the parameter file already there when the page's fetch runs, as if a download
/// had broken off.
const PARTIAL_BYTES: usize = 32 << 20;

/// The page's steps, as this test expects them: the mode and a text the block contains. A
/// page whose blocks differ (one added, removed or moved) fails here first: change the page
/// and this list together.
const EXPECTED: [(StepMode, &str); 12] = [
    (
        StepMode::Played,
        "cargo build --release -p proofpipe-prover",
    ),
    (StepMode::Values, "paramsFetch:"),
    (StepMode::Apply, "name: proofpipe-artifacts"),
    (StepMode::Played, "helm install proofpipe charts/proofpipe"),
    (StepMode::Run, "proofpipe-prover params fetch"),
    (StepMode::Apply, "kind: ProverPool"),
    (StepMode::Played, "get proverpool fil -w"),
    (StepMode::Run, "proofpipe-prover porep-testdata"),
    (StepMode::Played, "port-forward svc/proofpipe-gateway"),
    (StepMode::Run, "cuzk_client.py"),
    (StepMode::Played, "get proofjobs"),
    (StepMode::Run, "proofpipe-prover porep-verify"),
];

fn repo_root() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("../..")
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn the_filecoin_quickstart_page_runs_from_parameters_to_a_verified_proof() {
    let page = std::fs::read_to_string(repo_root().join(PAGE)).expect("read the page");
    let steps = doc_steps(&page).unwrap_or_else(|err| panic!("{PAGE}:\n{err}"));
    check_page_shape(&steps);
    let example = std::fs::read_to_string(repo_root().join(EXAMPLE_POOL)).unwrap();
    assert_eq!(
        steps[5].text, example,
        "{PAGE}'s pool (line {}) must be {EXAMPLE_POOL}, as the page says",
        steps[5].line
    );

    let how = "scripts/test.sh exports it";
    let Some(testdata) = required_env("PROOFPIPE_FILECOIN_TESTDATA", how) else {
        return;
    };
    let Some(python) = required_env("PROOFPIPE_GRPC_PYTHON", how) else {
        return;
    };
    let Some(mut stack) = Stack::start("quickstart").await else {
        return;
    };
    let work = tempfile::tempdir().unwrap();
    let mut env = ShellEnv::new(work.path(), &python);

    // Step 1 (played): the binaries are built and the venv made by scripts/test.sh.
    // Step 2 (values): scripts/chart-check.sh. Step 3: the artifact claim, as written.
    stack.namespace.apply(&objects_of(&steps[2])).await;
    // Step 4 (played): the operator runs (the stack's); the gateway, with a token of ours.
    let token = "quickstart-token";
    std::fs::write(work.path().join("token"), token).unwrap();
    let port = free_port();
    let _gateway = start_gateway(
        &stack.namespace.name,
        "fil",
        &work.path().join("artifacts"),
        &work.path().join("token"),
        port,
    )
    .await;

    // Step 5: the page's fetch from a local copy of proofs.filecoin.io, serving the test
    // data's 2 KiB PoRep parameters (random setups: their digests go in a manifest), after a
    // download that broke off and with a local file of the wrong digest.
    let served = testdata.join("params");
    let names = required_names(&[ParamKind::Porep], &[2 << 10]).unwrap();
    let manifest_path = work.path().join("parameters.json");
    let manifest: BTreeMap<_, _> = names
        .iter()
        .map(|name| {
            let entry = ManifestEntry {
                cid: "test-random-setup".into(),
                digest: file_digest(&served.join(name)).unwrap(),
                sector_size: 2048,
            };
            (name.clone(), entry)
        })
        .collect();
    std::fs::write(&manifest_path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    let params = work.path().join("params");
    std::fs::create_dir_all(&params).unwrap();
    let big = names.iter().find(|n| n.ends_with(".params")).unwrap();
    let small = names.iter().find(|n| n.ends_with(".vk")).unwrap();
    let head = read_head(&served.join(big), PARTIAL_BYTES);
    std::fs::write(params.join(format!("{big}.partial")), head).unwrap();
    std::fs::write(params.join(small), b"not this verifying key").unwrap();
    let addr = serve(&served).await;
    env.set("PARAMS_URL", format!("http://{addr}/params"));
    env.set(
        "PROOFPIPE_PARAMS_MANIFEST",
        manifest_path.display().to_string(),
    );
    let fetched = env.run(&steps[4]).await;
    let resumed = format!("{big}: resumed at {}", bytesize(PARTIAL_BYTES));
    assert!(
        fetched.contains(&resumed) && fetched.contains(&format!("{small}: downloaded")),
        "expected `{resumed}` and `{small}: downloaded` (the wrong local file replaced):\n{fetched}"
    );
    for name in &names {
        assert_eq!(
            file_digest(&params.join(name)).unwrap(),
            manifest[name].digest,
            "{name}"
        );
    }

    // Step 6: the pool as written, but for what the pod runner lacks (see the played block).
    let mut pool = objects_of(&steps[5]);
    point_pool_at(&mut pool[0], &params);
    stack.namespace.apply(&pool).await;
    // Step 7 (played): its prover ready.
    let pools = stack.namespace.api::<ProverPool>();
    let pods = stack.namespace.api::<Pod>();
    stack
        .wait_for("the pool fil with one ready prover", || async {
            let pool = pools.get("fil").await.map_err(|e| e.to_string())?;
            let ready = pool.status.and_then(|s| s.ready_replicas);
            let alive = live_pods(&pods).await?.len();
            (ready == Some(1))
                .then_some(())
                .ok_or(format!("readyReplicas {ready:?}, {alive} pods"))
        })
        .await;

    // Step 8: a 2 KiB test sector sealed, its C1 output.
    env.run(&steps[7]).await;
    // Step 9 (played): the gateway's address and token.
    env.set("GATEWAY", format!("127.0.0.1:{port}"));
    env.set("TOKEN", token.to_owned());
    // Step 10: curio's Prove.
    let said = env.run(&steps[9]).await;
    let answer: serde_json::Value = serde_json::from_str(said.trim())
        .unwrap_or_else(|e| panic!("the client's output is not JSON ({e}): {said}"));
    assert_eq!(answer["status"], "COMPLETED", "{answer}");
    // Step 11 (played): the job, as `kubectl get proofjobs` shows it.
    let job_name = answer["job_id"].as_str().expect("a job id").to_owned();
    let job = stack
        .jobs()
        .list(&ListParams::default())
        .await
        .unwrap()
        .items
        .into_iter()
        .find(|job| job.metadata.name.as_deref() == Some(&job_name))
        .unwrap_or_else(|| panic!("no ProofJob {job_name}"));
    let status = job.status.clone().unwrap_or_default();
    let filecoin = status.filecoin.clone();
    if status.phase != Some(ProofJobPhase::Succeeded)
        || status.attempts != Some(1)
        || !filecoin
            .as_ref()
            .is_some_and(|f| f.verified && f.proof_bytes == 192)
    {
        panic!(
            "{job_name}: expected Succeeded in one attempt with a verified 192-byte proof: \
             {status:?}\n{}",
            stack.diagnostics()
        );
    }
    // Step 12: Filecoin's verifier.
    let verdict = env.run(&steps[11]).await;
    assert!(
        verdict.starts_with("VALID: StackedDrg2KiBV1_1"),
        "{verdict}"
    );
}

/// The page has the steps this test plays, in order, and no others.
fn check_page_shape(steps: &[DocStep]) {
    let found: Vec<String> = steps.iter().map(ToString::to_string).collect();
    assert_eq!(
        steps.len(),
        EXPECTED.len(),
        "{PAGE} has {} fenced blocks, this test plays {}: change both together\n{}",
        steps.len(),
        EXPECTED.len(),
        found.join("\n")
    );
    for (step, (mode, contains)) in steps.iter().zip(EXPECTED) {
        assert!(
            step.mode == mode && step.text.contains(contains),
            "{PAGE} {step}: expected an {mode:?} block with `{contains}`"
        );
    }
}

/// The objects of an `e2e:apply` block, in the test's namespace.
fn objects_of(step: &DocStep) -> Vec<DynamicObject> {
    let mut objects = proofpipe_e2e::fixtures::parse(&step.text)
        .unwrap_or_else(|err| panic!("{PAGE} {step}: {err}"));
    for object in &mut objects {
        object.metadata.namespace = None;
    }
    objects
}

/// What the pod runner lacks, given to the page's pool: its image is the prover binary, the
/// parameter claim is `params` (no volumes: FIL_PROOFS_PARAMETER_CACHE points at it), and its
/// pods share the host's network (an ephemeral port each).
fn point_pool_at(pool: &mut DynamicObject, params: &Path) {
    let container = &mut pool.data["spec"]["template"]["spec"]["containers"][0];
    container["image"] = "proofpipe-prover:e2e".into();
    container["args"] = serde_json::json!(["--listen", "127.0.0.1:0"]);
    let env = container["env"].as_array_mut().expect("the pool's env");
    let cache = env
        .iter_mut()
        .find(|e| e["name"] == "FIL_PROOFS_PARAMETER_CACHE")
        .expect("the pool sets FIL_PROOFS_PARAMETER_CACHE");
    cache["value"] = params.display().to_string().into();
}

/// The environment the page's `e2e:run` blocks run in: the built binaries and the grpc
/// venv first on PATH, the page's variables, the repository as the working directory.
struct ShellEnv {
    vars: Vec<(String, String)>,
}

impl ShellEnv {
    fn new(work: &Path, python: &Path) -> Self {
        let bin = binary("proofpipe-prover");
        let path = [
            bin.parent().unwrap().to_path_buf(),
            python.parent().unwrap().to_path_buf(),
        ]
        .into_iter()
        .chain(std::env::split_paths(
            &std::env::var_os("PATH").unwrap_or_default(),
        ))
        .collect::<Vec<_>>();
        let mut env = Self { vars: Vec::new() };
        env.set(
            "PATH",
            std::env::join_paths(path).unwrap().into_string().unwrap(),
        );
        env.set("WORK", work.display().to_string());
        // filecoin-proofs' graph cache of the sealing step, kept out of /var/tmp.
        env.set(
            "FIL_PROOFS_PARENT_CACHE",
            work.join("parents").display().to_string(),
        );
        env
    }

    fn set(&mut self, name: &str, value: String) {
        self.vars.retain(|(n, _)| n != name);
        self.vars.push((name.to_owned(), value));
    }

    /// Runs `step` under `bash -euo pipefail`; its stdout, or a failure with both streams.
    async fn run(&self, step: &DocStep) -> String {
        let mut command = tokio::process::Command::new("bash");
        command
            .args(["-euo", "pipefail", "-c", &step.text])
            .current_dir(repo_root())
            .envs(self.vars.iter().map(|(n, v)| (n, v)))
            .kill_on_drop(true);
        let output = tokio::time::timeout(STEP_TIMEOUT, command.output())
            .await
            .unwrap_or_else(|_| panic!("{PAGE} {step}: still running after {STEP_TIMEOUT:?}"))
            .expect("run bash");
        let stdout = String::from_utf8_lossy(&output.stdout).into_owned();
        let stderr = String::from_utf8_lossy(&output.stderr);
        assert!(
            output.status.success(),
            "{PAGE} {step}: {}\n--- stdout\n{stdout}\n--- stderr\n{stderr}",
            output.status
        );
        eprintln!("{PAGE} {step}: ok\n{stdout}");
        stdout
    }
}

/// Serves `dir` at /params with range requests, as a static file server or CDN does.
async fn serve(dir: &Path) -> SocketAddr {
    let app = Router::new().nest_service("/params", ServeDir::new(dir));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    addr
}

fn read_head(path: &Path, bytes: usize) -> Vec<u8> {
    use std::io::Read;
    let mut head = vec![0; bytes];
    std::fs::File::open(path)
        .and_then(|mut f| f.read_exact(&mut head))
        .unwrap_or_else(|err| panic!("{}: {err}", path.display()));
    head
}

/// As `params fetch` prints sizes.
fn bytesize(bytes: usize) -> String {
    bytesize::ByteSize(bytes as u64).to_string()
}
