//! The artifact store: where the gateway puts each submission's input for the provers to read
//! by URL (a C1 output is tens of MB at 32 GiB, SnapDeals vanilla proofs megabytes; neither
//! goes into etcd). The same URL forms ProofJob inputs take: `s3://bucket/prefix`
//! (credentials, region and endpoint from the gateway's `AWS_*` environment) or `file:///path`
//! on a volume the prover pods mount at the same path.
//!
//! Layout: `<base>/<job name>/<sha256>.c1.json` (PoRep) or `<sha256>.snap.json` (SnapDeals).
//! Inputs are removed by a sweep once their job is gone (cancelled, or deleted after
//! `ttlSecondsAfterFinished`).

use std::collections::HashSet;
use std::sync::Arc;
use std::time::Duration;

use futures::TryStreamExt;
use k8s_openapi::jiff::Timestamp;
use object_store::aws::AmazonS3Builder;
use object_store::local::LocalFileSystem;
use object_store::path::Path as ObjectPath;
use object_store::{ObjectStore, PutPayload};
use url::Url;

use crate::error::GatewayError;
use crate::submission::{Submission, Work};

/// How long an input without a job is kept: a submission stores its input before it creates
/// the job, and the cache may lag the API server.
pub const ORPHAN_GRACE: Duration = Duration::from_secs(15 * 60);

/// The file name endings of the inputs, by kind of work.
const C1_SUFFIX: &str = ".c1.json";
const SNAP_SUFFIX: &str = ".snap.json";
/// A PoSt input: the prover's PoSt input JSON (`prove --window-post-vanilla`).
const POST_SUFFIX: &str = ".post.json";
const INPUT_SUFFIXES: &[&str] = &[C1_SUFFIX, SNAP_SUFFIX, POST_SUFFIX];

/// The file name ending of `work`'s input.
fn suffix(work: &Work) -> &'static str {
    match work {
        Work::PoRep { .. } => C1_SUFFIX,
        Work::SnapDeals { .. } => SNAP_SUFFIX,
        Work::WindowPost { .. } | Work::WinningPost { .. } => POST_SUFFIX,
    }
}

/// An object under the store's base: what the sweep looks at.
#[derive(Clone, Debug, PartialEq)]
pub struct StoredInput {
    pub path: ObjectPath,
    /// The job it was stored for (the first segment under the base).
    pub job: String,
    pub modified: Timestamp,
}

pub struct ArtifactStore {
    store: Arc<dyn ObjectStore>,
    /// The base URL, without a trailing slash.
    base_url: String,
    base_path: ObjectPath,
}

impl ArtifactStore {
    /// Opens the store at `url` (`s3://bucket[/prefix]` or `file:///dir`).
    pub fn open(url: &str) -> Result<Self, GatewayError> {
        let fail = |message: String| GatewayError::ArtifactStore {
            url: url.to_owned(),
            message,
        };
        let parsed = Url::parse(url).map_err(|e| {
            fail(format!(
                "not a URL ({e}): use s3://bucket/prefix or file:///dir"
            ))
        })?;
        let base_path =
            ObjectPath::from_url_path(parsed.path()).map_err(|e| fail(format!("bad path: {e}")))?;
        let store: Arc<dyn ObjectStore> = match parsed.scheme() {
            "s3" => Arc::new(
                AmazonS3Builder::from_env()
                    .with_url(url)
                    .build()
                    .map_err(|e| {
                        fail(format!(
                            "{e}; set the gateway's AWS_* environment (credentials, region, \
                             endpoint)"
                        ))
                    })?,
            ),
            "file" => Arc::new(LocalFileSystem::new()),
            other => {
                return Err(fail(format!(
                    "scheme {other}: is not one the gateway can list and delete in; use s3:// or \
                     file:///"
                )));
            }
        };
        Ok(Self {
            store,
            base_url: url.trim_end_matches('/').to_owned(),
            base_path,
        })
    }

    /// The path and URL of the input of `job` with digest `sha256`, for `work`.
    pub fn input_location(&self, job: &str, sha256: &str, work: &Work) -> (ObjectPath, String) {
        let file = format!("{sha256}{}", suffix(work));
        let path = self.base_path.child(job).child(file.as_str());
        (path, format!("{}/{job}/{file}", self.base_url))
    }

    /// Stores `bytes` as the input of `submission`'s job; returns its URL.
    pub async fn put_input(
        &self,
        submission: &Submission,
        bytes: impl Into<PutPayload>,
    ) -> Result<String, GatewayError> {
        let (path, url) = self.input_location(
            &submission.job_name,
            &submission.input_sha256,
            &submission.work,
        );
        self.store
            .put(&path, bytes.into())
            .await
            .map_err(|source| GatewayError::Artifact {
                action: "storing the input at",
                url: url.clone(),
                source,
            })?;
        Ok(url)
    }

    /// The inputs under the base.
    pub async fn list_inputs(&self) -> Result<Vec<StoredInput>, GatewayError> {
        let listed: Vec<_> = self
            .store
            .list(Some(&self.base_path))
            .try_collect()
            .await
            .map_err(|source| GatewayError::Artifact {
                action: "listing",
                url: self.base_url.clone(),
                source,
            })?;
        let base_depth = self.base_path.parts().count();
        Ok(listed
            .into_iter()
            .filter_map(|meta| {
                let job = meta.location.parts().nth(base_depth)?.as_ref().to_owned();
                let modified =
                    Timestamp::from_millisecond(meta.last_modified.timestamp_millis()).ok()?;
                let name = meta.location.as_ref();
                INPUT_SUFFIXES
                    .iter()
                    .any(|suffix| name.ends_with(suffix))
                    .then_some(StoredInput {
                        path: meta.location,
                        job,
                        modified,
                    })
            })
            .collect())
    }

    /// Deletes the inputs whose jobs are gone; returns how many.
    pub async fn sweep(&self, live_jobs: &HashSet<String>) -> Result<usize, GatewayError> {
        let inputs = self.list_inputs().await?;
        let stale = stale_inputs(&inputs, live_jobs, Timestamp::now());
        for path in &stale {
            self.store
                .delete(path)
                .await
                .map_err(|source| GatewayError::Artifact {
                    action: "deleting",
                    url: format!("{}/{}", self.base_url, path),
                    source,
                })?;
        }
        Ok(stale.len())
    }
}

/// Inputs to delete: their job is not among `live_jobs` and they are older than
/// [`ORPHAN_GRACE`] (younger ones may belong to a submission still creating its job).
pub fn stale_inputs(
    inputs: &[StoredInput],
    live_jobs: &HashSet<String>,
    now: Timestamp,
) -> Vec<ObjectPath> {
    let grace = i64::try_from(ORPHAN_GRACE.as_millis()).unwrap_or(i64::MAX);
    inputs
        .iter()
        .filter(|input| !live_jobs.contains(&input.job))
        .filter(|input| now.as_millisecond() - input.modified.as_millisecond() > grace)
        .map(|input| input.path.clone())
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn submission(job: &str, sha256: &str, work: Work) -> Submission {
        Submission {
            request_id: job.into(),
            job_name: job.into(),
            work,
            priority: 0,
            priority_name: "NORMAL",
            input_sha256: sha256.into(),
        }
    }

    #[tokio::test]
    async fn inputs_are_stored_by_job_and_digest_and_swept_once_their_job_is_gone() {
        let dir = tempfile::tempdir().unwrap();
        let url = format!("file://{}/inputs", dir.path().display());
        let store = ArtifactStore::open(&url).unwrap();
        let porep = Work::PoRep {
            seal_proof: "StackedDrg2KiBV1_1",
            miner_id: 1000,
            sector_number: None,
        };
        let written = store
            .put_input(
                &submission("job-a", &"ab".repeat(32), porep),
                b"{}".to_vec(),
            )
            .await
            .unwrap();
        assert_eq!(written, format!("{url}/job-a/{}.c1.json", "ab".repeat(32)));
        let on_disk = dir
            .path()
            .join("inputs/job-a")
            .join(format!("{}.c1.json", "ab".repeat(32)));
        assert_eq!(std::fs::read(&on_disk).unwrap(), b"{}");
        let snap = Work::SnapDeals {
            update_proof: "StackedDrg2KiBV1",
        };
        let written = store
            .put_input(&submission("job-b", &"cd".repeat(32), snap), b"{}".to_vec())
            .await
            .unwrap();
        assert_eq!(
            written,
            format!("{url}/job-b/{}.snap.json", "cd".repeat(32))
        );

        let inputs = store.list_inputs().await.unwrap();
        let mut jobs: Vec<&str> = inputs.iter().map(|i| i.job.as_str()).collect();
        jobs.sort();
        assert_eq!(jobs, ["job-a", "job-b"], "inputs of both kinds are listed");

        // Fresh inputs survive the sweep even without a job; old ones without a job go.
        let live = HashSet::from(["job-a".to_owned()]);
        assert_eq!(store.sweep(&live).await.unwrap(), 0);
        let later = Timestamp::now() + ORPHAN_GRACE + Duration::from_secs(1);
        let stale = stale_inputs(&inputs, &live, later);
        assert_eq!(stale.len(), 1);
        assert!(stale[0].as_ref().contains("job-b/"));
    }

    #[test]
    fn only_listable_stores_are_accepted() {
        let error = ArtifactStore::open("https://example.invalid/x")
            .err()
            .unwrap();
        assert!(error.to_string().contains("s3:// or file:///"), "{error}");
        assert!(ArtifactStore::open("not a url").is_err());
    }
}
