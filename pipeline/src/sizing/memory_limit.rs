//! Where the memory limit comes from: the `--memory-limit` flag, else the cgroup (v2, then
//! v1) the process runs in, else MemTotal. In a pod the cgroup holds the pod's limit;
//! MemTotal is the whole node's memory and would size the pipeline into an OOM kill.
//!
//! Parsing is pure; [`detect_memory_limit`] is the thin edge that reads the files.

use std::fmt;
use std::path::{Path, PathBuf};

use serde::Serialize;

use crate::error::ProverError;

/// Where a memory limit was read from.
#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
#[serde(tag = "kind", content = "path", rename_all = "kebab-case")]
pub enum LimitSource {
    Flag,
    CgroupV2(PathBuf),
    CgroupV1(PathBuf),
    MemTotal,
}

impl fmt::Display for LimitSource {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LimitSource::Flag => write!(f, "--memory-limit"),
            LimitSource::CgroupV2(p) => write!(f, "cgroup v2 {}", p.display()),
            LimitSource::CgroupV1(p) => write!(f, "cgroup v1 {}", p.display()),
            LimitSource::MemTotal => write!(f, "MemTotal in /proc/meminfo (no cgroup limit found)"),
        }
    }
}

#[derive(Clone, Debug, PartialEq, Eq, Serialize)]
pub struct MemoryLimit {
    pub bytes: u64,
    pub source: LimitSource,
}

/// Parses sizes like `64GiB`, `512 MiB`, `1.5GB`, `1073741824`.
pub fn parse_memory_size(s: &str) -> Result<u64, ProverError> {
    s.trim()
        .parse::<bytesize::ByteSize>()
        .map(|b| b.as_u64())
        .map_err(|e| ProverError::InvalidArgument {
            what: "memory size",
            reason: format!("{s:?} is not a size ({e}); write it like 64GiB, 512MiB or 1073741824"),
        })
}

/// cgroup v2 `memory.max`: a byte count, or "max" for no limit.
fn parse_v2_max(s: &str) -> Option<u64> {
    let s = s.trim();
    if s == "max" { None } else { s.parse().ok() }
}

/// cgroup v1 `memory.limit_in_bytes`: no limit is a huge page-rounded number.
fn parse_v1_limit(s: &str) -> Option<u64> {
    s.trim().parse::<u64>().ok().filter(|&v| v < (1 << 62))
}

fn parse_mem_total(meminfo: &str) -> Option<u64> {
    let line = meminfo.lines().find(|l| l.starts_with("MemTotal:"))?;
    let kib: u64 = line.split_whitespace().nth(1)?.parse().ok()?;
    Some(kib * 1024)
}

/// The cgroup path of a controller from `/proc/self/cgroup` (`None` names the v2 unified one).
fn cgroup_path<'a>(proc_cgroup: &'a str, controller: Option<&str>) -> Option<&'a str> {
    proc_cgroup.lines().find_map(|line| {
        let mut parts = line.splitn(3, ':');
        let (_, controllers, path) = (parts.next()?, parts.next()?, parts.next()?);
        let matches = match controller {
            None => controllers.is_empty(),
            Some(c) => controllers.split(',').any(|x| x == c),
        };
        matches.then_some(path)
    })
}

/// Mount points of the cgroup v2 hierarchy and of the v1 memory controller, from
/// `/proc/self/mountinfo` (hybrid hosts mount v2 at `/sys/fs/cgroup/unified`).
fn cgroup_mounts(mountinfo: &str) -> (Option<PathBuf>, Option<PathBuf>) {
    let (mut v2, mut v1_memory) = (None, None);
    for line in mountinfo.lines() {
        // "<id> <parent> <dev> <root> <mount point> <options> [optional...] - <fstype> <source> <super options>"
        let Some((left, right)) = line.split_once(" - ") else {
            continue;
        };
        let Some(mount_point) = left.split_whitespace().nth(4) else {
            continue;
        };
        let mut right = right.split_whitespace();
        let fstype = right.next().unwrap_or_default();
        let super_options = right.nth(1).unwrap_or_default();
        match fstype {
            "cgroup2" if v2.is_none() => v2 = Some(PathBuf::from(mount_point)),
            "cgroup" if v1_memory.is_none() && super_options.split(',').any(|o| o == "memory") => {
                v1_memory = Some(PathBuf::from(mount_point))
            }
            _ => {}
        }
    }
    (v2, v1_memory)
}

/// The tightest finite limit on the path from the process's cgroup up to the root:
/// a pod's limit may sit on a parent of the container's cgroup.
fn tightest<F>(
    read: &F,
    mount: &Path,
    cgroup: &str,
    file: &str,
    parse: fn(&str) -> Option<u64>,
) -> Option<(u64, PathBuf)>
where
    F: Fn(&Path) -> Option<String>,
{
    let mut best: Option<(u64, PathBuf)> = None;
    let mut dir = PathBuf::from(cgroup.trim_start_matches('/'));
    loop {
        let path = mount.join(&dir).join(file);
        if let Some(limit) = read(&path).as_deref().and_then(parse)
            && best.as_ref().is_none_or(|(b, _)| limit < *b)
        {
            best = Some((limit, path));
        }
        if !dir.pop() {
            return best;
        }
    }
}

/// Finds the limit with `read` standing in for the filesystem (for tests).
pub fn detect_with<F>(flag: Option<u64>, root: &Path, read: F) -> Option<MemoryLimit>
where
    F: Fn(&Path) -> Option<String>,
{
    if let Some(bytes) = flag {
        return Some(MemoryLimit {
            bytes,
            source: LimitSource::Flag,
        });
    }
    let proc_cgroup = read(&root.join("proc/self/cgroup")).unwrap_or_default();
    let (v2_mount, v1_mount) =
        cgroup_mounts(&read(&root.join("proc/self/mountinfo")).unwrap_or_default());
    let under_root = |p: PathBuf| root.join(p.strip_prefix("/").unwrap_or(&p));
    let v2_mount = v2_mount.map_or_else(|| root.join("sys/fs/cgroup"), under_root);
    let v1_mount = v1_mount.map_or_else(|| root.join("sys/fs/cgroup/memory"), under_root);
    if let Some(path) = cgroup_path(&proc_cgroup, None)
        && let Some((bytes, file)) = tightest(&read, &v2_mount, path, "memory.max", parse_v2_max)
    {
        return Some(MemoryLimit {
            bytes,
            source: LimitSource::CgroupV2(file),
        });
    }
    if let Some(path) = cgroup_path(&proc_cgroup, Some("memory"))
        && let Some((bytes, file)) = tightest(
            &read,
            &v1_mount,
            path,
            "memory.limit_in_bytes",
            parse_v1_limit,
        )
    {
        return Some(MemoryLimit {
            bytes,
            source: LimitSource::CgroupV1(file),
        });
    }
    let total = read(&root.join("proc/meminfo"))
        .as_deref()
        .and_then(parse_mem_total)?;
    Some(MemoryLimit {
        bytes: total,
        source: LimitSource::MemTotal,
    })
}

/// The memory limit this process must stay under.
pub fn detect_memory_limit(flag: Option<u64>) -> Result<MemoryLimit, ProverError> {
    detect_with(flag, Path::new("/"), |p| std::fs::read_to_string(p).ok()).ok_or_else(|| {
        ProverError::InvalidArgument {
            what: "memory limit",
            reason: "no cgroup limit and no /proc/meminfo; pass --memory-limit".into(),
        }
    })
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::*;

    fn fs(files: &[(&str, &str)]) -> impl Fn(&Path) -> Option<String> {
        let map: HashMap<PathBuf, String> = files
            .iter()
            .map(|(p, c)| (PathBuf::from(p), c.to_string()))
            .collect();
        move |p| map.get(p).cloned()
    }

    const MEMINFO: &str = "MemTotal:       16384 kB\nMemFree: 1 kB\n";

    #[test]
    fn flag_wins() {
        let l = detect_with(Some(5), Path::new("/"), fs(&[])).unwrap();
        assert_eq!(
            l,
            MemoryLimit {
                bytes: 5,
                source: LimitSource::Flag
            }
        );
    }

    #[test]
    fn v2_takes_the_tightest_ancestor() {
        let read = fs(&[
            ("/proc/self/cgroup", "0::/kubepods/pod1/ctr\n"),
            ("/sys/fs/cgroup/kubepods/pod1/ctr/memory.max", "max\n"),
            ("/sys/fs/cgroup/kubepods/pod1/memory.max", "1073741824\n"),
            ("/sys/fs/cgroup/kubepods/memory.max", "8589934592\n"),
            ("/proc/meminfo", MEMINFO),
        ]);
        let l = detect_with(None, Path::new("/"), read).unwrap();
        assert_eq!(l.bytes, 1 << 30);
        assert_eq!(
            l.source,
            LimitSource::CgroupV2("/sys/fs/cgroup/kubepods/pod1/memory.max".into())
        );
    }

    #[test]
    fn v2_inside_a_cgroup_namespace_reads_the_root() {
        let read = fs(&[
            ("/proc/self/cgroup", "0::/\n"),
            ("/sys/fs/cgroup/memory.max", "2147483648\n"),
        ]);
        assert_eq!(
            detect_with(None, Path::new("/"), read).unwrap().bytes,
            2 << 30
        );
    }

    #[test]
    fn v1_is_used_when_there_is_no_v2_limit() {
        let read = fs(&[
            (
                "/proc/self/cgroup",
                "12:cpu,cpuacct:/x\n9:memory:/kubepods/pod2\n0::/\n",
            ),
            (
                "/sys/fs/cgroup/memory/kubepods/pod2/memory.limit_in_bytes",
                "536870912\n",
            ),
            (
                "/sys/fs/cgroup/memory/memory.limit_in_bytes",
                "9223372036854771712\n",
            ),
            ("/proc/meminfo", MEMINFO),
        ]);
        let l = detect_with(None, Path::new("/"), read).unwrap();
        assert_eq!(l.bytes, 512 << 20);
        assert!(matches!(l.source, LimitSource::CgroupV1(_)));
    }

    #[test]
    fn hybrid_hosts_find_the_mounts_in_mountinfo() {
        let mountinfo = "30 25 0:26 / /sys/fs/cgroup/unified rw,nosuid - cgroup2 cgroup2 rw,nsdelegate\n\
                         33 25 0:29 / /sys/fs/cgroup/memory rw,nosuid shared:1 - cgroup cgroup rw,memory\n";
        let files = [
            ("/proc/self/mountinfo", mountinfo),
            ("/proc/self/cgroup", "4:memory:/pods/p3\n0::/pods/p3\n"),
            ("/sys/fs/cgroup/unified/pods/p3/memory.max", "max\n"),
            (
                "/sys/fs/cgroup/memory/pods/p3/memory.limit_in_bytes",
                "1073741824\n",
            ),
            ("/proc/meminfo", MEMINFO),
        ];
        let read = fs(&files);
        let l = detect_with(None, Path::new("/"), read).unwrap();
        assert_eq!(l.bytes, 1 << 30);
        assert_eq!(
            l.source,
            LimitSource::CgroupV1("/sys/fs/cgroup/memory/pods/p3/memory.limit_in_bytes".into())
        );
    }

    #[test]
    fn unlimited_cgroups_fall_back_to_memtotal() {
        let read = fs(&[
            ("/proc/self/cgroup", "0::/user.slice\n"),
            ("/sys/fs/cgroup/user.slice/memory.max", "max\n"),
            ("/proc/meminfo", MEMINFO),
        ]);
        let l = detect_with(None, Path::new("/"), read).unwrap();
        assert_eq!(
            l,
            MemoryLimit {
                bytes: 16384 * 1024,
                source: LimitSource::MemTotal
            }
        );
    }

    #[test]
    fn sizes_parse_with_units_and_reject_garbage() {
        assert_eq!(parse_memory_size("64GiB").unwrap(), 64 << 30);
        assert_eq!(parse_memory_size("512 MiB").unwrap(), 512 << 20);
        assert_eq!(parse_memory_size("1048576").unwrap(), 1 << 20);
        let err = parse_memory_size("lots").unwrap_err().to_string();
        assert!(err.contains("64GiB"), "{err}");
    }
}
