//! The buffer tracker: counts every large buffer (a partition's evaluation vectors and
//! assignment) by pipeline stage, with estimated bytes.
//!
//! Buffers are tracked through [`TrackedBuffer`] tokens that travel with the data: a token
//! moves between stages with its partition and un-counts itself when dropped, so the counts
//! stay right on every path, errors, cancellation and panics included.

use std::fmt;
use std::sync::Arc;
use std::time::Instant;

use parking_lot::Mutex;
use prometheus::{IntGauge, IntGaugeVec, Opts, Registry};
use serde::Serialize;

/// Where a partition's large buffers are.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Stage {
    /// Being synthesized by a partition worker.
    Synthesizing,
    /// Synthesized, waiting for the GPU stage: in the channel, or held by its worker until
    /// the channel has room.
    Queued,
    /// In the GPU stage.
    Gpu,
    /// After the GPU stage (a/b/c freed), waiting for or in finalize.
    Finalizing,
}

impl Stage {
    pub const ALL: [Stage; 4] = [
        Stage::Synthesizing,
        Stage::Queued,
        Stage::Gpu,
        Stage::Finalizing,
    ];

    /// The stage's name in metric labels and logs: the field names of a ProofJob's
    /// `status.stageSeconds`, one vocabulary everywhere (docs/prover-daemon.md).
    pub fn name(self) -> &'static str {
        match self {
            Stage::Synthesizing => "synthesis",
            Stage::Queued => "queueWait",
            Stage::Gpu => "gpu",
            Stage::Finalizing => "finalize",
        }
    }
}

/// Counts and estimated bytes per stage at one moment.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize)]
pub struct BufferSnapshot {
    pub synthesizing: u64,
    pub queued: u64,
    pub gpu: u64,
    pub finalizing: u64,
    pub synthesizing_bytes: u64,
    pub queued_bytes: u64,
    pub gpu_bytes: u64,
    pub finalizing_bytes: u64,
    /// The most synthesized partitions (synthesizing + queued) seen at once.
    pub max_synthesized_in_flight: u64,
    /// The most partitions holding their large buffers (synthesizing + queued + GPU stage)
    /// seen at once: at most the plan's partition budget.
    pub max_held: u64,
    /// The most estimated bytes seen at once, over all stages.
    pub max_estimated_bytes: u64,
    /// Buffers that entered, moved or left a stage since the tracker was made: the pipeline's
    /// heartbeat (two snapshots with the same counts may have moved in between).
    pub transitions: u64,
}

impl BufferSnapshot {
    pub fn estimated_bytes(&self) -> u64 {
        self.synthesizing_bytes + self.queued_bytes + self.gpu_bytes + self.finalizing_bytes
    }

    pub fn synthesized_in_flight(&self) -> u64 {
        self.synthesizing + self.queued
    }

    /// Partitions holding their large buffers: synthesizing, queued or in the GPU stage.
    pub fn held(&self) -> u64 {
        self.synthesizing + self.queued + self.gpu
    }

    fn count_mut(&mut self, stage: Stage) -> (&mut u64, &mut u64) {
        match stage {
            Stage::Synthesizing => (&mut self.synthesizing, &mut self.synthesizing_bytes),
            Stage::Queued => (&mut self.queued, &mut self.queued_bytes),
            Stage::Gpu => (&mut self.gpu, &mut self.gpu_bytes),
            Stage::Finalizing => (&mut self.finalizing, &mut self.finalizing_bytes),
        }
    }

    pub fn count(&self, stage: Stage) -> u64 {
        match stage {
            Stage::Synthesizing => self.synthesizing,
            Stage::Queued => self.queued,
            Stage::Gpu => self.gpu,
            Stage::Finalizing => self.finalizing,
        }
    }
}

impl fmt::Display for BufferSnapshot {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "synthesis={} queueWait={} gpu={} finalize={} est={:.2}GiB",
            self.synthesizing,
            self.queued,
            self.gpu,
            self.finalizing,
            self.estimated_bytes() as f64 / (1u64 << 30) as f64
        )
    }
}

/// One point of the buffer timeline (kept when recording is on, for plots).
#[derive(Clone, Copy, Debug, Serialize)]
pub struct TimelinePoint {
    pub seconds: f64,
    pub snapshot: BufferSnapshot,
}

struct Gauges {
    buffers: IntGaugeVec,
    bytes: IntGaugeVec,
    max_in_flight: IntGauge,
}

pub struct BufferTracker {
    state: Mutex<BufferSnapshot>,
    gauges: Gauges,
    timeline: Option<Mutex<Vec<TimelinePoint>>>,
    started: Instant,
}

impl BufferTracker {
    /// A tracker whose gauges are registered in `registry`; `record_timeline` keeps every
    /// transition for plotting.
    pub fn new(registry: &Registry, record_timeline: bool) -> prometheus::Result<Arc<Self>> {
        let buffers = IntGaugeVec::new(
            Opts::new(
                "proofpipe_buffers",
                "Partitions holding large buffers, by pipeline stage",
            ),
            &["stage"],
        )?;
        let bytes = IntGaugeVec::new(
            Opts::new(
                "proofpipe_buffer_bytes",
                "Estimated bytes of large buffers, by pipeline stage",
            ),
            &["stage"],
        )?;
        let max_in_flight = IntGauge::new(
            "proofpipe_max_synthesized_in_flight",
            "The most synthesized partitions outside the GPU stage seen at once",
        )?;
        registry.register(Box::new(buffers.clone()))?;
        registry.register(Box::new(bytes.clone()))?;
        registry.register(Box::new(max_in_flight.clone()))?;
        for stage in Stage::ALL {
            buffers.with_label_values(&[stage.name()]).set(0);
            bytes.with_label_values(&[stage.name()]).set(0);
        }
        Ok(Arc::new(Self {
            state: Mutex::new(BufferSnapshot::default()),
            gauges: Gauges {
                buffers,
                bytes,
                max_in_flight,
            },
            timeline: record_timeline.then(|| Mutex::new(Vec::new())),
            started: Instant::now(),
        }))
    }

    pub fn snapshot(&self) -> BufferSnapshot {
        *self.state.lock()
    }

    pub fn timeline(&self) -> Vec<TimelinePoint> {
        self.timeline
            .as_ref()
            .map(|t| t.lock().clone())
            .unwrap_or_default()
    }

    /// Starts tracking a buffer in `stage`.
    pub fn track(self: &Arc<Self>, stage: Stage, bytes: u64) -> TrackedBuffer {
        self.apply(None, Some((stage, bytes)));
        TrackedBuffer {
            tracker: self.clone(),
            stage,
            bytes,
        }
    }

    fn apply(&self, from: Option<(Stage, u64)>, to: Option<(Stage, u64)>) {
        let snap = {
            let mut s = self.state.lock();
            if let Some((stage, bytes)) = from {
                let (n, b) = s.count_mut(stage);
                *n -= 1;
                *b -= bytes;
            }
            if let Some((stage, bytes)) = to {
                let (n, b) = s.count_mut(stage);
                *n += 1;
                *b += bytes;
            }
            s.max_synthesized_in_flight =
                s.max_synthesized_in_flight.max(s.synthesized_in_flight());
            s.max_held = s.max_held.max(s.held());
            s.max_estimated_bytes = s.max_estimated_bytes.max(s.estimated_bytes());
            s.transitions += 1;
            if let Some(t) = &self.timeline {
                t.lock().push(TimelinePoint {
                    seconds: self.started.elapsed().as_secs_f64(),
                    snapshot: *s,
                });
            }
            *s
        };
        for stage in Stage::ALL {
            self.gauges
                .buffers
                .with_label_values(&[stage.name()])
                .set(snap.count(stage) as i64);
        }
        for (stage, bytes) in [
            (Stage::Synthesizing, snap.synthesizing_bytes),
            (Stage::Queued, snap.queued_bytes),
            (Stage::Gpu, snap.gpu_bytes),
            (Stage::Finalizing, snap.finalizing_bytes),
        ] {
            self.gauges
                .bytes
                .with_label_values(&[stage.name()])
                .set(bytes as i64);
        }
        self.gauges
            .max_in_flight
            .set(snap.max_synthesized_in_flight as i64);
        let stage = to
            .or(from)
            .map(|(s, _)| s)
            .expect("a transition has a stage");
        let label = if to.is_none() {
            "released"
        } else {
            stage.name()
        };
        // Fields, not only a formatted line, so JSON logs can be queried by stage.
        tracing::info!(
            target: "proofpipe::buffers",
            stage = %label,
            synthesis = snap.synthesizing,
            queueWait = snap.queued,
            gpu = snap.gpu,
            finalize = snap.finalizing,
            estimated_bytes = snap.estimated_bytes(),
            "BUFFERS"
        );
    }
}

/// A partition's large buffers, counted in one stage until moved or dropped.
pub struct TrackedBuffer {
    tracker: Arc<BufferTracker>,
    stage: Stage,
    bytes: u64,
}

impl TrackedBuffer {
    pub fn stage(&self) -> Stage {
        self.stage
    }

    /// Moves the buffer to `stage`, now holding `bytes`.
    pub fn move_to(&mut self, stage: Stage, bytes: u64) {
        self.tracker
            .apply(Some((self.stage, self.bytes)), Some((stage, bytes)));
        self.stage = stage;
        self.bytes = bytes;
    }
}

impl Drop for TrackedBuffer {
    fn drop(&mut self) {
        self.tracker.apply(Some((self.stage, self.bytes)), None);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn tokens_move_and_release_their_counts() {
        let registry = Registry::new();
        let t = BufferTracker::new(&registry, true).unwrap();
        let mut a = t.track(Stage::Synthesizing, 100);
        let mut b = t.track(Stage::Synthesizing, 100);
        a.move_to(Stage::Queued, 100);
        b.move_to(Stage::Queued, 100);
        a.move_to(Stage::Gpu, 150);
        let s = t.snapshot();
        assert_eq!(
            (s.synthesizing, s.queued, s.gpu, s.finalizing),
            (0, 1, 1, 0)
        );
        assert_eq!(s.estimated_bytes(), 250);
        assert_eq!(s.max_synthesized_in_flight, 2);
        drop(b);
        a.move_to(Stage::Finalizing, 10);
        drop(a);
        let s = t.snapshot();
        assert_eq!(s.estimated_bytes(), 0);
        assert_eq!(s.max_estimated_bytes, 250);
        assert_eq!(t.timeline().len(), 8);

        let text = crate::metrics::encode(&registry);
        assert!(
            text.contains("proofpipe_buffers{stage=\"gpu\"} 0"),
            "{text}"
        );
        assert!(
            text.contains("proofpipe_max_synthesized_in_flight 2"),
            "{text}"
        );
    }

    #[test]
    fn snapshot_line_has_the_documented_shape() {
        let s = BufferSnapshot {
            synthesizing: 2,
            queued: 1,
            gpu_bytes: 1 << 30,
            gpu: 1,
            ..Default::default()
        };
        assert_eq!(
            s.to_string(),
            "synthesis=2 queueWait=1 gpu=1 finalize=0 est=1.00GiB"
        );
    }
}
