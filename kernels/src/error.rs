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
    #[error("no usable GPU: {0}")]
    NoGpu(String),
}
