//! Logs and progress bars share stderr: log lines are printed through the progress bars so
//! neither garbles the other.

use std::io::Write;

use indicatif::MultiProgress;
use tracing_subscriber::EnvFilter;
use tracing_subscriber::fmt::MakeWriter;

#[derive(Clone)]
pub struct ProgressWriter(MultiProgress);

impl Write for ProgressWriter {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0.suspend(|| std::io::stderr().write_all(buf))?;
        Ok(buf.len())
    }
    fn flush(&mut self) -> std::io::Result<()> {
        std::io::stderr().flush()
    }
}

impl<'a> MakeWriter<'a> for ProgressWriter {
    type Writer = ProgressWriter;
    fn make_writer(&'a self) -> Self::Writer {
        self.clone()
    }
}

#[derive(Clone, Copy, Debug, clap::ValueEnum)]
pub enum LogFormat {
    Text,
    Json,
}

/// Installs the log subscriber; returns the progress-bar area logs print through.
pub fn init(filter: &str, format: LogFormat) -> MultiProgress {
    let progress = MultiProgress::new();
    let filter = EnvFilter::try_new(filter).unwrap_or_else(|e| {
        eprintln!("warning: bad log filter {filter:?} ({e}); using info");
        EnvFilter::new("info")
    });
    let logs = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_writer(ProgressWriter(progress.clone()));
    match format {
        LogFormat::Text => logs.with_target(false).init(),
        // An event's fields at the top level, as log collectors index them; the target
        // stays, so the `proofpipe::buffers` lines can be selected.
        LogFormat::Json => logs.json().flatten_event(true).init(),
    }
    progress
}
