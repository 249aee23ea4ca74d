//! Where a benchmark ran, recorded in its report: two hosts of the same card can differ by
//! 1.5x, so a figure without its machine cannot be compared with another. Each field says "not
//! recorded" where this machine does not tell it.

use serde_json::{Value, json};

const NOT_RECORDED: &str = "not recorded";

/// The GPUs (name, driver, memory, from `nvidia-smi`), the CPU model and cores, the memory
/// limit the process runs under and where it came from, the commit the binary was built from
/// (`PROOFPIPE_GIT_COMMIT` at build time, set by scripts/cuda-build.sh; else the work tree's,
/// as `cargo bench` runs there) and the command line.
pub fn record() -> Value {
    let limit = proofpipe_pipeline::sizing::detect_memory_limit(None).ok();
    json!({
        "gpus": gpus(),
        "cpu_model": cpu_model().unwrap_or_else(|| NOT_RECORDED.into()),
        "cpu_cores": std::thread::available_parallelism().map_or(1, |n| n.get()),
        "memory_limit_bytes": limit.as_ref().map(|l| l.bytes),
        "memory_limit_source": limit.map_or_else(|| NOT_RECORDED.into(), |l| l.source.to_string()),
        "commit": commit(),
        "command": std::env::args().collect::<Vec<_>>().join(" "),
    })
}

/// The commit stamped at build time, else the work tree's HEAD ("-dirty" with uncommitted
/// changes), else "not recorded".
fn commit() -> String {
    if let Some(stamped) = option_env!("PROOFPIPE_GIT_COMMIT") {
        return stamped.to_string();
    }
    let git = |args: &[&str]| std::process::Command::new("git").args(args).output().ok();
    match git(&["rev-parse", "HEAD"]) {
        Some(out) if out.status.success() => {
            let head = String::from_utf8_lossy(&out.stdout).trim().to_string();
            let clean = git(&["diff", "--quiet", "HEAD"]).is_some_and(|o| o.status.success());
            if clean { head } else { format!("{head}-dirty") }
        }
        _ => NOT_RECORDED.into(),
    }
}

/// "model name" of /proc/cpuinfo's first processor.
pub fn cpu_model() -> Option<String> {
    let info = std::fs::read_to_string("/proc/cpuinfo").ok()?;
    model_name(&info)
}

fn model_name(cpuinfo: &str) -> Option<String> {
    cpuinfo
        .lines()
        .find_map(|line| line.strip_prefix("model name")?.split_once(':'))
        .map(|(_, name)| name.trim().to_string())
}

/// One entry per GPU `nvidia-smi` lists, or the words saying why there is none.
fn gpus() -> Value {
    let out = std::process::Command::new("nvidia-smi")
        .args([
            "--query-gpu=name,driver_version,memory.total",
            "--format=csv,noheader",
        ])
        .output();
    match out {
        Ok(out) if out.status.success() => {
            Value::Array(parse_gpus(&String::from_utf8_lossy(&out.stdout)))
        }
        _ => json!(format!("{NOT_RECORDED}: nvidia-smi did not answer")),
    }
}

fn parse_gpus(csv: &str) -> Vec<Value> {
    csv.lines()
        .filter(|line| !line.trim().is_empty())
        .map(|line| {
            let fields: Vec<&str> = line.split(',').map(str::trim).collect();
            json!({
                "name": fields.first().copied().unwrap_or(NOT_RECORDED),
                "driver": fields.get(1).copied().unwrap_or(NOT_RECORDED),
                "memory": fields.get(2).copied().unwrap_or(NOT_RECORDED),
            })
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_cpu_model_and_gpus_are_read_from_what_linux_and_nvidia_smi_print() {
        let cpuinfo = "processor\t: 0\nvendor_id\t: AuthenticAMD\nmodel name\t: AMD EPYC 9454 48-Core Processor\n";
        assert_eq!(
            model_name(cpuinfo).as_deref(),
            Some("AMD EPYC 9454 48-Core Processor")
        );
        assert_eq!(model_name("processor\t: 0\n"), None);
        let gpus = parse_gpus("NVIDIA H100 80GB HBM3, 580.95.05, 81559 MiB\n\n");
        assert_eq!(gpus.len(), 1);
        assert_eq!(gpus[0]["name"], "NVIDIA H100 80GB HBM3");
        assert_eq!(gpus[0]["driver"], "580.95.05");
        assert_eq!(gpus[0]["memory"], "81559 MiB");
    }

    #[test]
    fn a_record_names_every_field() {
        let r = record();
        for field in ["gpus", "cpu_model", "cpu_cores", "commit", "command"] {
            assert!(!r[field].is_null(), "{field}: {r}");
        }
    }
}
