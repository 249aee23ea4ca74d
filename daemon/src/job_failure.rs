//! Why a job could not be proved ([`JobFailure`]): what the runner ends a job with, the
//! supervisor and the watchdog report, and the API writer puts into the job's status.

use proofpipe_pipeline::error::{FailureClass, ProverError};

/// Why a job could not be proved, and what that means for it.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct JobFailure {
    pub class: FailureClass,
    pub message: String,
    /// The GPU that was lost, when that is why ([`FailureClass::GpuLost`]).
    pub lost_gpu: Option<usize>,
}

impl JobFailure {
    pub fn of(error: &ProverError) -> Self {
        Self {
            class: error.failure_class(),
            message: error.to_string(),
            lost_gpu: error.lost_gpu(),
        }
    }

    pub fn proving(message: impl Into<String>) -> Self {
        Self::new(FailureClass::ProvingError, message)
    }

    pub fn new(class: FailureClass, message: impl Into<String>) -> Self {
        Self {
            class,
            message: message.into(),
            lost_gpu: None,
        }
    }

    /// GPU `device` is lost (`message` says how): the job is handed back (ADR 0032).
    pub fn gpu_lost(device: usize, message: impl Into<String>) -> Self {
        Self {
            lost_gpu: Some(device),
            ..Self::new(FailureClass::GpuLost, message)
        }
    }

    /// How a job ended by a failed pipeline: as the pipeline says, and handed back when the
    /// pipeline failed it for a lost GPU.
    pub(crate) fn of_pipeline(message: String, lost_gpu: Option<usize>) -> Self {
        match lost_gpu {
            Some(device) => Self::gpu_lost(device, message),
            None => Self::proving(message),
        }
    }
}
