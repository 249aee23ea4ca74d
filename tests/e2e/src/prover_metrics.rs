//! A prover daemon's `/metrics`, read at the address it logged: a pool's provers listen on
//! `127.0.0.1:0` (every pod of the pod runner shares the host's network), so only the
//! daemon's start-up log line (`listen=...`) says where.

use tokio::io::{AsyncReadExt, AsyncWriteExt};

/// The `/metrics` text of the daemon whose log is `log`.
pub async fn scrape(log: &str) -> String {
    let listen =
        listen_address(log).unwrap_or_else(|| panic!("the daemon logs its listen address:\n{log}"));
    let mut stream = tokio::net::TcpStream::connect(&listen).await.unwrap();
    stream
        .write_all(b"GET /metrics HTTP/1.0\r\nHost: prover\r\n\r\n")
        .await
        .unwrap();
    let mut text = String::new();
    stream.read_to_string(&mut text).await.unwrap();
    text
}

/// The value of the sample `series` (its name and labels, as written) in `metrics`.
pub fn sample(metrics: &str, series: &str) -> Option<f64> {
    metrics.lines().find_map(|line| {
        let value = line.strip_prefix(series)?.strip_prefix(' ')?;
        value.trim().parse().ok()
    })
}

/// The `listen=` address of the daemon's start-up line.
fn listen_address(log: &str) -> Option<String> {
    without_colors(log).lines().find_map(|line| {
        line.split_whitespace()
            .find_map(|word| word.strip_prefix("listen="))
            .map(str::to_owned)
    })
}

/// The daemon's text log without the escape sequences it may color its field names with
/// (`name=value` then reads as written).
pub fn without_colors(log: &str) -> String {
    let mut plain = String::with_capacity(log.len());
    let mut chars = log.chars();
    while let Some(c) = chars.next() {
        if c == '\u{1b}' {
            chars.by_ref().take_while(|&c| c != 'm').for_each(drop);
        } else {
            plain.push(c);
        }
    }
    plain
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_listen_address_is_found_through_colors() {
        let log = "2026 INFO prover daemon started \u{1b}[3mlisten\u{1b}[0m\u{1b}[2m=\u{1b}[0m127.0.0.1:4321 params_dir=/p\n";
        assert_eq!(listen_address(log).as_deref(), Some("127.0.0.1:4321"));
        assert_eq!(listen_address("no address here"), None);
    }

    #[test]
    fn a_sample_is_read_by_its_whole_series() {
        let text = "# HELP x\nproofpipe_prover_gpu_missing 1\nproofpipe_prover_gpu_missing_other 7\n\
                    proofpipe_daemon_job_failures_total{reason=\"GpuLost\"} 2\n";
        assert_eq!(sample(text, "proofpipe_prover_gpu_missing"), Some(1.0));
        assert_eq!(
            sample(
                text,
                "proofpipe_daemon_job_failures_total{reason=\"GpuLost\"}"
            ),
            Some(2.0)
        );
        assert_eq!(sample(text, "proofpipe_prover_gpu_devices"), None);
    }
}
