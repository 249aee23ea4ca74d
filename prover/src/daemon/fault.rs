//! Test fault hooks (`daemon --test-fault`): a stage made to hang the way a deadlock hangs it
//! (a thread that never returns and ignores cancellation), so that tests show the watchdog
//! tells it apart from slow work; or PoRep made slow, so that tests see urgent work overtake
//! a long job. Off unless the flag is given; nothing sets it in production.

use std::sync::Arc;
use std::time::Duration;

use proofpipe_crds::FilecoinProofKind;
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
    /// Every PoRep partition's synthesis starts [`SLOW_POREP`] late: a long job for urgent
    /// work to overtake in a test.
    SlowPorep,
}

/// How late a PoRep partition's synthesis starts under [`Fault::SlowPorep`].
pub const SLOW_POREP: Duration = Duration::from_secs(40);

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

    /// [`Fault::wrap_source`] for a Filecoin job of `kind`; PoRep slowed when the fault says so.
    pub fn wrap_filecoin_source(
        self,
        source: Arc<dyn PartitionSource>,
        kind: FilecoinProofKind,
    ) -> Arc<dyn PartitionSource> {
        match self {
            Self::SlowPorep if kind == FilecoinProofKind::PoRepC2 => Arc::new(SlowSource(source)),
            _ => self.wrap_source(source),
        }
    }
}

fn hang(stage: &str) -> ! {
    tracing::warn!("test fault: {stage} hangs for good");
    loop {
        std::thread::sleep(Duration::from_secs(3600));
    }
}

struct SlowSource(Arc<dyn PartitionSource>);

impl PartitionSource for SlowSource {
    fn synthesize(
        &self,
        partition: u32,
        shape: CircuitShape,
        evaluations: &EvalAlloc,
    ) -> Result<Synthesized, ProverError> {
        tracing::warn!(
            partition,
            "test fault: PoRep synthesis starts {} s late",
            SLOW_POREP.as_secs()
        );
        std::thread::sleep(SLOW_POREP);
        self.0.synthesize(partition, shape, evaluations)
    }

    fn synthesis_threads(&self) -> usize {
        self.0.synthesis_threads()
    }

    fn synthesizes_in_subsystems(&self) -> bool {
        self.0.synthesizes_in_subsystems()
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
