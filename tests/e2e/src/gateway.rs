//! `proofpipe-gateway` as a child process of a test, in front of a scenario's pool.

use std::path::Path;
use std::process::Stdio;
use std::time::Duration;

use tokio::process::{Child, Command};

use crate::binaries::binary;

/// Starts the gateway for `pool` in `namespace`, storing C1 outputs under `artifacts`
/// (file://), with the bearer token in the file `token`, listening on 127.0.0.1:`port`;
/// returns once it accepts connections. The child is killed when dropped.
pub async fn start_gateway(
    namespace: &str,
    pool: &str,
    artifacts: &Path,
    token: &Path,
    port: u16,
) -> Child {
    let child = Command::new(binary("proofpipe-gateway"))
        .args(["--namespace", namespace, "--pool", pool, "--artifacts"])
        .arg(format!("file://{}", artifacts.display()))
        .arg("--token-file")
        .arg(token)
        .args(["--listen", &format!("127.0.0.1:{port}")])
        .args(["--metrics-listen", "127.0.0.1:0"])
        .stdout(Stdio::null())
        .stderr(Stdio::inherit())
        .kill_on_drop(true)
        .spawn()
        .expect("start proofpipe-gateway");
    for _ in 0..300 {
        if tokio::net::TcpStream::connect(("127.0.0.1", port))
            .await
            .is_ok()
        {
            return child;
        }
        tokio::time::sleep(Duration::from_millis(100)).await;
    }
    panic!("proofpipe-gateway did not listen on 127.0.0.1:{port} within 30 s");
}
