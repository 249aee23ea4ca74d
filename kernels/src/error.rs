use bytesize::ByteSize;
use thiserror::Error;

/// Errors of the proving backends.
#[derive(Debug, Error)]
pub enum KernelError {
    #[error(
        "evaluation vectors differ in length (a={a}, b={b}, c={c}); the synthesized partition is corrupt"
    )]
    MismatchedEvaluations { a: usize, b: usize, c: usize },
    #[error(
        "the FFT domain for {0} constraints is larger than BLS12-381's scalar field supports (2^32)"
    )]
    DomainTooLarge(usize),
    #[error("multi-scalar multiplication of {what} failed: {message}")]
    Msm { what: &'static str, message: String },
    #[error(
        "{bases} base points (after skipping {skip}) cannot cover {exponents} exponents; the parameters do not match the circuit"
    )]
    BasesTooShort {
        bases: usize,
        skip: usize,
        exponents: usize,
    },
    #[error("CUDA {what} failed on GPU {device} (error {code}): {message}")]
    Cuda {
        what: &'static str,
        device: usize,
        code: i32,
        message: String,
    },
    /// A CUDA error that means the device is gone or its context is poisoned
    /// ([`device_lost`]): nothing more can run on it in this process, whatever the input.
    #[error(
        "GPU {device} is lost: CUDA {what} failed with {name} (error {code}): {message}; the \
         device is gone or its context is unusable, so this process can prove nothing more on it"
    )]
    GpuLost {
        what: &'static str,
        device: usize,
        code: i32,
        /// The CUDA runtime's name of the error, e.g. `cudaErrorECCUncorrectable`.
        name: &'static str,
        message: String,
    },
    #[error("no usable GPU: {0}")]
    NoGpu(String),
    /// A setting from the environment that does not parse.
    #[error("{var}={value:?} is not a valid setting: {reason}")]
    BadSetting {
        var: &'static str,
        value: String,
        reason: String,
    },
    /// An allocation of the backend's own that would pass the device-memory cap
    /// (`PROOFPIPE_GPU_MEMORY`) even after evicting every idle resident base.
    #[error(
        "GPU {device}: {what} needs {} of device memory, but {} of the {} cap \
         (PROOFPIPE_GPU_MEMORY) is held even after evicting idle resident bases; a smaller plan \
         (fewer GPU-stage workers or smaller partitions) or streamed bases are needed",
        ByteSize(*.asked),
        ByteSize(*.held),
        ByteSize(*.cap)
    )]
    GpuMemoryCap {
        device: usize,
        what: &'static str,
        asked: u64,
        held: u64,
        cap: u64,
    },
}

impl KernelError {
    /// A failed CUDA call (`code` a `cudaError_t`): [`KernelError::GpuLost`] when the code
    /// says the device is gone or its context poisoned ([`device_lost`]), else
    /// [`KernelError::Cuda`], an error of this call alone (a bad argument, too little device
    /// memory).
    pub fn cuda(what: &'static str, device: usize, code: i32, message: String) -> Self {
        match device_lost(code) {
            Some(name) => Self::GpuLost {
                what,
                device,
                code,
                name,
                message,
            },
            None => Self::Cuda {
                what,
                device,
                code,
                message,
            },
        }
    }

    /// The lost GPU's ordinal, when this error says the GPU is lost.
    pub fn lost_gpu(&self) -> Option<usize> {
        match self {
            Self::GpuLost { device, .. } => Some(*device),
            _ => None,
        }
    }
}

/// The CUDA runtime errors (`cudaError_t`, the values of CUDA 12 and 13's `driver_types.h`,
/// checked against 13.0) after which a device can run nothing more in this process: the
/// device is gone (fallen off the bus, no longer visible, an uncorrectable memory or NVLink
/// error, the driver or the MPS server gone), or a "sticky" error poisoned the CUDA context
/// (every later call returns the same error; the runtime's own words for most of them: "To
/// continue using CUDA, the process must be terminated and relaunched"). None of them is
/// caused by a partition's data: a partition that meets one would prove on another GPU. Any
/// other error (an invalid argument, too little device memory, a launch configuration) is an
/// error of the call.
pub const DEVICE_LOST_ERRORS: &[(i32, &str)] = &[
    // The driver or the device cannot be reached.
    (3, "cudaErrorInitializationError"),
    (46, "cudaErrorDevicesUnavailable"),
    (100, "cudaErrorNoDevice"),
    (802, "cudaErrorSystemNotReady"),
    (810, "cudaErrorMpsClientTerminated"),
    // Hardware faults.
    (214, "cudaErrorECCUncorrectable"),
    (220, "cudaErrorNvlinkUncorrectable"),
    (226, "cudaErrorContained"),
    (911, "cudaErrorExternalDevice"),
    // Sticky kernel faults: the context is poisoned.
    (53, "cudaErrorPriorLaunchFailure"),
    (700, "cudaErrorIllegalAddress"),
    (702, "cudaErrorLaunchTimeout"),
    (709, "cudaErrorContextIsDestroyed"),
    (710, "cudaErrorAssert"),
    (714, "cudaErrorHardwareStackError"),
    (715, "cudaErrorIllegalInstruction"),
    (716, "cudaErrorMisalignedAddress"),
    (717, "cudaErrorInvalidAddressSpace"),
    (718, "cudaErrorInvalidPc"),
    (719, "cudaErrorLaunchFailure"),
    (721, "cudaErrorTensorMemoryLeak"),
    // What the runtime returns when it cannot say (Xid errors often end here).
    (999, "cudaErrorUnknown"),
];

/// The name of `code` when it is a CUDA error that means the device is lost
/// ([`DEVICE_LOST_ERRORS`]).
pub fn device_lost(code: i32) -> Option<&'static str> {
    DEVICE_LOST_ERRORS
        .iter()
        .find(|(lost, _)| *lost == code)
        .map(|&(_, name)| name)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn device_loss_is_told_apart_from_an_error_of_the_call() {
        for (code, name) in [
            (214, "cudaErrorECCUncorrectable"),
            (719, "cudaErrorLaunchFailure"),
            (700, "cudaErrorIllegalAddress"),
            (100, "cudaErrorNoDevice"),
            (999, "cudaErrorUnknown"),
        ] {
            let err = KernelError::cuda("running the H MSM", 1, code, "x".into());
            assert_eq!(err.lost_gpu(), Some(1), "{code}");
            let text = err.to_string();
            assert!(
                text.contains(name) && text.contains("GPU 1 is lost"),
                "{text}"
            );
        }
        // cudaErrorInvalidValue, cudaErrorMemoryAllocation, cudaErrorLaunchOutOfResources,
        // cudaErrorNotReady: the call's own errors.
        for code in [1, 2, 701, 600] {
            let err = KernelError::cuda("uploading base points", 0, code, "x".into());
            assert!(matches!(err, KernelError::Cuda { .. }), "{code}: {err}");
            assert_eq!(err.lost_gpu(), None);
        }
        assert_eq!(KernelError::NoGpu("none".into()).lost_gpu(), None);
    }

    #[test]
    fn the_table_names_each_code_once() {
        let mut codes: Vec<i32> = DEVICE_LOST_ERRORS.iter().map(|&(code, _)| code).collect();
        codes.sort_unstable();
        codes.dedup();
        assert_eq!(codes.len(), DEVICE_LOST_ERRORS.len());
        assert!(
            DEVICE_LOST_ERRORS
                .iter()
                .all(|(code, name)| *code > 0 && name.starts_with("cudaError"))
        );
    }
}
