//! `params fetch` against a real HTTP server with range requests (tower-http's `ServeDir`, as
//! any static file server or CDN serves proofs.filecoin.io's files): a download interrupted
//! half-way is resumed with a range request, a file already there is not fetched again, a file
//! whose digest does not match the manifest is refused and not kept, and a local file with the
//! wrong digest is replaced. The files have the 2 KiB PoRep parameters' real names and random
//! content; the manifest holds their digests, as parameters.json holds the real ones.

use std::net::SocketAddr;
use std::path::Path;
use std::sync::{Arc, Mutex};

use axum::Router;
use axum::extract::Request;
use axum::middleware::{self, Next};
use proofpipe_filecoin::fetch::{
    Fetched, Manifest, ManifestEntry, ParamKind, READY_FILE, fetch_all, file_digest,
    required_names, wanted_files,
};
use proofpipe_pipeline::ProverError;
use tower_http::services::ServeDir;

mod support;

/// The `Range` header of every request the server got, by path.
type Seen = Arc<Mutex<Vec<(String, Option<String>)>>>;

async fn serve(dir: &Path) -> (SocketAddr, Seen) {
    let seen: Seen = Arc::default();
    let record = seen.clone();
    let app = Router::new()
        .nest_service("/params", ServeDir::new(dir))
        .layer(middleware::from_fn(move |request: Request, next: Next| {
            let record = record.clone();
            async move {
                let range = request
                    .headers()
                    .get("range")
                    .and_then(|v| v.to_str().ok())
                    .map(str::to_owned);
                record
                    .lock()
                    .unwrap()
                    .push((request.uri().path().to_owned(), range));
                next.run(request).await
            }
        }));
    let listener = tokio::net::TcpListener::bind("127.0.0.1:0").await.unwrap();
    let addr = listener.local_addr().unwrap();
    tokio::spawn(async move { axum::serve(listener, app).await.unwrap() });
    (addr, seen)
}

/// Pseudo-random bytes (a file's content must not be guessable from its prefix).
fn content(seed: u64, len: usize) -> Vec<u8> {
    let mut state = seed | 1;
    (0..len)
        .map(|_| {
            state ^= state << 13;
            state ^= state >> 7;
            state ^= state << 17;
            state as u8
        })
        .collect()
}

#[tokio::test(flavor = "multi_thread", worker_threads = 2)]
async fn an_interrupted_download_resumes_and_a_file_with_another_digest_is_refused() {
    let served = tempfile::tempdir().unwrap();
    let names = required_names(&[ParamKind::Porep], &[2 << 10]).unwrap();
    assert_eq!(names.len(), 2, "{names:?}");
    let mut manifest = Manifest::new();
    for (i, name) in names.iter().enumerate() {
        let path = served.path().join(name);
        std::fs::write(&path, content(i as u64 + 1, 3 << 20)).unwrap();
        manifest.insert(
            name.clone(),
            ManifestEntry {
                cid: "Qm-test".into(),
                digest: file_digest(&path).unwrap(),
                sector_size: 2048,
            },
        );
    }
    let files = wanted_files(&[ParamKind::Porep], &[2 << 10], &manifest).unwrap();
    let (addr, seen) = serve(served.path()).await;
    let base = vec![format!("http://{addr}/params")];
    let dir = tempfile::tempdir().unwrap();

    // The first file's download broke off after 1 MiB.
    let first = &files[0].name;
    let whole = std::fs::read(served.path().join(first)).unwrap();
    std::fs::write(
        dir.path().join(format!("{first}.partial")),
        &whole[..1 << 20],
    )
    .unwrap();
    let done = fetch_all(&base, dir.path(), &files).await.unwrap();
    assert_eq!(
        done[0],
        (
            first.clone(),
            Fetched::Resumed {
                from: 1 << 20,
                bytes: (whole.len() - (1 << 20)) as u64,
            }
        )
    );
    assert_eq!(done[1].1, Fetched::Downloaded { bytes: 3 << 20 });
    for file in &files {
        assert_eq!(
            std::fs::read(dir.path().join(&file.name)).unwrap(),
            std::fs::read(served.path().join(&file.name)).unwrap()
        );
        assert!(!dir.path().join(format!("{}.partial", file.name)).exists());
    }
    assert_eq!(
        seen.lock().unwrap()[0],
        (
            format!("/params/{first}"),
            Some("bytes=1048576-".to_owned())
        ),
        "the resumed download asked for the rest only"
    );
    let ready: serde_json::Value =
        serde_json::from_slice(&std::fs::read(dir.path().join(READY_FILE)).unwrap()).unwrap();
    assert_eq!(ready["files"].as_array().map(Vec::len), Some(2), "{ready}");

    // Again: both are there with their digests; nothing is downloaded.
    let requests = seen.lock().unwrap().len();
    let again = fetch_all(&base, dir.path(), &files).await.unwrap();
    assert!(
        again
            .iter()
            .all(|(_, outcome)| *outcome == Fetched::Present)
    );
    assert_eq!(seen.lock().unwrap().len(), requests);

    // A local file with another digest is replaced.
    std::fs::write(dir.path().join(first), b"not the parameters").unwrap();
    let replaced = fetch_all(&base, dir.path(), &files).await.unwrap();
    assert!(matches!(replaced[0].1, Fetched::Downloaded { .. }));
    assert_eq!(std::fs::read(dir.path().join(first)).unwrap(), whole);

    // The server has a corrupted copy: refused, with the digests and the fix, nothing kept.
    std::fs::write(served.path().join(first), content(99, 3 << 20)).unwrap();
    let fresh = tempfile::tempdir().unwrap();
    let err = fetch_all(&base, fresh.path(), &files).await.unwrap_err();
    assert!(
        matches!(err, ProverError::FilecoinParamsMismatch { .. }),
        "{err}"
    );
    let message = err.to_string();
    assert!(
        message.contains(first)
            && message.contains(&files[0].digest)
            && message.contains("proofpipe-prover params fetch"),
        "{message}"
    );
    assert!(!fresh.path().join(first).exists());
    assert!(!fresh.path().join(format!("{first}.partial")).exists());
    assert!(!fresh.path().join(READY_FILE).exists(), "not ready");

    // Mirrors in order: one that lacks the files, one serving the corrupted copy, then a good
    // one. Each file comes from the good one; the ready file lists the mirrors as tried.
    let good = tempfile::tempdir().unwrap();
    for file in &files {
        let source = if file.name == *first {
            whole.clone()
        } else {
            std::fs::read(dir.path().join(&file.name)).unwrap()
        };
        std::fs::write(good.path().join(&file.name), source).unwrap();
    }
    let mirrors = vec![
        format!(
            "file://{}",
            tempfile::tempdir().unwrap().path().join("empty").display()
        ),
        base[0].clone(),
        format!("file://{}", good.path().display()),
    ];
    let mirrored = tempfile::tempdir().unwrap();
    let done = fetch_all(&mirrors, mirrored.path(), &files).await.unwrap();
    assert!(
        done.iter()
            .all(|(_, outcome)| matches!(outcome, Fetched::Downloaded { .. })),
        "{done:?}"
    );
    assert_eq!(std::fs::read(mirrored.path().join(first)).unwrap(), whole);
    let ready: serde_json::Value =
        serde_json::from_slice(&std::fs::read(mirrored.path().join(READY_FILE)).unwrap()).unwrap();
    assert_eq!(ready["base_urls"], serde_json::json!(mirrors), "{ready}");
    // No mirror at all: refused, saying what to give.
    let err = fetch_all(&[], mirrored.path(), &files).await.unwrap_err();
    assert!(err.to_string().contains("no mirror given"), "{err}");
}

/// A mirror directory serving made-up 2 KiB PoRep parameter files of `len` bytes, the names
/// of those files, and a parameters.json listing them with their digests.
fn served_porep_2kib(len: usize) -> (tempfile::TempDir, Vec<String>, std::path::PathBuf) {
    served_2kib(&[ParamKind::Porep], len)
}

/// The 2 KiB files of `kinds`, served as [`served_porep_2kib`] serves PoRep's.
fn served_2kib(
    kinds: &[ParamKind],
    len: usize,
) -> (tempfile::TempDir, Vec<String>, std::path::PathBuf) {
    let served = tempfile::tempdir().unwrap();
    let names = required_names(kinds, &[2 << 10]).unwrap();
    let mut manifest = serde_json::Map::new();
    for (i, name) in names.iter().enumerate() {
        let path = served.path().join(name);
        std::fs::write(&path, content(i as u64 + 1, len)).unwrap();
        manifest.insert(
            name.clone(),
            serde_json::json!({"cid": "Qm-test", "digest": file_digest(&path).unwrap(), "sector_size": 2048}),
        );
    }
    let manifest_path = served.path().join("parameters.json");
    std::fs::write(&manifest_path, serde_json::to_vec(&manifest).unwrap()).unwrap();
    (served, names, manifest_path)
}

/// `params fetch --porep-matrices --post-matrices`: the parameters fetched (here from a file://
/// mirror), then each PoRep and PoSt size's R1CS matrices written beside them; a second run
/// finds both and checks them.
#[test]
fn fetch_with_porep_and_post_matrices_writes_the_matrices_beside_the_parameters() {
    let (served, _, manifest_path) =
        served_2kib(&[ParamKind::Porep, ParamKind::WindowPost], 1 << 16);
    let dir = tempfile::tempdir().unwrap();
    let fetch = || {
        support::json_report(
            assert_cmd::Command::cargo_bin("proofpipe-prover")
                .unwrap()
                .args([
                    "--log=warn",
                    "params",
                    "fetch",
                    "--sector-size",
                    "2KiB",
                    "--kind",
                    "porep,window-post",
                ])
                .arg("--base-url")
                .arg(format!("file://{}", served.path().display()))
                .arg("--manifest")
                .arg(&manifest_path)
                .arg("--dir")
                .arg(dir.path())
                .args(["--porep-matrices", "--post-matrices", "--json"]),
        )
    };
    let first = fetch();
    for (i, proof) in ["StackedDrg2KiBV1_1", "StackedDrgWindow2KiBV1_2"]
        .iter()
        .enumerate()
    {
        assert_eq!(first["matrices"][i]["proof"], *proof, "{first}");
        assert_eq!(
            first["matrices"][i]["origin"], "recorded_and_written",
            "{first}"
        );
    }
    let second = fetch();
    for i in 0..2 {
        assert_eq!(second["matrices"][i]["origin"], "read", "{second}");
    }
    let matrices_files = std::fs::read_dir(dir.path())
        .unwrap()
        .filter(|e| {
            let name = e.as_ref().unwrap().file_name();
            name.to_string_lossy().ends_with(".matrices")
        })
        .count();
    assert_eq!(matrices_files, 2);
}

/// `params fetch --verifying-keys-only`: a verifier's machine gets the `.vk` files and no
/// parameters.
#[test]
fn fetch_of_verifying_keys_only_leaves_the_parameters_out() {
    let (served, names, manifest_path) = served_porep_2kib(1 << 12);
    let dir = tempfile::tempdir().unwrap();
    assert_cmd::Command::cargo_bin("proofpipe-prover")
        .unwrap()
        .args([
            "--log=warn",
            "params",
            "fetch",
            "--sector-size",
            "2KiB",
            "--kind",
            "porep",
        ])
        .arg("--base-url")
        .arg(format!("file://{}", served.path().display()))
        .arg("--manifest")
        .arg(&manifest_path)
        .arg("--dir")
        .arg(dir.path())
        .arg("--verifying-keys-only")
        .assert()
        .success();
    for name in &names {
        assert_eq!(
            dir.path().join(name).exists(),
            name.ends_with(".vk"),
            "{name}: only verifying keys are fetched"
        );
    }
}
