//! Memory cgroups for pods, as a kubelet makes them: one per pod, holding the container's
//! memory limit, so a prover sees (and is held to) the same limit it would see in a cluster.
//!
//! The choice of hierarchy is pure ([`memory_hierarchies`] over the text of
//! `/proc/self/mountinfo` and `/proc/self/cgroup`); the rest writes to cgroupfs.
//!
//! - cgroup v2: the runner's directory is a sibling of the runner's own cgroup (v2 forbids
//!   controllers in a cgroup that holds processes, so it cannot be a child), with `+memory`
//!   in its `cgroup.subtree_control`; each pod gets a child with `memory.max`.
//! - cgroup v1: the runner's directory is a child of the runner's own memory cgroup; each pod
//!   gets a child with `memory.limit_in_bytes`.

use std::fs;
use std::io;
use std::path::{Path, PathBuf};
use std::time::Duration;

/// Which cgroup interface a hierarchy speaks.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum CgroupVersion {
    /// The legacy per-controller hierarchies (`memory.limit_in_bytes`).
    V1,
    /// The unified hierarchy (`memory.max`).
    V2,
}

/// A mounted hierarchy that may carry the memory controller, and this process's place in it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MemoryHierarchy {
    /// Its interface.
    pub version: CgroupVersion,
    /// Where it is mounted.
    pub mount_point: PathBuf,
    /// This process's cgroup, as a directory under `mount_point`.
    pub own_dir: PathBuf,
}

impl MemoryHierarchy {
    /// The directory under which the runner creates its own cgroup.
    pub fn runner_parent(&self) -> PathBuf {
        match self.version {
            CgroupVersion::V1 => self.own_dir.clone(),
            CgroupVersion::V2 if self.own_dir == self.mount_point => self.own_dir.clone(),
            CgroupVersion::V2 => self
                .own_dir
                .parent()
                .map_or_else(|| self.own_dir.clone(), Path::to_path_buf),
        }
    }
}

/// The hierarchies worth trying, cgroup v2 first (what a current kubelet uses), then the v1
/// memory controller. A v2 mount is listed even when it lacks the memory controller (hybrid
/// hosts); [`RunnerCgroup::create`] checks that, since it needs to read the controller list.
pub fn memory_hierarchies(mountinfo: &str, proc_cgroup: &str) -> Vec<MemoryHierarchy> {
    let mounts: Vec<Mount> = mountinfo.lines().filter_map(parse_mount).collect();
    let mut found = Vec::new();
    let mut add = |version: CgroupVersion, own_path: &str, mount: &Mount| {
        // A cgroup outside the mounted subtree (another cgroup namespace) is unreachable.
        if let Ok(relative) = Path::new(own_path).strip_prefix(&mount.root) {
            found.push(MemoryHierarchy {
                version,
                mount_point: mount.mount_point.clone(),
                own_dir: mount.mount_point.join(relative),
            });
        }
    };
    for line in proc_cgroup.lines() {
        let mut fields = line.splitn(3, ':');
        let (Some(id), Some(controllers), Some(path)) =
            (fields.next(), fields.next(), fields.next())
        else {
            continue;
        };
        if id == "0" && controllers.is_empty() {
            if let Some(mount) = mounts.iter().find(|m| m.fs_type == "cgroup2") {
                add(CgroupVersion::V2, path, mount);
            }
        } else if controllers.split(',').any(|c| c == "memory") {
            let memory_mount = mounts.iter().find(|m| {
                m.fs_type == "cgroup" && m.super_options.split(',').any(|o| o == "memory")
            });
            if let Some(mount) = memory_mount {
                add(CgroupVersion::V1, path, mount);
            }
        }
    }
    found.sort_by_key(|h| h.version != CgroupVersion::V2);
    found
}

/// The fields of a `/proc/self/mountinfo` line the choice needs.
struct Mount {
    root: PathBuf,
    mount_point: PathBuf,
    fs_type: String,
    super_options: String,
}

/// Parses `36 25 0:32 / /sys/fs/cgroup/memory rw,relatime shared:15 - cgroup cgroup rw,memory`.
fn parse_mount(line: &str) -> Option<Mount> {
    let (before, after) = line.split_once(" - ")?;
    let mut before = before.split(' ');
    let root = before.nth(3)?;
    let mount_point = before.next()?;
    let mut after = after.split(' ');
    let fs_type = after.next()?;
    let super_options = after.nth(1).unwrap_or("");
    Some(Mount {
        root: PathBuf::from(unescape_octal(root)),
        mount_point: PathBuf::from(unescape_octal(mount_point)),
        fs_type: fs_type.to_owned(),
        super_options: super_options.to_owned(),
    })
}

/// mountinfo writes space, tab, newline and backslash in paths as `\040`-style octal.
fn unescape_octal(field: &str) -> String {
    let bytes = field.as_bytes();
    let mut out = Vec::with_capacity(bytes.len());
    let mut i = 0;
    while i < bytes.len() {
        let octal = bytes
            .get(i + 1..i + 4)
            .filter(|digits| bytes[i] == b'\\' && digits.iter().all(|d| (b'0'..=b'7').contains(d)));
        match octal.and_then(|digits| u8::from_str_radix(std::str::from_utf8(digits).ok()?, 8).ok())
        {
            Some(byte) => {
                out.push(byte);
                i += 4;
            }
            None => {
                out.push(bytes[i]);
                i += 1;
            }
        }
    }
    String::from_utf8_lossy(&out).into_owned()
}

/// The `oom_kill N` count of `memory.oom_control` (v1) or `memory.events` (v2).
pub fn oom_kill_count(text: &str) -> Option<u64> {
    text.lines()
        .find_map(|line| line.strip_prefix("oom_kill "))
        .and_then(|count| count.trim().parse().ok())
}

/// The runner's own cgroup directory, parent of one cgroup per pod.
#[derive(Debug)]
pub struct RunnerCgroup {
    version: CgroupVersion,
    dir: PathBuf,
}

impl RunnerCgroup {
    /// Creates `name` in the first usable memory hierarchy of this host, or says why none is.
    pub fn create(name: &str) -> Result<Self, String> {
        let read = |path: &str| fs::read_to_string(path).map_err(|e| format!("read {path}: {e}"));
        let hierarchies =
            memory_hierarchies(&read("/proc/self/mountinfo")?, &read("/proc/self/cgroup")?);
        if hierarchies.is_empty() {
            return Err("no memory cgroup hierarchy is mounted".into());
        }
        let mut reasons = Vec::new();
        for hierarchy in hierarchies {
            match Self::create_in(&hierarchy, name) {
                Ok(cgroup) => return Ok(cgroup),
                Err(reason) => reasons.push(format!(
                    "{:?} at {}: {reason}",
                    hierarchy.version,
                    hierarchy.runner_parent().display()
                )),
            }
        }
        Err(reasons.join("; "))
    }

    fn create_in(hierarchy: &MemoryHierarchy, name: &str) -> Result<Self, String> {
        let dir = hierarchy.runner_parent().join(name);
        fs::create_dir(&dir).map_err(|e| format!("mkdir {}: {e}", dir.display()))?;
        let cgroup = Self {
            version: hierarchy.version,
            dir,
        };
        if cgroup.version == CgroupVersion::V2 {
            let controllers =
                fs::read_to_string(cgroup.dir.join("cgroup.controllers")).unwrap_or_default();
            let enabled = controllers.split_whitespace().any(|c| c == "memory")
                && fs::write(cgroup.dir.join("cgroup.subtree_control"), "+memory").is_ok();
            if !enabled {
                cgroup.remove();
                return Err("the memory controller is not delegated here".into());
            }
        }
        Ok(cgroup)
    }

    /// Which interface the runner's cgroups speak.
    pub fn version(&self) -> CgroupVersion {
        self.version
    }

    /// Creates the cgroup of one pod, limited to `memory_limit` bytes when set.
    pub fn pod(&self, name: &str, memory_limit: Option<u64>) -> io::Result<PodCgroup> {
        let dir = self.dir.join(name);
        fs::create_dir(&dir)?;
        let pod = PodCgroup {
            version: self.version,
            dir,
        };
        if let Some(limit) = memory_limit {
            let file = match self.version {
                CgroupVersion::V1 => "memory.limit_in_bytes",
                CgroupVersion::V2 => "memory.max",
            };
            if let Err(err) = fs::write(pod.dir.join(file), limit.to_string()) {
                pod.remove();
                return Err(err);
            }
            // Without swap off, a v2 pod over its limit would swap instead of being
            // OOM-killed; the kubelet turns it off for the same reason.
            if self.version == CgroupVersion::V2 && pod.dir.join("memory.swap.max").exists() {
                fs::write(pod.dir.join("memory.swap.max"), "0")?;
            }
        }
        Ok(pod)
    }

    /// Removes the runner's directory; pods' cgroups must be gone already.
    pub fn remove(&self) {
        remove_dir_retrying(&self.dir);
    }
}

/// One pod's memory cgroup.
#[derive(Debug)]
pub struct PodCgroup {
    version: CgroupVersion,
    dir: PathBuf,
}

impl PodCgroup {
    /// The file a process writes its pid (or `0`, for itself) to, to join this cgroup.
    pub fn procs_file(&self) -> PathBuf {
        self.dir.join("cgroup.procs")
    }

    /// The cgroup's directory.
    pub fn dir(&self) -> &Path {
        &self.dir
    }

    /// How many processes the kernel OOM-killed in this cgroup.
    pub fn oom_kills(&self) -> u64 {
        let file = match self.version {
            CgroupVersion::V1 => "memory.oom_control",
            CgroupVersion::V2 => "memory.events",
        };
        fs::read_to_string(self.dir.join(file))
            .ok()
            .and_then(|text| oom_kill_count(&text))
            .unwrap_or(0)
    }

    /// SIGKILLs every process still in the cgroup (children that left the process group
    /// included), as a container's end takes all of its processes with it.
    pub fn kill_all(&self) {
        let Ok(procs) = fs::read_to_string(self.procs_file()) else {
            return;
        };
        for pid in procs
            .lines()
            .filter_map(|line| line.trim().parse::<libc::pid_t>().ok())
        {
            // SAFETY: kill(2) takes no pointers; a pid that exited meanwhile yields ESRCH.
            unsafe { libc::kill(pid, libc::SIGKILL) };
        }
    }

    /// Kills what is left and removes the cgroup.
    pub fn remove(&self) {
        self.kill_all();
        remove_dir_retrying(&self.dir);
    }
}

/// rmdir fails with EBUSY until the kernel has released the last dying task; that takes a
/// moment after the kill.
fn remove_dir_retrying(dir: &Path) {
    for _ in 0..50 {
        match fs::remove_dir(dir) {
            Ok(()) => return,
            Err(err) if err.kind() == io::ErrorKind::NotFound => return,
            Err(_) => std::thread::sleep(Duration::from_millis(20)),
        }
    }
    eprintln!("pod runner: could not remove cgroup {}", dir.display());
}

#[cfg(test)]
mod tests {
    use super::*;

    const HYBRID_MOUNTINFO: &str = "\
31 23 0:28 / /sys/fs/cgroup rw,relatime - tmpfs tmpfs rw,mode=755
32 31 0:29 / /sys/fs/cgroup/cpu rw,relatime - cgroup cgroup rw,cpu
35 31 0:32 / /sys/fs/cgroup/memory rw,relatime - cgroup cgroup rw,memory
41 31 0:38 / /sys/fs/cgroup/unified rw,relatime - cgroup2 cgroup2 rw
";

    const HYBRID_CGROUP: &str = "\
4:memory:/process_api/c0b4
1:cpu:/
0::/
";

    #[test]
    fn hybrid_host_lists_v2_then_the_v1_memory_controller() {
        let found = memory_hierarchies(HYBRID_MOUNTINFO, HYBRID_CGROUP);
        assert_eq!(
            found,
            [
                MemoryHierarchy {
                    version: CgroupVersion::V2,
                    mount_point: "/sys/fs/cgroup/unified".into(),
                    own_dir: "/sys/fs/cgroup/unified/".into(),
                },
                MemoryHierarchy {
                    version: CgroupVersion::V1,
                    mount_point: "/sys/fs/cgroup/memory".into(),
                    own_dir: "/sys/fs/cgroup/memory/process_api/c0b4".into(),
                },
            ]
        );
        // v1 nests under the own cgroup; v2 at the root of the hierarchy stays at the root.
        assert_eq!(
            found[0].runner_parent(),
            Path::new("/sys/fs/cgroup/unified")
        );
        assert_eq!(
            found[1].runner_parent(),
            Path::new("/sys/fs/cgroup/memory/process_api/c0b4")
        );
    }

    #[test]
    fn unified_host_uses_a_sibling_of_its_own_cgroup() {
        let mountinfo =
            "30 23 0:26 / /sys/fs/cgroup rw,nosuid shared:4 - cgroup2 cgroup2 rw,nsdelegate\n";
        let found = memory_hierarchies(mountinfo, "0::/user.slice/session-1.scope\n");
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].version, CgroupVersion::V2);
        assert_eq!(
            found[0].own_dir,
            Path::new("/sys/fs/cgroup/user.slice/session-1.scope")
        );
        assert_eq!(
            found[0].runner_parent(),
            Path::new("/sys/fs/cgroup/user.slice")
        );
    }

    #[test]
    fn container_mounts_its_own_subtree_at_the_mount_point() {
        let mountinfo = "\
40 30 0:40 /docker/abc /sys/fs/cgroup/memory ro - cgroup cgroup rw,memory
41 30 0:41 /docker/abc /sys/fs/cgroup/cpu,cpuacct ro - cgroup cgroup rw,cpu,cpuacct
";
        let found = memory_hierarchies(
            mountinfo,
            "5:memory:/docker/abc/inner\n3:cpu,cpuacct:/docker/abc\n",
        );
        assert_eq!(found.len(), 1);
        assert_eq!(found[0].own_dir, Path::new("/sys/fs/cgroup/memory/inner"));
    }

    #[test]
    fn cgroup_outside_the_mounted_subtree_is_skipped() {
        let mountinfo =
            "40 30 0:40 /docker/abc /sys/fs/cgroup/memory rw - cgroup cgroup rw,memory\n";
        assert_eq!(memory_hierarchies(mountinfo, "5:memory:/elsewhere\n"), []);
    }

    #[test]
    fn no_cgroup_mounts_means_no_candidates() {
        let mountinfo = "22 1 8:1 / / rw,relatime - ext4 /dev/sda1 rw\n";
        assert_eq!(memory_hierarchies(mountinfo, "0::/\n"), []);
        // The memory controller listed in /proc/self/cgroup but not mounted is no use either.
        assert_eq!(memory_hierarchies(mountinfo, "4:memory:/\n"), []);
    }

    #[test]
    fn escaped_mount_points_are_decoded() {
        let mountinfo = "35 31 0:32 / /mnt/cg\\040mem rw - cgroup cgroup rw,memory\n";
        let found = memory_hierarchies(mountinfo, "4:memory:/\n");
        assert_eq!(found[0].own_dir, Path::new("/mnt/cg mem/"));
    }

    #[test]
    fn oom_kill_count_from_v1_and_v2_files() {
        assert_eq!(
            oom_kill_count("oom_kill_disable 0\nunder_oom 0\noom_kill 2\n"),
            Some(2)
        );
        assert_eq!(
            oom_kill_count("low 0\nhigh 0\nmax 5\noom 1\noom_kill 1\noom_group_kill 0\n"),
            Some(1)
        );
        assert_eq!(oom_kill_count("oom_kill_disable 0\nunder_oom 0\n"), None);
    }
}
