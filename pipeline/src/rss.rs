//! Measured memory (from /proc) and CPU time of this process (Linux).

/// Peak resident set size (VmHWM) in bytes, if the kernel reports it.
pub fn peak_rss_bytes() -> Option<u64> {
    status_kib("VmHWM:").map(|k| k * 1024)
}

/// Current resident set size (VmRSS) in bytes.
pub fn current_rss_bytes() -> Option<u64> {
    status_kib("VmRSS:").map(|k| k * 1024)
}

/// Resets the peak to the current RSS, so a later peak measures only what follows (used
/// after one-time parameter generation, whose transient memory the pipeline never needs).
pub fn reset_peak_rss() -> bool {
    std::fs::write("/proc/self/clear_refs", "5").is_ok()
}

/// CPU seconds this process has used so far, every thread's user and system time together:
/// the difference across a stretch of work is its core-seconds.
pub fn process_cpu_seconds() -> Option<f64> {
    let mut usage = std::mem::MaybeUninit::<libc::rusage>::uninit();
    // SAFETY: getrusage writes the whole struct when it returns 0.
    let usage = unsafe {
        if libc::getrusage(libc::RUSAGE_SELF, usage.as_mut_ptr()) != 0 {
            return None;
        }
        usage.assume_init()
    };
    let seconds = |t: libc::timeval| t.tv_sec as f64 + t.tv_usec as f64 * 1e-6;
    Some(seconds(usage.ru_utime) + seconds(usage.ru_stime))
}

fn status_kib(field: &str) -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    parse_status_kib(&status, field)
}

fn parse_status_kib(status: &str, field: &str) -> Option<u64> {
    status
        .lines()
        .find(|l| l.starts_with(field))?
        .split_whitespace()
        .nth(1)?
        .parse()
        .ok()
}

/// Hands the allocator's free memory back to the system (glibc's `malloc_trim`, which walks
/// every arena): after work that made many medium allocations on many threads and freed them,
/// such as recording a partition's R1CS matrices in thousands of parts, whose freed blocks
/// glibc's per-thread arenas would otherwise keep resident (measured: ~10 GiB after recording a
/// 32 GiB WindowPoSt partition's matrices in its 2,349 sector parts). Elsewhere a no-op.
pub fn release_free_heap() {
    #[cfg(all(target_os = "linux", target_env = "gnu"))]
    // SAFETY: malloc_trim only returns free pages to the kernel; it touches no live allocation.
    unsafe {
        libc::malloc_trim(0);
    }
}

#[cfg(test)]
mod tests {
    #[test]
    fn parses_proc_status() {
        let s = "Name:\tx\nVmHWM:\t  2048 kB\nVmRSS:\t 1024 kB\n";
        assert_eq!(super::parse_status_kib(s, "VmHWM:"), Some(2048));
        assert_eq!(super::parse_status_kib(s, "VmSwap:"), None);
    }

    #[test]
    fn cpu_seconds_grow_with_work() {
        let before = super::process_cpu_seconds().unwrap();
        let mut x = 0u64;
        let started = std::time::Instant::now();
        while started.elapsed().as_millis() < 50 {
            x = std::hint::black_box(x.wrapping_mul(31).wrapping_add(7));
        }
        assert!(super::process_cpu_seconds().unwrap() > before);
    }

    #[test]
    fn reads_this_process() {
        assert!(super::peak_rss_bytes().unwrap() >= super::current_rss_bytes().unwrap() / 2);
    }
}
