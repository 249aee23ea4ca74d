//! The R1CS matrices this process keeps for two-pass synthesis (ADR 0010), one per circuit
//! structure (a PoRep or a PoSt partition of a sector size), shared by every job of that
//! structure: read from their file (ADR 0031) or recorded on first use, then resident until a
//! job that does not fit beside them drops them.

use std::path::Path;
use std::sync::{Arc, LazyLock};
use std::time::Instant;

use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::groth16::R1csMatrices;
use proofpipe_pipeline::groth16::matrices_file::{self, MatricesId, MatricesOrigin};
use proofpipe_pipeline::params::LoadOnce;

/// What fixes a partition circuit's structure, in words (the matrices file's id) and as a
/// file name (its stem).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct MatricesKey {
    pub circuit: String,
    pub file_stem: String,
}

static RESIDENT: LazyLock<LoadOnce<String, Arc<R1csMatrices>>> = LazyLock::new(LoadOnce::new);

/// `key`'s matrices, resident: loaded once per process by [`read_or_record`] into the matrices
/// directory ([`super::matrices_dir`]); true when this call loaded them.
pub fn resident(
    key: &MatricesKey,
    record: impl FnOnce() -> Result<R1csMatrices, ProverError>,
) -> Result<(Arc<R1csMatrices>, bool), ProverError> {
    RESIDENT.get_or_load(key.file_stem.clone(), || {
        let dir = super::matrices_dir();
        let (matrices, _) = read_or_record(key, dir.as_deref(), record)?;
        Ok::<_, ProverError>(Arc::new(matrices))
    })
}

/// `key`'s matrices: read from their file in `dir` when it holds them, else recorded by
/// `record` and written there.
pub fn read_or_record(
    key: &MatricesKey,
    dir: Option<&Path>,
    record: impl FnOnce() -> Result<R1csMatrices, ProverError>,
) -> Result<(R1csMatrices, MatricesOrigin), ProverError> {
    let started = Instant::now();
    let id = MatricesId::new(key.circuit.clone());
    let path = dir.map(|dir| matrices_file::path_in(dir, &key.file_stem));
    let (matrices, origin) = matrices_file::load_or_record(path.as_deref(), &id, record)?;
    tracing::info!(
        circuit = %key.circuit,
        nonzeros = matrices.nonzeros(),
        bytes = %bytesize::ByteSize(matrices.heap_bytes()),
        seconds = started.elapsed().as_secs_f64(),
        ?origin,
        "R1CS matrices ready for two-pass synthesis"
    );
    Ok((matrices, origin))
}

/// Bytes of the R1CS matrices this process keeps, every structure's that a job loaded: a
/// prover's plan counts them beside its parameters.
pub fn resident_bytes() -> u64 {
    RESIDENT.loaded().iter().map(|m| m.heap_bytes()).sum()
}

/// Forgets every structure's matrices but `keep` (freed once no job holds them), when a
/// job's pipeline does not fit beside them.
pub fn keep_only(keep: Option<&Arc<R1csMatrices>>) {
    RESIDENT.retain(|m| keep.is_some_and(|k| Arc::ptr_eq(k, m)));
}
