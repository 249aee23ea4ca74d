//! Recorded R1CS matrices on disk (ADR 0031): recorded once, then read back by every process
//! that proves the circuit, instead of re-recording them (a 32 GiB PoRep partition's matrices
//! take ~29 s of 16 cores to record and 6.5 GiB to hold).
//!
//! Layout: `MAGIC`, a little-endian u32 header length, the JSON [`FileHeader`], then for A, B
//! and C in turn their row ends (two u32 per row), their column words (u32), their stored
//! coefficients (u32 indices into the table) and their table of distinct coefficients (the
//! scalars' Montgomery limbs, four u64 each), all little-endian, and a
//! trailer: the BLAKE3 hash of everything before it. The arrays are the in-memory ones, so
//! reading is a parallel copy from the page cache or disk, hashed on every core; the densities
//! are recomputed from the columns. Written to a temporary name and renamed, as parameters are.

use std::fs::File;
use std::io::{self, BufWriter, Write};
use std::os::unix::fs::FileExt;
use std::path::{Path, PathBuf};
use std::time::Instant;

use blst::blst_fr;
use blstrs::Scalar as Fr;
use rayon::prelude::*;
use serde::{Deserialize, Serialize};

use super::{Csr, R1csMatrices};
use crate::circuits::CircuitShape;
use crate::error::ProverError;
use crate::files::write_then_rename;

const MAGIC: &[u8; 8] = b"PPR1CS01";
/// Bumped whenever the encoding of [`Csr`] or of this file changes.
pub const FORMAT_VERSION: u32 = 2;
/// Bytes per parallel read: large enough for the disk, small enough to spread over cores.
const READ_CHUNK: usize = 64 << 20;

// The arrays are written as they lie in memory: little-endian hosts only (x86-64, aarch64).
const _: () = assert!(cfg!(target_endian = "little"));
// A scalar is blst's four Montgomery limbs, nothing else (blstrs wraps it transparently).
const _: () = assert!(size_of::<Fr>() == size_of::<[u64; 4]>());

/// Which circuit a matrices file was recorded from, and by which code: a file is used only
/// when all of it equals what the reader expects.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct MatricesId {
    pub format: u32,
    /// The circuit and everything that fixes its structure, in words (e.g. the PoRep
    /// partition's sector size, layers and challenges).
    pub circuit: String,
    /// This prover's version: a new release may change how Filecoin's circuits are built
    /// (a filecoin-proofs upgrade), so it never trusts an older release's recording.
    pub prover: String,
    pub bellperson: String,
}

impl MatricesId {
    /// The id this build gives `circuit`.
    pub fn new(circuit: impl Into<String>) -> Self {
        Self {
            format: FORMAT_VERSION,
            circuit: circuit.into(),
            prover: env!("CARGO_PKG_VERSION").to_owned(),
            bellperson: bellperson::BELLMAN_VERSION.to_owned(),
        }
    }
}

/// The header: the id, then the dimensions the arrays after it have.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct FileHeader {
    id: MatricesId,
    constraints: usize,
    aux: usize,
    inputs: usize,
    /// Per matrix (A, B, C): rows, column words, stored coefficients, table entries.
    lengths: [[usize; 4]; 3],
}

/// Where a matrices file for `id`'s circuit lives in `dir`: a name that says what it holds.
pub fn path_in(dir: &Path, file_stem: &str) -> PathBuf {
    dir.join(format!(
        "proofpipe-r1cs-{file_stem}.v{FORMAT_VERSION}.matrices"
    ))
}

/// How [`load_or_record`] came by its matrices.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "snake_case")]
pub enum MatricesOrigin {
    /// Read from the file, checksum and id checked.
    Read,
    /// Recorded, then written to the file for the next process.
    RecordedAndWritten,
    /// Recorded; no file is kept (no directory configured, or writing it failed: logged).
    Recorded,
}

/// The matrices of `id`'s circuit: read from `path` when it holds them, else recorded by
/// `record` and written there (when `path` is given). A file that is corrupt or of another id
/// is logged and replaced; a file that cannot be written is logged and the recording used.
pub fn load_or_record<E>(
    path: Option<&Path>,
    id: &MatricesId,
    record: impl FnOnce() -> Result<R1csMatrices, E>,
) -> Result<(R1csMatrices, MatricesOrigin), E> {
    let Some(path) = path else {
        return Ok((record()?, MatricesOrigin::Recorded));
    };
    match read(path, id) {
        Ok(matrices) => return Ok((matrices, MatricesOrigin::Read)),
        Err(ProverError::Io { source, .. }) if source.kind() == io::ErrorKind::NotFound => {}
        Err(error) => {
            tracing::warn!(%error, "R1CS matrices file not used; recording them anew");
        }
    }
    let matrices = record()?;
    let origin = match write(path, id, &matrices) {
        Ok(()) => MatricesOrigin::RecordedAndWritten,
        Err(error) => {
            tracing::warn!(%error, "R1CS matrices recorded but not kept: the next process records them again");
            MatricesOrigin::Recorded
        }
    };
    Ok((matrices, origin))
}

/// Writes `matrices` to `path` (a temporary name, then renamed) under `id`.
pub fn write(path: &Path, id: &MatricesId, matrices: &R1csMatrices) -> Result<(), ProverError> {
    let started = Instant::now();
    let header = header_of(id, matrices);
    let write_all = |file: &File| -> io::Result<()> {
        let mut out = BufWriter::with_capacity(8 << 20, file);
        let mut hasher = blake3::Hasher::new();
        let mut put = |bytes: &[u8]| -> io::Result<()> {
            hasher.update_rayon(bytes);
            out.write_all(bytes)
        };
        let json = serde_json::to_vec(&header).expect("the header serializes");
        put(MAGIC)?;
        put(&(json.len() as u32).to_le_bytes())?;
        put(&json)?;
        for m in [&matrices.a, &matrices.b, &matrices.c] {
            put(bytemuck::cast_slice(&m.row_ends))?;
            put(bytemuck::cast_slice(&m.columns))?;
            put(bytemuck::cast_slice(&m.coefficients))?;
            let limbs: Vec<[u64; 4]> = m.table.iter().map(|&s| blst_fr::from(s).l).collect();
            put(bytemuck::cast_slice(&limbs))?;
        }
        let digest = hasher.finalize();
        out.write_all(digest.as_bytes())?;
        out.into_inner().map_err(|e| e.into_error())?.sync_all()
    };
    write_then_rename(path, write_all)?;
    tracing::info!(
        path = %path.display(),
        bytes = %bytesize::ByteSize(matrices.heap_bytes()),
        seconds = started.elapsed().as_secs_f64(),
        "R1CS matrices written"
    );
    Ok(())
}

/// Reads the matrices `path` holds for `id`: refused (with what was wrong) when the file is of
/// another id or format, its length disagrees with its header, or its checksum fails.
pub fn read(path: &Path, id: &MatricesId) -> Result<R1csMatrices, ProverError> {
    let started = Instant::now();
    let file = File::open(path).map_err(ProverError::io("opening R1CS matrices", path))?;
    let len = file
        .metadata()
        .map_err(ProverError::io("reading metadata of", path))?
        .len();
    let corrupt = |reason: String| ProverError::CorruptMatrices {
        path: path.to_path_buf(),
        reason,
    };
    let mut prefix = [0u8; 12];
    file.read_exact_at(&mut prefix, 0)
        .map_err(|_| corrupt("shorter than its header".into()))?;
    if &prefix[..8] != MAGIC {
        return Err(corrupt(
            "not a proofpipe R1CS matrices file (bad magic)".into(),
        ));
    }
    let json_len = u32::from_le_bytes(prefix[8..].try_into().expect("4 bytes")) as usize;
    if json_len > 64 * 1024 {
        return Err(corrupt(format!("header length {json_len} is implausible")));
    }
    let mut json = vec![0u8; json_len];
    file.read_exact_at(&mut json, 12)
        .map_err(|_| corrupt("truncated header".into()))?;
    let header: FileHeader =
        serde_json::from_slice(&json).map_err(|e| corrupt(format!("unreadable header: {e}")))?;
    if header.id != *id {
        return Err(corrupt(format!(
            "recorded for {:?}, wanted {:?}",
            header.id, id
        )));
    }
    // Every section's length from the header, checked against the file's before allocating.
    let data_start = 12 + json_len as u64;
    let section_bytes = |[rows, columns, coefficients, table]: [usize; 4]| {
        [
            rows as u64 * size_of::<[u32; 2]>() as u64,
            columns as u64 * size_of::<u32>() as u64,
            coefficients as u64 * size_of::<u32>() as u64,
            table as u64 * size_of::<[u64; 4]>() as u64,
        ]
    };
    let data: u64 = header.lengths.iter().flat_map(|&l| section_bytes(l)).sum();
    if data_start + data + 32 != len {
        return Err(corrupt(format!(
            "{len} bytes, but its header describes {}",
            data_start + data + 32
        )));
    }
    let mut hasher = blake3::Hasher::new();
    hasher.update(&prefix);
    hasher.update(&json);
    let mut offset = data_start;
    let mut matrices = Vec::with_capacity(3);
    for lengths in header.lengths {
        let [rows, columns, coefficients, table] = lengths;
        let row_ends: Vec<[u32; 2]> = read_array(&file, &mut offset, rows)
            .map_err(ProverError::io("reading R1CS matrices", path))?;
        let column_words: Vec<u32> = read_array(&file, &mut offset, columns)
            .map_err(ProverError::io("reading R1CS matrices", path))?;
        let stored: Vec<u32> = read_array(&file, &mut offset, coefficients)
            .map_err(ProverError::io("reading R1CS matrices", path))?;
        let limbs: Vec<[u64; 4]> = read_array(&file, &mut offset, table)
            .map_err(ProverError::io("reading R1CS matrices", path))?;
        hasher.update_rayon(bytemuck::cast_slice(&row_ends));
        hasher.update_rayon(bytemuck::cast_slice(&column_words));
        hasher.update_rayon(bytemuck::cast_slice(&stored));
        hasher.update_rayon(bytemuck::cast_slice(&limbs));
        matrices.push((row_ends, column_words, stored, limbs));
    }
    let mut trailer = [0u8; 32];
    file.read_exact_at(&mut trailer, offset)
        .map_err(ProverError::io("reading R1CS matrices", path))?;
    if hasher.finalize().as_bytes() != &trailer {
        return Err(corrupt("checksum mismatch".into()));
    }
    let mut csrs = matrices
        .into_iter()
        .map(|(row_ends, columns, coefficients, limbs)| Csr {
            row_ends,
            columns,
            coefficients,
            // The checksum vouches for the limbs being the reduced Montgomery form this build
            // wrote.
            table: limbs.into_iter().map(|l| Fr::from(blst_fr { l })).collect(),
        });
    let (a, b, c) = (
        csrs.next().expect("three matrices"),
        csrs.next().expect("three matrices"),
        csrs.next().expect("three matrices"),
    );
    let shape = CircuitShape {
        constraints: header.constraints,
        aux: header.aux,
        inputs: header.inputs,
    };
    let matrices = R1csMatrices::from_parts(a, b, c, shape)
        .map_err(|reason| corrupt(format!("inconsistent matrices: {reason}")))?;
    tracing::info!(
        path = %path.display(),
        bytes = %bytesize::ByteSize(matrices.heap_bytes()),
        seconds = started.elapsed().as_secs_f64(),
        "R1CS matrices read"
    );
    Ok(matrices)
}

fn header_of(id: &MatricesId, m: &R1csMatrices) -> FileHeader {
    let lengths = |c: &Csr| {
        [
            c.row_ends.len(),
            c.columns.len(),
            c.coefficients.len(),
            c.table.len(),
        ]
    };
    FileHeader {
        id: id.clone(),
        constraints: m.shape.constraints,
        aux: m.shape.aux,
        inputs: m.shape.inputs,
        lengths: [lengths(&m.a), lengths(&m.b), lengths(&m.c)],
    }
}

/// `count` elements at `*offset`, read on every core; `*offset` moves past them.
fn read_array<T: bytemuck::Pod>(file: &File, offset: &mut u64, count: usize) -> io::Result<Vec<T>> {
    // Zeroed pages come from the kernel untouched: the reads fault them in, spread over cores.
    let mut out: Vec<T> = bytemuck::zeroed_vec(count);
    let bytes: &mut [u8] = bytemuck::cast_slice_mut(&mut out);
    let start = *offset;
    bytes
        .par_chunks_mut(READ_CHUNK)
        .enumerate()
        .try_for_each(|(i, chunk)| file.read_exact_at(chunk, start + (i * READ_CHUNK) as u64))?;
    *offset += bytes.len() as u64;
    Ok(out)
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::circuits::CircuitKind;

    /// A scratch directory, the file's path in it, and the id the tests record under.
    fn scratch() -> (tempfile::TempDir, PathBuf, MatricesId) {
        let dir = tempfile::tempdir().unwrap();
        let path = path_in(dir.path(), "test");
        (dir, path, MatricesId::new("merkle-sha256 2^10"))
    }

    /// A circuit with stored coefficients (SHA-256's packing) and inputs.
    fn recorded() -> R1csMatrices {
        R1csMatrices::record_circuit(CircuitKind::MerkleSha256.partition(1 << 15, 0, 0).unwrap())
            .unwrap()
    }

    #[test]
    fn written_matrices_read_back_the_same() {
        let (_dir, path, id) = scratch();
        let matrices = recorded();
        let stored = |m: &R1csMatrices| {
            [&m.a, &m.b, &m.c]
                .iter()
                .map(|c| c.coefficients.len())
                .sum::<usize>()
        };
        assert!(stored(&matrices) > 0, "a circuit with stored coefficients");
        write(&path, &id, &matrices).unwrap();
        let back = read(&path, &id).unwrap();
        assert_eq!(stored(&back), stored(&matrices));
        assert!(back.same_as(&matrices));
        assert_eq!(back.heap_bytes(), matrices.heap_bytes());
    }

    #[test]
    fn load_or_record_records_once_then_reads() {
        let (_dir, path, id) = scratch();
        let (first, origin) =
            load_or_record::<ProverError>(Some(&path), &id, || Ok(recorded())).unwrap();
        assert_eq!(origin, MatricesOrigin::RecordedAndWritten);
        let (second, origin) = load_or_record::<ProverError>(Some(&path), &id, || {
            panic!("the file holds them: no recording")
        })
        .unwrap();
        assert_eq!(origin, MatricesOrigin::Read);
        assert!(second.same_as(&first));
        // Without a directory nothing is kept.
        let (_, origin) = load_or_record::<ProverError>(None, &id, || Ok(recorded())).unwrap();
        assert_eq!(origin, MatricesOrigin::Recorded);
    }

    #[test]
    fn corrupt_truncated_and_foreign_files_are_refused_and_replaced() {
        let (_dir, path, id) = scratch();
        let matrices = recorded();
        write(&path, &id, &matrices).unwrap();
        let good = std::fs::read(&path).unwrap();

        let refused = |bytes: &[u8], id: &MatricesId| {
            std::fs::write(&path, bytes).unwrap();
            match read(&path, id) {
                Err(ProverError::CorruptMatrices { reason, .. }) => reason,
                other => panic!("expected a refusal, got {:?}", other.map(|_| ())),
            }
        };
        let mut flipped = good.clone();
        let middle = flipped.len() / 2;
        flipped[middle] ^= 1;
        assert!(refused(&flipped, &id).contains("checksum"));
        assert!(refused(&good[..good.len() - 1], &id).contains("header describes"));
        assert!(refused(b"PPPARAM1xxxx", &id).contains("magic"));
        let other = MatricesId::new("another circuit");
        assert!(refused(&good, &other).contains("another circuit"));

        // A corrupt file is recorded anew and replaced by a good one.
        std::fs::write(&path, &flipped).unwrap();
        let (_, origin) =
            load_or_record::<ProverError>(Some(&path), &id, || Ok(recorded())).unwrap();
        assert_eq!(origin, MatricesOrigin::RecordedAndWritten);
        assert!(read(&path, &id).unwrap().same_as(&matrices));
    }

    #[test]
    fn an_unwritable_directory_still_gives_the_recording() {
        let dir = tempfile::tempdir().unwrap();
        let blocker = dir.path().join("a-file");
        std::fs::write(&blocker, b"not a directory").unwrap();
        let path = path_in(&blocker, "test");
        let id = MatricesId::new("merkle-sha256 2^10");
        let (matrices, origin) =
            load_or_record::<ProverError>(Some(&path), &id, || Ok(recorded())).unwrap();
        assert_eq!(origin, MatricesOrigin::Recorded);
        assert!(matrices.same_as(&recorded()));
    }
}
