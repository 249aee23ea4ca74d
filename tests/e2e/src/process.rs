//! Starting a pod's container as a local process and signalling it.
//!
//! Each container gets its own process group, so signals reach everything it started, as
//! they would reach every process of a container.

use std::ffi::CString;
use std::io;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::ExitStatusExt;
use std::path::{Path, PathBuf};
use std::process::{ExitStatus, Stdio};

use tokio::process::{Child, Command};

/// Everything needed to start one container.
#[derive(Clone, Debug)]
pub struct Launch {
    /// The program and its arguments (entrypoint or command, then args).
    pub argv: Vec<String>,
    /// The complete environment; nothing is inherited.
    pub env: Vec<(String, String)>,
    /// Working directory.
    pub work_dir: PathBuf,
    /// File receiving both stdout and stderr.
    pub log: PathBuf,
    /// `cgroup.procs` of the cgroup the process must run in, if any.
    pub cgroup_procs: Option<PathBuf>,
}

/// Starts the process in a new process group. With `cgroup_procs` set, the child joins that
/// cgroup before it execs, so the memory limit holds from its first allocation; if it cannot
/// join, the spawn fails rather than run unlimited.
pub fn spawn(launch: &Launch) -> io::Result<Child> {
    let (program, args) = launch
        .argv
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command"))?;
    let log = std::fs::File::create(&launch.log)?;
    let mut command = Command::new(program);
    command
        .args(args)
        .env_clear()
        .envs(launch.env.iter().map(|(k, v)| (k, v)))
        .current_dir(&launch.work_dir)
        .stdin(Stdio::null())
        .stdout(log.try_clone()?)
        .stderr(log)
        .process_group(0);
    if let Some(procs) = &launch.cgroup_procs {
        let procs = c_path(procs)?;
        // SAFETY: the hook runs between fork and exec, so it may only make async-signal-safe
        // calls: open(2), write(2) and close(2) on a path allocated before the fork.
        unsafe {
            command.pre_exec(move || join_cgroup(&procs));
        }
    }
    command.spawn()
}

fn c_path(path: &Path) -> io::Result<CString> {
    CString::new(path.as_os_str().as_bytes())
        .map_err(|_| io::Error::new(io::ErrorKind::InvalidInput, "cgroup path contains NUL"))
}

/// Moves the calling process into the cgroup whose `cgroup.procs` is `procs` (writing `0`
/// means "the writer"). Only async-signal-safe calls.
fn join_cgroup(procs: &CString) -> io::Result<()> {
    // SAFETY: `procs` is a valid NUL-terminated path; the buffer outlives the write.
    unsafe {
        let fd = libc::open(procs.as_ptr(), libc::O_WRONLY | libc::O_CLOEXEC);
        if fd < 0 {
            return Err(io::Error::last_os_error());
        }
        let written = libc::write(fd, b"0".as_ptr().cast(), 1);
        let error = io::Error::last_os_error();
        libc::close(fd);
        if written != 1 {
            return Err(error);
        }
    }
    Ok(())
}

/// Sends `signal` to every process of the group `pgid`; a group that is gone is not an error.
pub fn signal_group(pgid: i32, signal: i32) {
    // SAFETY: kill(2) takes no pointers; a negative pid addresses the process group.
    unsafe { libc::kill(-pgid, signal) };
}

/// The exit code a container runtime reports: the code, or `128 + signal` for a signal death.
pub fn exit_code(status: ExitStatus) -> (i32, Option<i32>) {
    match (status.code(), status.signal()) {
        (Some(code), _) => (code, None),
        (None, Some(signal)) => (128 + signal, Some(signal)),
        (None, None) => (1, None),
    }
}

/// A loopback port nobody listens on right now.
pub fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .and_then(|listener| listener.local_addr())
        .expect("bind a loopback port")
        .port()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn launch(dir: &Path, script: &str) -> Launch {
        Launch {
            argv: vec!["/bin/sh".into(), "-c".into(), script.into()],
            env: vec![("GREETING".into(), "hi".into())],
            work_dir: dir.to_path_buf(),
            log: dir.join("log"),
            cgroup_procs: None,
        }
    }

    #[tokio::test]
    async fn runs_with_only_the_given_env_in_its_own_group_and_logs_both_streams() {
        let dir = tempfile::tempdir().unwrap();
        let script = "echo $GREETING ${HOME:-nohome}; echo err >&2; \
                      [ \"$(cut -d' ' -f5 /proc/$$/stat)\" = \"$$\" ] && echo leader; exit 3";
        let mut child = spawn(&launch(dir.path(), script)).unwrap();
        let status = child.wait().await.unwrap();
        assert_eq!(exit_code(status), (3, None));
        let log = std::fs::read_to_string(dir.path().join("log")).unwrap();
        assert!(log.contains("hi nohome\n"), "{log}");
        assert!(log.contains("err\n"), "{log}");
        assert!(
            log.contains("leader\n"),
            "the process leads its own group: {log}"
        );
    }

    #[tokio::test]
    async fn group_signal_kills_the_whole_group() {
        let dir = tempfile::tempdir().unwrap();
        let mut child = spawn(&launch(dir.path(), "sleep 30 & wait")).unwrap();
        let pgid = child.id().unwrap() as i32;
        signal_group(pgid, libc::SIGKILL);
        let status = child.wait().await.unwrap();
        assert_eq!(exit_code(status), (137, Some(libc::SIGKILL)));
    }

    #[tokio::test]
    async fn failing_to_join_the_cgroup_fails_the_spawn() {
        let dir = tempfile::tempdir().unwrap();
        let mut launch = launch(dir.path(), "true");
        launch.cgroup_procs = Some(dir.path().join("missing/cgroup.procs"));
        let err = spawn(&launch).unwrap_err();
        assert_eq!(err.kind(), io::ErrorKind::NotFound);
    }
}
