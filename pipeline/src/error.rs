use std::path::PathBuf;

use thiserror::Error;

use proofpipe_model::sizing::SizingError;

/// Every way the prover can fail, each with what to do about it.
#[derive(Debug, Error)]
pub enum ProverError {
    #[error("unknown circuit {0:?}: use one of mul-chain, merkle-sha256")]
    UnknownCircuit(String),
    #[error("{circuit} needs at least {min} constraints per partition; got {constraints}")]
    CircuitTooSmall {
        circuit: &'static str,
        constraints: usize,
        min: usize,
    },
    #[error(
        "{circuit} with {constraints} constraints per partition is larger than the maximum {max}"
    )]
    CircuitTooLarge {
        circuit: &'static str,
        constraints: usize,
        max: usize,
    },
    #[error("a job needs at least one partition; got 0")]
    ZeroPartitions,
    #[error("invalid {what}: {reason}")]
    InvalidArgument { what: &'static str, reason: String },

    /// The planner found no pipeline that fits (the model's error, as it says it).
    #[error(transparent)]
    Sizing(#[from] SizingError),

    #[error("{action} {path}: {source}")]
    Io {
        action: &'static str,
        path: PathBuf,
        #[source]
        source: std::io::Error,
    },
    #[error(
        "parameter file {path} is corrupt or was made for another circuit ({reason}); \
         delete it or run `proofpipe-prover params --regenerate` to make a new one"
    )]
    CorruptParams { path: PathBuf, reason: String },
    #[error(
        "R1CS matrices file {path} is corrupt or was recorded for another circuit or build \
         ({reason}); it is recorded anew, or delete it and run `proofpipe-prover params \
         matrices` to write a new one"
    )]
    CorruptMatrices { path: PathBuf, reason: String },
    #[error("generating parameters for {circuit} at {constraints} constraints failed: {message}")]
    ParamsGeneration {
        circuit: &'static str,
        constraints: usize,
        message: String,
    },

    #[error("synthesis of partition {partition} failed: {message}")]
    Synthesis { partition: u32, message: String },
    #[error("proving partition {partition} failed: {message}")]
    Proving { partition: u32, message: String },
    /// The GPU stage met a CUDA error that means the device is gone
    /// ([`proofpipe_kernels::device_lost`]): not the partition's fault, and nothing more can
    /// be proved on that GPU in this process.
    #[error("proving partition {partition} failed: {message}")]
    GpuLost {
        partition: u32,
        device: usize,
        message: String,
    },
    #[error("partition {partition} produced a proof that does not verify")]
    ProofInvalid { partition: u32 },
    #[error("job {job} was cancelled")]
    Cancelled { job: u64 },
    #[error("the pipeline has shut down")]
    PipelineClosed,

    #[error(
        "environment variable {name} is not set; the operator sets it in every prover pod ({hint})"
    )]
    MissingEnv {
        name: &'static str,
        hint: &'static str,
    },
    #[error(
        "no usable GPU ({message}) and PROOFPIPE_REQUIRE_GPU is set: this prover refuses to \
         prove on the CPU. Check the node's NVIDIA driver and device plugin (kubectl describe \
         node), or unset PROOFPIPE_REQUIRE_GPU in the pool's template to prove on the CPU"
    )]
    NoGpu { message: String },
    #[error(
        "{message}; PROOFPIPE_REQUIRE_GPU is set, so the prover exits after handing its jobs \
         back and its pod is replaced. If provers on this node keep losing their GPU, check \
         the node (nvidia-smi, Xid errors in the kernel log) and cordon it"
    )]
    RequiredGpuLost { message: String },
    /// A request to the cluster's API failed. Its source is kept whole (boxed, so this crate
    /// needs no Kubernetes client); whether the API said "not found" is read when it is made.
    #[error("{action}: {source}")]
    Api {
        action: String,
        not_found: bool,
        #[source]
        source: Box<dyn std::error::Error + Send + Sync>,
    },
    #[error("listening on {addr}: {source}")]
    Listen {
        addr: std::net::SocketAddr,
        #[source]
        source: std::io::Error,
    },
    #[error("starting the async runtime: {0}")]
    Runtime(#[source] std::io::Error),
    #[error("the watch of ProofJobs assigned to this pod ended unexpectedly")]
    WatchEnded,

    #[error("{path}: not a usable C1 output ({reason}); {hint}")]
    BadC1Input {
        path: PathBuf,
        reason: String,
        hint: &'static str,
    },
    #[error(
        "Filecoin parameter file {path} is missing (expected blake2b digest {digest}); \
         put the parameter files of this proof in {dir} (filecoin's parameters.json names them; \
         `proofpipe-prover params fetch --dir {dir} --sector-size <size>` (from the public \
         mirrors), `lotus fetch-params` or `curio fetch-params` download them) or \
         point --params-dir / FIL_PROOFS_PARAMETER_CACHE at the directory that has them"
    )]
    MissingFilecoinParams {
        path: PathBuf,
        dir: PathBuf,
        digest: String,
    },
    #[error(
        "Filecoin parameter file {path} does not match: {reason} (expected blake2b digest \
         {digest}); fetch it again: `proofpipe-prover params fetch --dir <its directory> \
         --sector-size <size>` replaces a file whose digest does not match"
    )]
    FilecoinParamsMismatch {
        path: PathBuf,
        reason: String,
        digest: String,
    },
    #[error("{action}: {message}")]
    Filecoin { action: String, message: String },
    #[error("{action} {url}: {message}; {hint}")]
    Artifact {
        action: &'static str,
        url: String,
        message: String,
        hint: &'static str,
        /// The store may answer another time (unreachable, a transfer cut short); false for
        /// a bad URL, a missing object or a digest that does not match.
        retryable: bool,
    },
}

/// What a job's failure means for the job: the operator retries a transient one and fails a
/// permanent one at once (ADR 0021).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum FailureClass {
    /// The input or the job's spec can never prove: fix it and submit again.
    InvalidInput,
    /// The job needs more memory than this prover's limit.
    DoesNotFit,
    /// The store of the input or output did not answer or broke off.
    StorageUnavailable,
    /// The prover's parameter files are missing or do not match.
    ParametersUnavailable,
    /// Anything else that went wrong while proving: another attempt may succeed.
    ProvingError,
    /// The prover made no progress within its deadline (or did not stop when cancelled).
    Stalled,
    /// The prover's GPU is gone (ADR 0032): the job is handed back, not charged to its
    /// `backoffLimit`, and the prover takes no more work.
    GpuLost,
}

impl FailureClass {
    /// The CamelCase reason the job's status shows.
    pub fn reason(self) -> &'static str {
        match self {
            Self::InvalidInput => "InvalidInput",
            Self::DoesNotFit => "DoesNotFit",
            Self::StorageUnavailable => "StorageUnavailable",
            Self::ParametersUnavailable => "ParametersUnavailable",
            Self::ProvingError => "ProvingError",
            Self::Stalled => "Stalled",
            Self::GpuLost => "GpuLost",
        }
    }

    /// Whether retrying cannot help.
    pub fn is_permanent(self) -> bool {
        matches!(self, Self::InvalidInput | Self::DoesNotFit)
    }
}

impl ProverError {
    /// A backend's error in partition `partition`'s GPU stage or finalize:
    /// [`ProverError::GpuLost`] when it says the GPU is gone, else [`ProverError::Proving`].
    pub fn kernel(partition: u32, error: &proofpipe_kernels::KernelError) -> Self {
        match error.lost_gpu() {
            Some(device) => ProverError::GpuLost {
                partition,
                device,
                message: error.to_string(),
            },
            None => ProverError::Proving {
                partition,
                message: error.to_string(),
            },
        }
    }

    /// The GPU this error says is lost, if it says so.
    pub fn lost_gpu(&self) -> Option<usize> {
        match self {
            ProverError::GpuLost { device, .. } => Some(*device),
            _ => None,
        }
    }

    /// Adds what was being done, and to which path, to an I/O error.
    pub fn io(
        action: &'static str,
        path: impl Into<PathBuf>,
    ) -> impl FnOnce(std::io::Error) -> Self {
        let path = path.into();
        move |source| ProverError::Io {
            action,
            path,
            source,
        }
    }

    /// Wraps an error of filecoin-proofs (anyhow) with what was being done.
    pub fn filecoin(action: impl Into<String>) -> impl FnOnce(anyhow::Error) -> Self {
        let action = action.into();
        move |e| ProverError::Filecoin {
            action,
            message: format!("{e:#}"),
        }
    }

    /// Whether this is the API server saying the object does not exist (any more).
    pub fn is_not_found(&self) -> bool {
        matches!(
            self,
            ProverError::Api {
                not_found: true,
                ..
            }
        )
    }

    /// What this error, ending a job, means for the job.
    pub fn failure_class(&self) -> FailureClass {
        match self {
            ProverError::UnknownCircuit(_)
            | ProverError::CircuitTooSmall { .. }
            | ProverError::CircuitTooLarge { .. }
            | ProverError::ZeroPartitions
            | ProverError::InvalidArgument { .. }
            | ProverError::BadC1Input { .. }
            | ProverError::Artifact {
                retryable: false, ..
            } => FailureClass::InvalidInput,
            ProverError::Artifact { .. } => FailureClass::StorageUnavailable,
            ProverError::Sizing(SizingError::InvalidArgument { .. }) => FailureClass::InvalidInput,
            ProverError::Sizing(
                SizingError::MemoryLimitTooSmall { .. } | SizingError::GpuMemoryTooSmall { .. },
            ) => FailureClass::DoesNotFit,
            ProverError::MissingFilecoinParams { .. }
            | ProverError::FilecoinParamsMismatch { .. }
            | ProverError::CorruptParams { .. }
            | ProverError::CorruptMatrices { .. }
            | ProverError::ParamsGeneration { .. } => FailureClass::ParametersUnavailable,
            ProverError::GpuLost { .. } => FailureClass::GpuLost,
            _ => FailureClass::ProvingError,
        }
    }

    /// The process exit code for this error: 2 for bad input, 1 for everything else.
    pub fn exit_code(&self) -> i32 {
        match self {
            ProverError::UnknownCircuit(_)
            | ProverError::CircuitTooSmall { .. }
            | ProverError::CircuitTooLarge { .. }
            | ProverError::ZeroPartitions
            | ProverError::InvalidArgument { .. }
            | ProverError::MissingEnv { .. }
            | ProverError::BadC1Input { .. }
            | ProverError::Artifact { .. }
            | ProverError::MissingFilecoinParams { .. }
            | ProverError::FilecoinParamsMismatch { .. }
            | ProverError::Sizing(_) => 2,
            _ => 1,
        }
    }
}

#[cfg(test)]
mod tests {
    use proofpipe_kernels::KernelError;

    use super::*;

    #[test]
    fn a_lost_gpu_is_a_class_of_its_own_and_an_error_of_the_call_is_a_proving_error() {
        let lost = ProverError::kernel(
            3,
            &KernelError::cuda("running the quotient", 1, 719, "x".into()),
        );
        assert_eq!(lost.lost_gpu(), Some(1));
        assert_eq!(lost.failure_class(), FailureClass::GpuLost);
        assert_eq!(lost.failure_class().reason(), "GpuLost");
        assert!(!lost.failure_class().is_permanent());
        assert!(
            lost.to_string()
                .starts_with("proving partition 3 failed: GPU 1 is lost"),
            "{lost}"
        );
        let call = ProverError::kernel(
            3,
            &KernelError::cuda("uploading base points", 1, 2, "x".into()),
        );
        assert_eq!(call.lost_gpu(), None);
        assert_eq!(call.failure_class(), FailureClass::ProvingError);
    }

    #[test]
    fn a_gpu_too_small_for_the_job_is_room_not_bad_input() {
        let gpu = ProverError::Sizing(SizingError::GpuMemoryTooSmall {
            memory: bytesize::ByteSize::gib(24),
            resident: bytesize::ByteSize::gib(53),
            per_worker: bytesize::ByteSize::gib(12),
            constraints: 1 << 27,
        });
        assert_eq!(gpu.failure_class(), FailureClass::DoesNotFit);
        assert!(gpu.to_string().contains("GPU"), "{gpu}");
    }
}
