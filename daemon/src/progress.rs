//! What the daemon is doing for its job, and when that last moved: the heartbeat that tells a
//! slow prover from a stuck one (ADR 0021).
//!
//! Pure: the watchdog feeds it instants and buffer snapshots, and asks whether the job stalled.

use std::fmt;
use std::time::{Duration, Instant};

use proofpipe_pipeline::pipeline::BufferSnapshot;

/// The steps of a job, in order. Each begins with a heartbeat; inside `Proving`, every
/// partition that moves between the pipeline's stages is one.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum Stage {
    FetchingInput,
    LoadingParameters,
    Proving,
    Verifying,
    WritingProofs,
    /// The job ended; its pipeline's threads are being joined (its memory freed).
    Stopping,
}

impl Stage {
    pub fn as_str(self) -> &'static str {
        match self {
            Self::FetchingInput => "fetching input",
            Self::LoadingParameters => "loading parameters",
            Self::Proving => "proving",
            Self::Verifying => "verifying",
            Self::WritingProofs => "writing proofs",
            Self::Stopping => "stopping",
        }
    }
}

impl fmt::Display for Stage {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// How long a cancelled job may take to stop before the prover counts as stuck: a pipeline
/// stops between partitions, and partitions waiting or synthesizing are dropped. A partition
/// already in the GPU stage or finalizing cannot be interrupted (a kernel sequence, or a
/// CPU-backend MSM that runs for tens of seconds): the grace starts once none is left there,
/// and until then the progress deadline applies as to any stage.
pub const CANCEL_GRACE: Duration = Duration::from_secs(30);

/// The heartbeat of the current job.
#[derive(Clone, Debug)]
pub struct Heartbeat {
    stage: Stage,
    last_progress: Instant,
    buffers: Option<BufferSnapshot>,
    cancelled_at: Option<Instant>,
}

/// A job that stopped moving.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Stall {
    pub stage: Stage,
    /// Seconds without progress.
    pub seconds: u64,
    /// Where the pipeline's partitions were, in the proving stage.
    pub buffers: Option<String>,
    /// The job was cancelled and did not stop within [`CANCEL_GRACE`].
    pub after_cancel: bool,
}

impl fmt::Display for Stall {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        if self.after_cancel {
            write!(
                f,
                "the cancelled job did not stop within {} s, in stage {}",
                self.seconds, self.stage
            )?;
        } else {
            write!(
                f,
                "no progress for {} s in stage {}",
                self.seconds, self.stage
            )?;
        }
        if let Some(buffers) = &self.buffers {
            write!(f, " ({buffers})")?;
        }
        Ok(())
    }
}

impl Heartbeat {
    pub fn new(stage: Stage, now: Instant) -> Self {
        Self {
            stage,
            last_progress: now,
            buffers: None,
            cancelled_at: None,
        }
    }

    pub fn stage(&self) -> Stage {
        self.stage
    }

    pub fn last_progress(&self) -> Instant {
        self.last_progress
    }

    /// A new stage began: progress.
    pub fn enter(&mut self, stage: Stage, now: Instant) {
        self.stage = stage;
        self.last_progress = now;
    }

    /// Something finished within the stage (a partition proved): progress.
    pub fn beat(&mut self, now: Instant) {
        self.last_progress = now;
    }

    /// The pipeline's buffers as the watchdog sees them: a partition that moved is progress.
    pub fn observe(&mut self, buffers: BufferSnapshot, now: Instant) {
        let moved = self
            .buffers
            .as_ref()
            .is_some_and(|seen| seen.transitions != buffers.transitions);
        if moved {
            self.last_progress = now;
        }
        self.buffers = Some(buffers);
    }

    pub fn cancelled(&mut self, now: Instant) {
        self.cancelled_at.get_or_insert(now);
    }

    /// Whether the job stalled at `now`: no progress for `deadline`, or cancelled and not
    /// stopped within [`CANCEL_GRACE`] of the cancel or its last progress, once no partition
    /// is left in a stage that cannot be interrupted.
    pub fn stall(&self, now: Instant, deadline: Duration) -> Option<Stall> {
        let buffers = (self.stage == Stage::Proving)
            .then(|| self.buffers.as_ref().map(describe))
            .flatten();
        let finishing = self
            .buffers
            .as_ref()
            .is_some_and(|b| b.gpu > 0 || b.finalizing > 0);
        if let Some(at) = self.cancelled_at.filter(|_| !finishing) {
            let waited = now.saturating_duration_since(at.max(self.last_progress));
            if waited >= CANCEL_GRACE {
                return Some(Stall {
                    stage: self.stage,
                    seconds: waited.as_secs(),
                    buffers,
                    after_cancel: true,
                });
            }
        }
        let idle = now.saturating_duration_since(self.last_progress);
        (idle >= deadline).then_some(Stall {
            stage: self.stage,
            seconds: idle.as_secs(),
            buffers,
            // A cancelled job is no longer this prover's to report on.
            after_cancel: self.cancelled_at.is_some(),
        })
    }
}

fn describe(b: &BufferSnapshot) -> String {
    format!(
        "partitions: {} synthesizing, {} queued for the GPU, {} on the GPU, {} finalizing",
        b.synthesizing, b.queued, b.gpu, b.finalizing
    )
}

#[cfg(test)]
mod tests {
    use super::*;

    const DEADLINE: Duration = Duration::from_secs(60);

    fn secs(start: Instant, s: u64) -> Instant {
        start + Duration::from_secs(s)
    }

    fn buffers(synthesizing: u64, gpu: u64, transitions: u64) -> BufferSnapshot {
        BufferSnapshot {
            synthesizing,
            gpu,
            transitions,
            ..BufferSnapshot::default()
        }
    }

    #[test]
    fn a_stage_that_keeps_beating_never_stalls() {
        let start = Instant::now();
        let mut heartbeat = Heartbeat::new(Stage::FetchingInput, start);
        assert_eq!(heartbeat.stall(secs(start, 59), DEADLINE), None);
        heartbeat.enter(Stage::LoadingParameters, secs(start, 59));
        assert_eq!(heartbeat.stall(secs(start, 100), DEADLINE), None);
        heartbeat.enter(Stage::Proving, secs(start, 110));
        heartbeat.beat(secs(start, 160));
        assert_eq!(heartbeat.stall(secs(start, 219), DEADLINE), None);
    }

    #[test]
    fn no_progress_past_the_deadline_is_a_stall_naming_the_stage() {
        let start = Instant::now();
        let mut heartbeat = Heartbeat::new(Stage::LoadingParameters, start);
        let stall = heartbeat.stall(secs(start, 61), DEADLINE).unwrap();
        assert_eq!(
            stall.to_string(),
            "no progress for 61 s in stage loading parameters"
        );
        heartbeat.enter(Stage::Proving, secs(start, 61));
        heartbeat.observe(buffers(1, 0, 1), secs(start, 61));
        let stall = heartbeat.stall(secs(start, 130), DEADLINE).unwrap();
        assert_eq!(
            stall.to_string(),
            "no progress for 69 s in stage proving (partitions: 1 synthesizing, 0 queued for the \
             GPU, 0 on the GPU, 0 finalizing)"
        );
    }

    #[test]
    fn partitions_moving_between_stages_are_progress_even_with_the_same_counts() {
        let start = Instant::now();
        let mut heartbeat = Heartbeat::new(Stage::Proving, start);
        heartbeat.observe(buffers(2, 0, 2), start);
        // One partition left synthesis and the next one began: same counts, moved.
        heartbeat.observe(buffers(2, 0, 4), secs(start, 50));
        assert_eq!(heartbeat.stall(secs(start, 100), DEADLINE), None);
        heartbeat.observe(buffers(2, 0, 4), secs(start, 100));
        assert!(heartbeat.stall(secs(start, 111), DEADLINE).is_some());
    }

    #[test]
    fn a_cancelled_job_that_does_not_stop_is_a_stall_after_the_grace() {
        let start = Instant::now();
        let mut heartbeat = Heartbeat::new(Stage::Proving, start);
        heartbeat.beat(secs(start, 5));
        heartbeat.cancelled(secs(start, 10));
        assert_eq!(heartbeat.stall(secs(start, 39), DEADLINE), None);
        let stall = heartbeat.stall(secs(start, 40), DEADLINE).unwrap();
        assert!(stall.after_cancel);
        assert!(
            stall
                .to_string()
                .starts_with("the cancelled job did not stop within 30 s, in stage proving"),
            "{stall}"
        );
    }

    #[test]
    fn a_cancelled_job_may_finish_the_partition_on_the_gpu_then_has_the_grace() {
        let start = Instant::now();
        let mut heartbeat = Heartbeat::new(Stage::Proving, start);
        heartbeat.observe(buffers(0, 1, 3), start);
        heartbeat.cancelled(start);
        heartbeat.enter(Stage::Stopping, secs(start, 1));
        // The CPU backend's MSMs of one partition ran 34 s in a test build: not a stall.
        assert_eq!(heartbeat.stall(secs(start, 40), DEADLINE), None);
        // It left the GPU stage at 45 s: the grace runs from there.
        heartbeat.observe(buffers(0, 0, 5), secs(start, 45));
        assert_eq!(heartbeat.stall(secs(start, 74), DEADLINE), None);
        let stall = heartbeat.stall(secs(start, 75), DEADLINE).unwrap();
        assert!(stall.after_cancel, "{stall}");
        // Still bounded by the deadline while the partition never leaves.
        let mut stuck = Heartbeat::new(Stage::Proving, start);
        stuck.observe(buffers(0, 1, 3), start);
        stuck.cancelled(start);
        assert!(stuck.stall(secs(start, 61), DEADLINE).unwrap().after_cancel);
    }
}
