//! An S3-compatible store for the Filecoin scenarios' inputs and outputs: moto's server
//! (`scripts/s3-test-server.sh`), started on a free loopback port for one test.

use std::path::Path;
use std::time::Duration;

use object_store::aws::{AmazonS3, AmazonS3Builder};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::process::{Child, Command};

use crate::process::free_port;

/// The credentials the test store takes (moto accepts any).
pub const ACCESS_KEY: &str = "proofpipe-test";

/// moto's S3 server on a free loopback port, stopped when dropped.
pub struct S3Server {
    _child: Child,
    port: u16,
}

impl S3Server {
    /// Starts `moto` (the path of `moto_server`) and waits until it listens.
    pub async fn start(moto: &Path) -> Self {
        let port = free_port();
        let child = Command::new(moto)
            .args(["-H", "127.0.0.1", "-p", &port.to_string()])
            .stdout(std::process::Stdio::null())
            .stderr(std::process::Stdio::null())
            .kill_on_drop(true)
            .spawn()
            .unwrap_or_else(|e| panic!("starting {}: {e}", moto.display()));
        for _ in 0..200 {
            if tokio::net::TcpStream::connect(("127.0.0.1", port))
                .await
                .is_ok()
            {
                return Self {
                    _child: child,
                    port,
                };
            }
            tokio::time::sleep(Duration::from_millis(100)).await;
        }
        panic!("moto_server did not listen on 127.0.0.1:{port} within 20 s");
    }

    pub fn endpoint(&self) -> String {
        format!("http://127.0.0.1:{}", self.port)
    }

    /// Creates the bucket (a plain `PUT /bucket`; object_store does not create buckets).
    pub async fn create_bucket(&self, bucket: &str) {
        let mut stream = tokio::net::TcpStream::connect(("127.0.0.1", self.port))
            .await
            .unwrap();
        let request = format!(
            "PUT /{bucket} HTTP/1.1\r\nHost: 127.0.0.1:{}\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
            self.port
        );
        stream.write_all(request.as_bytes()).await.unwrap();
        let mut response = String::new();
        stream.read_to_string(&mut response).await.unwrap();
        assert!(
            response.starts_with("HTTP/1.1 200"),
            "create bucket: {response}"
        );
    }

    /// A client of `bucket`.
    pub fn client(&self, bucket: &str) -> AmazonS3 {
        AmazonS3Builder::new()
            .with_bucket_name(bucket)
            .with_endpoint(self.endpoint())
            .with_allow_http(true)
            .with_region("us-east-1")
            .with_access_key_id(ACCESS_KEY)
            .with_secret_access_key(ACCESS_KEY)
            .build()
            .unwrap()
    }

    /// The `AWS_*` environment a prover container needs to reach this store.
    pub fn prover_env(&self) -> serde_json::Value {
        serde_json::json!([
            { "name": "AWS_ENDPOINT", "value": self.endpoint() },
            { "name": "AWS_ALLOW_HTTP", "value": "true" },
            { "name": "AWS_DEFAULT_REGION", "value": "us-east-1" },
            { "name": "AWS_ACCESS_KEY_ID", "value": ACCESS_KEY },
            { "name": "AWS_SECRET_ACCESS_KEY", "value": ACCESS_KEY },
        ])
    }
}

/// Lowercase hex, as ProofJobs spell SHA-256 digests.
pub fn hex(bytes: &[u8]) -> String {
    bytes.iter().map(|b| format!("{b:02x}")).collect()
}
