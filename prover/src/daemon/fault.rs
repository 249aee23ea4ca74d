//! Test fault hooks (`daemon --test-fault`): a stage made to hang the way a deadlock hangs it
//! (a thread that never returns and ignores cancellation), so that tests show the watchdog
//! tells it apart from slow work. Off unless the flag is given; nothing sets it in production.

use std::sync::Arc;
use std::time::Duration;

use proofpipe_kernels::EvalAlloc;

use crate::circuits::CircuitShape;
use crate::error::ProverError;
use crate::groth16::Synthesized;
use crate::pipeline::PartitionSource;

/// Where the daemon hangs, if anywhere.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum Fault {
    #[default]
    None,
    /// The parameter load of every job never returns.
    StallParameters,
    /// Every partition's synthesis never returns.
    StallSynthesis,
}

impl Fault {
    /// Hangs here when the fault is a stalled parameter load.
    pub fn at_parameter_load(self) {
        if self == Self::StallParameters {
            hang("loading parameters");
        }
    }

    /// `source`, or one whose synthesis hangs when the fault says so.
    pub fn wrap_source(self, source: Arc<dyn PartitionSource>) -> Arc<dyn PartitionSource> {
        match self {
            Self::StallSynthesis => Arc::new(HangingSource),
            _ => source,
        }
    }
}

fn hang(stage: &str) -> ! {
    tracing::warn!("test fault: {stage} hangs for good");
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

struct HangingSource;

impl PartitionSource for HangingSource {
    fn synthesize(
        &self,
        _partition: u32,
        _shape: CircuitShape,
        _evaluations: &EvalAlloc,
    ) -> Result<Synthesized, ProverError> {
        hang("synthesis")
    }
}
