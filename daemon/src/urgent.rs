//! Urgent work beside a long job (ADR 0026): a PoSt assigned to a prover busy with a PoRep
//! is proved at once in a pipeline of its own, sized into the memory (and GPU memory) the
//! main job's plan leaves, instead of after the PoRep's last partition. The GPU stages of
//! both pipelines take turns on the device lock, so the urgent job's partition waits at most
//! one kernel sequence of the long job.
//!
//! The main lane says what its plan takes ([`MainLane`]); the urgent lane reads it, never the
//! other way round. No main job starts while the urgent lane runs ([`super::decision`]), so
//! the sum of the two plans is within the limit by construction: the main plan was made
//! first, and the urgent plan takes only what it left. When the urgent job does not fit
//! beside the main job, it waits until the main job ends and then has the whole prover.

pub use crate::main_lane::{Footprint, MainLane, room_beside, until_idle, until_planned};
use crate::resident::JobKey;
use crate::shared::Daemon;
use crate::sizing::parameter_budget;
use proofpipe_filecoin::param_set::ParamSet;
use proofpipe_pipeline::error::ProverError;

/// The urgent job's proving key: resident already, or loaded when it fits beside the main
/// job; else, once the main job ended, loaded as a main job's would be.
pub async fn load_key(daemon: &Daemon, set: ParamSet) -> Result<JobKey, ProverError> {
    let mut lane = daemon.main_lane.subscribe();
    loop {
        let beside = until_planned(&mut lane).await;
        let alone = beside.is_none();
        let room = room_beside(daemon.memory_limit, beside.unwrap_or_default());
        let budget = parameter_budget(room);
        let resident = daemon.filecoin_params.clone();
        let fault = daemon.fault;
        let loaded = tokio::task::spawn_blocking(move || {
            fault.at_parameter_load();
            if alone {
                resident.get(set, budget).map(Some)
            } else {
                resident.get_beside(set, budget)
            }
        })
        .await
        .map_err(|e| ProverError::Filecoin {
            action: format!("loading the parameters of {}", set.name()),
            message: e.to_string(),
        })??;
        if let Some(key) = loaded {
            return Ok(key);
        }
        tracing::info!(
            proof = %set.name(),
            room,
            "the urgent job's parameters do not fit beside the running job; waiting for it to end"
        );
        until_idle(&mut lane).await;
    }
}
