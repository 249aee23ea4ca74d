//! What every part of the running daemon shares: the [`Daemon`] (its identity, settings,
//! backend, parameter stores, API writer, state and metrics) and the flags its tasks stop on.
//! The supervisor (`lib.rs`) builds it once; the job runner, the urgent lane, the reporter,
//! the watchdog and the HTTP endpoints hold it.

use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::AtomicBool;
use std::time::Duration;

use proofpipe_crds::{GpuLoss, GpuReport};
use proofpipe_kernels::ProvingBackend;
use proofpipe_pipeline::circuits::CircuitShape;
use proofpipe_pipeline::groth16::SynthesisMode;
use proofpipe_pipeline::params::ParamsStore;
use proofpipe_pipeline::sizing::{Overrides, SizingInput, SynthesisProfile};
use tokio::sync::watch;

use crate::config::Identity;
use crate::fault::Fault;
use crate::kube_api::KubeWriter;
use crate::main_lane::{Footprint, MainLane};
use crate::metrics::DaemonMetrics;
use crate::resident::ResidentKeys;
use crate::sizing;
use crate::state::{Lane, ProverState};

/// What every part of the running daemon shares.
pub struct Daemon {
    pub(crate) identity: Identity,
    pub(crate) overrides: Overrides,
    pub(crate) memory_limit: u64,
    pub(crate) cpu_cores: usize,
    pub(crate) params: Arc<ParamsStore>,
    /// Filecoin parameters, from `FIL_PROOFS_PARAMETER_CACHE` (filecoin-proofs' convention),
    /// kept between jobs while memory allows.
    pub(crate) filecoin_params: Arc<ResidentKeys>,
    /// Chosen once per process, so bases a GPU backend keeps resident serve every job.
    pub(crate) backend: Arc<dyn ProvingBackend>,
    /// What `backend` is, for the pool status.
    pub(crate) gpu: GpuReport,
    /// What the main lane's job takes, for the urgent lane to plan beside it.
    pub(crate) main_lane: watch::Sender<MainLane>,
    /// Host memory and each GPU's memory main jobs leave unplanned, so that urgent work fits
    /// beside them (`PROOFPIPE_URGENT_RESERVE`, `PROOFPIPE_URGENT_GPU_RESERVE`).
    pub(crate) urgent_reserve: Footprint,
    pub(crate) kube: KubeWriter,
    pub(crate) state: ProverState,
    pub(crate) metrics: DaemonMetrics,
    pub(crate) watch_ready: AtomicBool,
    /// How long a job may make no progress before the prover is stalled.
    pub(crate) progress_deadline: Duration,
    /// How PoRep partitions are synthesized (`PROOFPIPE_POREP_SYNTHESIS`).
    pub(crate) porep_synthesis: SynthesisMode,
    /// How main-lane PoSt partitions are synthesized (`PROOFPIPE_POST_SYNTHESIS`).
    pub(crate) post_synthesis: SynthesisMode,
    /// How SnapDeals partitions are synthesized (`PROOFPIPE_SNAP_SYNTHESIS`).
    pub(crate) snap_synthesis: SynthesisMode,
    /// Why the prover is stalled, once it is: `/healthz` fails with it.
    pub(crate) stalled: parking_lot::Mutex<Option<String>>,
    /// The GPU this prover lost mid-job, once it lost one (ADR 0032): it takes no more work.
    pub(crate) gpu_lost: parking_lot::Mutex<Option<GpuLoss>>,
    /// `PROOFPIPE_REQUIRE_GPU`: a prover that lost its GPU exits once it has handed its jobs
    /// back, so that its pod is replaced.
    pub(crate) require_gpu: bool,
    pub(crate) fault: Fault,
    pub(crate) termination_log: PathBuf,
}

impl Daemon {
    /// The GPU this prover lost, if it lost one.
    pub(crate) fn gpu_loss(&self) -> Option<GpuLoss> {
        self.gpu_lost.lock().clone()
    }

    /// The memory a main-lane job plans into: the limit less the urgent reserve.
    pub(crate) fn main_limit(&self) -> u64 {
        self.memory_limit
            .saturating_sub(self.urgent_reserve.memory_bytes)
    }

    /// What else holds each GPU as a lane plans: the urgent reserve for the main lane, the
    /// main plan's device memory (`beside`) for the urgent lane.
    pub(crate) fn gpu_taken(&self, lane: Lane, beside: Footprint) -> u64 {
        match lane {
            Lane::Main => self.urgent_reserve.device_bytes,
            Lane::Urgent => beside.device_bytes,
        }
    }

    /// The planner's input for a job proving `work` under `memory_limit`, with `gpu_taken`
    /// bytes of each GPU held by something else ([`Daemon::gpu_taken`]), `todo` partitions
    /// left, with `params_bytes` of parameters and `matrices_bytes` of R1CS matrices resident.
    #[allow(clippy::too_many_arguments)]
    pub(crate) fn sizing_input(
        &self,
        memory_limit: u64,
        gpu_taken: u64,
        work: String,
        todo: usize,
        shape: CircuitShape,
        (params_bytes, matrices_bytes): (u64, u64),
        synthesis: SynthesisProfile,
    ) -> SizingInput {
        let gpus: Vec<_> = self
            .backend
            .gpu_devices()
            .into_iter()
            .map(|mut gpu| {
                gpu.total_bytes = gpu.total_bytes.saturating_sub(gpu_taken);
                gpu
            })
            .collect();
        sizing::sizing_input(
            work,
            todo,
            shape,
            memory_limit,
            (params_bytes, matrices_bytes),
            self.cpu_cores,
            synthesis,
            &gpus,
            self.backend.evaluation_alloc().is_pooled(),
            self.overrides,
        )
    }
}

/// Resolves once `flag` is true, or its sender is gone. Holds no guard of the value across
/// an await, so the futures waiting on it stay `Send`.
pub(crate) async fn raised(flag: &mut watch::Receiver<bool>) {
    let _ = flag.wait_for(|&raised| raised).await;
}
