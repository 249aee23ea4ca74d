//! `proofpipe-operator run` as a child process of the test.

use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};

use crate::process::free_port;

/// A running operator; dropping it kills it.
pub struct OperatorProcess {
    child: Child,
    log: PathBuf,
    listen: String,
}

impl OperatorProcess {
    /// Starts `binary run --namespace <namespace> --listen 127.0.0.1:<free port>` with
    /// `POD_NAMESPACE=<namespace>`, appending its output to `log`.
    pub fn start(binary: &Path, namespace: &str, log: &Path) -> Self {
        let listen = format!("127.0.0.1:{}", free_port());
        let file = std::fs::OpenOptions::new()
            .create(true)
            .append(true)
            .open(log)
            .expect("open the operator's log");
        let child = Command::new(binary)
            .args(["run", "--namespace", namespace, "--listen", &listen])
            .env("POD_NAMESPACE", namespace)
            // The scenarios crash provers on purpose; their retries need not wait 10 s.
            .env("PROOFPIPE_RETRY_DELAY", "1")
            .stdin(Stdio::null())
            .stdout(file.try_clone().expect("clone the log handle"))
            .stderr(file)
            .spawn()
            .unwrap_or_else(|err| panic!("start {}: {err}", binary.display()));
        Self {
            child,
            log: log.to_path_buf(),
            listen,
        }
    }

    /// The operator's process id.
    pub fn pid(&self) -> u32 {
        self.child.id()
    }

    /// The address of its /metrics, /healthz and /readyz endpoints.
    pub fn listen(&self) -> &str {
        &self.listen
    }

    /// SIGKILLs the operator, as a crash or a node loss would, and reaps it.
    pub fn kill(&mut self) {
        // Already exited is fine: the point is that it is not running.
        let _ = self.child.kill();
        let _ = self.child.wait();
    }

    /// `Some(code)` once the operator has exited on its own.
    pub fn exited(&mut self) -> Option<std::process::ExitStatus> {
        self.child.try_wait().ok().flatten()
    }

    /// The last `lines` lines of the operator's log (all of its runs).
    pub fn log_tail(&self, lines: usize) -> String {
        let log = std::fs::read_to_string(&self.log).unwrap_or_default();
        let tail: Vec<&str> = log.lines().rev().take(lines).collect();
        tail.into_iter().rev().collect::<Vec<_>>().join("\n")
    }
}

impl Drop for OperatorProcess {
    fn drop(&mut self) {
        self.kill();
    }
}
