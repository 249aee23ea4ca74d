//! Job inputs and outputs by URL, through `object_store`:
//! - `s3://bucket/key`: any S3-compatible store; credentials, region and endpoint come from
//!   the prover's `AWS_*` environment (`AWS_ACCESS_KEY_ID`, `AWS_SECRET_ACCESS_KEY`,
//!   `AWS_DEFAULT_REGION`, `AWS_ENDPOINT`, `AWS_ALLOW_HTTP` for a plain-HTTP endpoint), which a
//!   ProverPool fills from a Secret;
//! - `http(s)://…`: GET to read, PUT to write (e.g. WebDAV);
//! - `file:///path`: a file on a volume mounted in the prover pod.

use object_store::aws::AmazonS3Builder;
use object_store::http::HttpBuilder;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, PutPayload};
use sha2::{Digest, Sha256};
use url::Url;

use proofpipe_pipeline::error::ProverError;

/// The store behind `url` and the object's path in it.
fn open(
    url: &str,
    action: &'static str,
) -> Result<(Box<dyn ObjectStore>, ObjectPath), ProverError> {
    let fail = |message: String, hint: &'static str| ProverError::Artifact {
        action,
        url: url.to_owned(),
        message,
        hint,
        retryable: false,
    };
    let parsed = Url::parse(url).map_err(|e| {
        fail(
            format!("not a URL: {e}"),
            "use s3://bucket/key, http(s)://host/path or file:///path",
        )
    })?;
    let key = || {
        ObjectPath::from_url_path(parsed.path())
            .map_err(|e| fail(format!("bad object path: {e}"), "fix the URL's path"))
    };
    match parsed.scheme() {
        "s3" => {
            let store = AmazonS3Builder::from_env()
                .with_url(url)
                .build()
                .map_err(|e| {
                    fail(
                        e.to_string(),
                        "set the prover's AWS_* environment (credentials, region, endpoint)",
                    )
                })?;
            Ok((Box::new(store), key()?))
        }
        "http" | "https" => {
            let origin = parsed.origin().ascii_serialization();
            // An http:// URL is the user's choice of plain HTTP (object_store refuses it
            // unless told).
            let store = HttpBuilder::new()
                .with_url(origin)
                .with_client_options(
                    object_store::ClientOptions::new().with_allow_http(parsed.scheme() == "http"),
                )
                .build()
                .map_err(|e| fail(e.to_string(), "check the URL"))?;
            Ok((Box::new(store), key()?))
        }
        "file" => {
            let path = parsed
                .to_file_path()
                .map_err(|()| fail("not a local path".into(), "use file:///absolute/path"))?;
            let object = ObjectPath::from_absolute_path(&path)
                .map_err(|e| fail(e.to_string(), "use file:///absolute/path"))?;
            Ok((Box::new(LocalFileSystem::new()), object))
        }
        other => Err(fail(
            format!("unsupported scheme {other:?}"),
            "use s3://, http(s):// or file:///",
        )),
    }
}

/// Reads the whole object at `url`.
pub async fn fetch(url: &str) -> Result<Vec<u8>, ProverError> {
    const ACTION: &str = "reading";
    let (store, path) = open(url, ACTION)?;
    let result = store.get(&path).await.map_err(|e| {
        let missing = matches!(e, object_store::Error::NotFound { .. });
        ProverError::Artifact {
            action: ACTION,
            url: url.to_owned(),
            hint: if missing {
                "the object does not exist: upload it or fix the URL"
            } else {
                "check that the prover can reach the store and has read access"
            },
            // A missing object stays missing (the gateway uploads before it creates the
            // job); an unreachable store may come back.
            retryable: !missing,
            message: e.to_string(),
        }
    })?;
    let bytes = result.bytes().await.map_err(|e| ProverError::Artifact {
        action: ACTION,
        url: url.to_owned(),
        message: e.to_string(),
        hint: "the transfer broke off; the job is retried",
        retryable: true,
    })?;
    Ok(bytes.to_vec())
}

/// Streams the object at `url` into the file `dest`, from byte `from` on (appended to the
/// file, which must hold the bytes before it; 0: the whole object into a new file). Returns
/// the bytes written. For parameter files of tens of GB: nothing is held in memory.
pub async fn download(url: &str, dest: &std::path::Path, from: u64) -> Result<u64, ProverError> {
    use futures::StreamExt;
    use tokio::io::AsyncWriteExt;
    const ACTION: &str = "downloading";
    let (store, path) = open(url, ACTION)?;
    let failed = |hint: &'static str| {
        move |e: object_store::Error| ProverError::Artifact {
            action: ACTION,
            url: url.to_owned(),
            retryable: !matches!(e, object_store::Error::NotFound { .. }),
            message: e.to_string(),
            hint,
        }
    };
    let options = object_store::GetOptions {
        range: (from > 0).then_some(object_store::GetRange::Offset(from)),
        ..Default::default()
    };
    let result = store.get_opts(&path, options).await.map_err(failed(
        "check the base URL and that the server has the file",
    ))?;
    let mut file = if from > 0 {
        tokio::fs::OpenOptions::new().append(true).open(dest).await
    } else {
        tokio::fs::File::create(dest).await
    }
    .map_err(ProverError::io("writing", dest))?;
    let mut stream = result.into_stream();
    let mut written = 0u64;
    while let Some(chunk) = stream.next().await {
        let chunk = chunk.map_err(failed("the transfer broke off; run it again to resume"))?;
        file.write_all(&chunk)
            .await
            .map_err(ProverError::io("writing", dest))?;
        written += chunk.len() as u64;
    }
    file.sync_all()
        .await
        .map_err(ProverError::io("writing", dest))?;
    Ok(written)
}

/// Writes `bytes` as the object at `url` (replacing it).
pub async fn put(url: &str, bytes: Vec<u8>) -> Result<(), ProverError> {
    const ACTION: &str = "writing";
    let (store, path) = open(url, ACTION)?;
    if url.starts_with("file:") {
        // LocalFileSystem writes through a temporary file, but not the directories above it.
        if let Some(dir) = Url::parse(url)
            .ok()
            .and_then(|u| u.to_file_path().ok())
            .and_then(|p| p.parent().map(|d| d.to_path_buf()))
        {
            std::fs::create_dir_all(&dir).map_err(ProverError::io("creating", dir))?;
        }
    }
    store
        .put(&path, PutPayload::from(bytes))
        .await
        .map_err(|e| ProverError::Artifact {
            action: ACTION,
            url: url.to_owned(),
            message: e.to_string(),
            hint: "check that the prover can reach the store and has write access",
            retryable: true,
        })?;
    Ok(())
}

/// The SHA-256 of `bytes`, 64 lowercase hex digits.
pub fn sha256_hex(bytes: &[u8]) -> String {
    hex::encode(Sha256::digest(bytes))
}

/// Fails unless `bytes` have the SHA-256 `expected`.
pub fn check_sha256(url: &str, bytes: &[u8], expected: &str) -> Result<(), ProverError> {
    let actual = sha256_hex(bytes);
    if actual == expected.to_ascii_lowercase() {
        Ok(())
    } else {
        Err(ProverError::Artifact {
            action: "checking",
            url: url.to_owned(),
            message: format!(
                "its SHA-256 is {actual}, not {expected} as the job says ({} bytes read)",
                bytes.len()
            ),
            hint: "the input changed or was cut short since the job was made: fix the input or \
                   the job's sha256",
            retryable: false,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[tokio::test]
    async fn files_round_trip_and_a_wrong_digest_is_named() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}/out/proof.bin", dir.path().display());
        put(&url, b"proof".to_vec()).await.unwrap();
        let back = fetch(&url).await.unwrap();
        assert_eq!(back, b"proof");
        check_sha256(&url, &back, &sha256_hex(b"proof")).unwrap();
        let err = check_sha256(&url, &back, &"0".repeat(64))
            .unwrap_err()
            .to_string();
        assert!(
            err.contains("its SHA-256 is") && err.contains("5 bytes read"),
            "{err}"
        );
    }

    #[tokio::test]
    async fn missing_objects_and_bad_urls_say_what_to_do() {
        let dir = tempfile::tempdir().unwrap();
        let missing = format!("file://{}/absent", dir.path().display());
        let err = fetch(&missing).await.unwrap_err().to_string();
        assert!(err.contains("upload it or fix the URL"), "{err}");
        let err = fetch("ftp://host/x").await.unwrap_err().to_string();
        assert!(err.contains("unsupported scheme"), "{err}");
        let err = fetch("not a url").await.unwrap_err().to_string();
        assert!(err.contains("not a URL"), "{err}");
        // Nothing listens on port 9 of loopback: unreachable, and said so.
        let err = fetch("http://127.0.0.1:9/c1.json")
            .await
            .unwrap_err()
            .to_string();
        assert!(err.contains("reading http://127.0.0.1:9/c1.json"), "{err}");
    }
}
