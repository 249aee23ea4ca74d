//! Groth16 parameters: generated once per (circuit, size), deterministically, cached on disk,
//! loaded once per process and shared by every job.
//!
//! File layout: `MAGIC`, a little-endian u32 header length, the JSON [`ParamsHeader`], the
//! parameters in bellperson's format, and a trailer: the BLAKE3 hash of everything before it.
//! Files are written to a temporary name and renamed, so a crash never leaves a partial file
//! under the real name; any corruption or mismatch is detected on load and reported.

use std::collections::HashMap;
use std::fs::File;
use std::io::{self, BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::{Arc, OnceLock};
use std::time::Instant;

use bellperson::groth16::{Parameters, PreparedVerifyingKey, prepare_verifying_key};
use blstrs::{Bls12, G1Affine, G2Affine};
use parking_lot::Mutex;
use rand_chacha::ChaCha20Rng;
use rand_core::SeedableRng;
use serde::{Deserialize, Serialize};

use crate::circuits::{CircuitKind, CircuitShape};
use crate::error::ProverError;

pub mod random_setup;
mod timing_only;
pub use crate::circuits::QueryCounts;
pub use timing_only::query_counts;

const MAGIC: &[u8; 8] = b"PPPARAM1";
const FORMAT_VERSION: u32 = 1;

/// Which parameters a file holds.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct ParamsHeader {
    pub format: u32,
    pub circuit: CircuitKind,
    pub constraints: usize,
    /// Hex of the 32-byte seed the trusted setup was drawn from (test parameters: anyone
    /// who knows the seed can forge proofs).
    pub setup_seed: String,
    pub bellperson: String,
}

/// A proving key ready to prove and verify with, whatever circuit it belongs to: what the
/// pipeline needs of a job's parameters.
pub struct ProvingKey {
    /// The R1CS dimensions of one partition.
    pub shape: CircuitShape,
    pub params: Parameters<Bls12>,
    pub pvk: PreparedVerifyingKey<Bls12>,
    pub kind: ParamsKind,
}

impl ProvingKey {
    /// `params` with their prepared verifying key.
    pub fn new(shape: CircuitShape, params: Parameters<Bls12>, kind: ParamsKind) -> Self {
        Self {
            shape,
            pvk: prepare_verifying_key(&params.vk),
            params,
            kind,
        }
    }

    /// Each query's bases in bytes: what the planner places on the GPU or streams.
    pub fn query_bytes(&self) -> proofpipe_model::sizing::QueryBytes {
        let p = &self.params;
        let g1 = |n: usize| (n * size_of::<G1Affine>()) as u64;
        proofpipe_model::sizing::QueryBytes {
            h: g1(p.h.len()),
            l: g1(p.l.len()),
            a: g1(p.a.len()),
            b_g1: g1(p.b_g1.len()),
            b_g2: (p.b_g2.len() * size_of::<G2Affine>()) as u64,
        }
    }

    /// Heap bytes of the proving key's points.
    pub fn heap_bytes(&self) -> u64 {
        let p = &self.params;
        let g1 = p.h.len() + p.l.len() + p.a.len() + p.b_g1.len();
        (g1 * size_of::<G1Affine>() + p.b_g2.len() * size_of::<G2Affine>()) as u64
    }
}

/// The parameters of one of proofpipe's own circuits at one size.
pub struct CircuitParams {
    pub circuit: CircuitKind,
    pub constraints: usize,
    pub key: Arc<ProvingKey>,
}

impl std::ops::Deref for CircuitParams {
    type Target = ProvingKey;

    fn deref(&self) -> &ProvingKey {
        &self.key
    }
}

/// Where a parameter set's points came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ParamsKind {
    /// A (test) trusted setup: proofs verify.
    Setup,
    /// Cheap points of the right shape, for timing large sizes: proofs do not verify, and
    /// nothing checks them (`CircuitParams::timing_only`).
    TimingOnly,
}

impl ParamsKind {
    /// Whether proofs made with these parameters can verify (and so must be checked).
    pub fn verifiable(self) -> bool {
        self == Self::Setup
    }
}

impl CircuitParams {
    /// `params` for `(circuit, constraints)`, with their prepared verifying key.
    fn new(
        circuit: CircuitKind,
        constraints: usize,
        params: Parameters<Bls12>,
        kind: ParamsKind,
    ) -> Result<Self, ProverError> {
        let shape = circuit.shape(constraints)?;
        Ok(Self {
            circuit,
            constraints,
            key: Arc::new(ProvingKey::new(shape, params, kind)),
        })
    }

    /// Generates parameters in memory only (tests, benchmarks of tiny circuits).
    pub fn generate(circuit: CircuitKind, constraints: usize) -> Result<Self, ProverError> {
        let params = generate(circuit, constraints)?;
        Self::new(circuit, constraints, params, ParamsKind::Setup)
    }
}

/// An upper bound on the proving key's heap bytes for a circuit shape, before it is loaded
/// (the model's, which plans count with).
pub use proofpipe_model::sizing::estimated_params_bytes;

fn setup_seed(circuit: CircuitKind, constraints: usize) -> [u8; 32] {
    let mut h = blake3::Hasher::new();
    h.update(b"proofpipe test setup v1\0");
    h.update(circuit.name().as_bytes());
    h.update(&(constraints as u64).to_le_bytes());
    *h.finalize().as_bytes()
}

fn header_for(circuit: CircuitKind, constraints: usize) -> ParamsHeader {
    ParamsHeader {
        format: FORMAT_VERSION,
        circuit,
        constraints,
        setup_seed: blake3::Hash::from_bytes(setup_seed(circuit, constraints))
            .to_hex()
            .to_string(),
        bellperson: bellperson::BELLMAN_VERSION.to_string(),
    }
}

/// Values loaded at most once per key in this process, shared by every caller; concurrent
/// callers of one key wait for one load. A failed load leaves its key empty, so a fixed file
/// is read on the next try.
pub struct LoadOnce<K, V> {
    slots: Mutex<HashMap<K, Arc<OnceLock<V>>>>,
}

impl<K: Eq + std::hash::Hash, V: Clone> Default for LoadOnce<K, V> {
    fn default() -> Self {
        Self::new()
    }
}

impl<K: Eq + std::hash::Hash, V: Clone> LoadOnce<K, V> {
    pub fn new() -> Self {
        Self {
            slots: Mutex::new(HashMap::new()),
        }
    }

    /// The value of `key`, and whether this call loaded it with `load`.
    pub fn get_or_load<E>(
        &self,
        key: K,
        load: impl FnOnce() -> Result<V, E>,
    ) -> Result<(V, bool), E> {
        let slot = self.slots.lock().entry(key).or_default().clone();
        if let Some(value) = slot.get() {
            return Ok((value.clone(), false));
        }
        // One load at a time in this process (one static for every instantiation):
        // generating and reading parameters use every core and much memory.
        static LOADING: Mutex<()> = Mutex::new(());
        let _guard = LOADING.lock();
        if let Some(value) = slot.get() {
            return Ok((value.clone(), false));
        }
        let value = load()?;
        let _ = slot.set(value.clone());
        Ok((value, true))
    }

    /// Forgets `key`'s value: the next caller loads it again.
    pub fn forget(&self, key: &K) {
        self.slots.lock().remove(key);
    }

    /// Every value loaded so far.
    pub fn loaded(&self) -> Vec<V> {
        let slots = self.slots.lock();
        slots
            .values()
            .filter_map(|slot| slot.get().cloned())
            .collect()
    }

    /// Forgets the loaded values `keep` says no to (a load under way is kept).
    pub fn retain(&self, keep: impl Fn(&V) -> bool) {
        self.slots
            .lock()
            .retain(|_, slot| slot.get().is_none_or(&keep));
    }
}

/// The on-disk cache of parameters, with an in-process memo so each set loads once.
pub struct ParamsStore {
    dir: PathBuf,
    loaded: LoadOnce<(CircuitKind, usize), Arc<CircuitParams>>,
}

/// A file in the cache directory, with its header or why it could not be read.
pub struct CachedFile {
    pub path: PathBuf,
    pub header: Result<ParamsHeader, ProverError>,
    pub bytes: u64,
}

/// What `ensure` did to get parameters.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum ParamsOrigin {
    Memory,
    Disk,
    Generated,
}

impl ParamsStore {
    pub fn new(dir: impl Into<PathBuf>) -> Self {
        Self {
            dir: dir.into(),
            loaded: LoadOnce::new(),
        }
    }

    /// The default directory: `$XDG_CACHE_HOME/proofpipe/params` or its platform equivalent.
    pub fn default_dir() -> PathBuf {
        dirs::cache_dir()
            .unwrap_or_else(std::env::temp_dir)
            .join("proofpipe")
            .join("params")
    }

    pub fn dir(&self) -> &Path {
        &self.dir
    }

    pub fn path_for(&self, circuit: CircuitKind, constraints: usize) -> PathBuf {
        self.dir
            .join(format!("{}-{}.params", circuit.name(), constraints))
    }

    /// The parameters for `(circuit, constraints)`: from memory, else from disk, else
    /// generated and written to disk. Concurrent callers for the same key share one load.
    pub fn get(
        &self,
        circuit: CircuitKind,
        constraints: usize,
    ) -> Result<(Arc<CircuitParams>, ParamsOrigin), ProverError> {
        let mut origin = ParamsOrigin::Memory;
        let (ready, _) = self.loaded.get_or_load((circuit, constraints), || {
            let path = self.path_for(circuit, constraints);
            let params = if path.exists() {
                origin = ParamsOrigin::Disk;
                read_params(&path, circuit, constraints)?
            } else {
                origin = ParamsOrigin::Generated;
                let params = generate(circuit, constraints)?;
                write_params(&path, &header_for(circuit, constraints), &params)?;
                params
            };
            let ready = CircuitParams::new(circuit, constraints, params, ParamsKind::Setup)?;
            Ok::<_, ProverError>(Arc::new(ready))
        })?;
        Ok((ready, origin))
    }

    /// Generates parameters and overwrites the cached file.
    pub fn regenerate(
        &self,
        circuit: CircuitKind,
        constraints: usize,
    ) -> Result<PathBuf, ProverError> {
        let params = generate(circuit, constraints)?;
        let path = self.path_for(circuit, constraints);
        write_params(&path, &header_for(circuit, constraints), &params)?;
        self.loaded.forget(&(circuit, constraints));
        Ok(path)
    }

    /// Every parameter file in the directory, with its header or why it cannot be read.
    pub fn list(&self) -> Result<Vec<CachedFile>, ProverError> {
        let entries = match std::fs::read_dir(&self.dir) {
            Ok(e) => e,
            Err(e) if e.kind() == io::ErrorKind::NotFound => return Ok(Vec::new()),
            Err(e) => return Err(ProverError::io("listing", &self.dir)(e)),
        };
        let mut out = Vec::new();
        for entry in entries {
            let path = entry.map_err(ProverError::io("listing", &self.dir))?.path();
            if path.extension().is_some_and(|e| e == "params") {
                let bytes = std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0);
                out.push(CachedFile {
                    header: read_header(&path).map(|(h, _)| h),
                    path,
                    bytes,
                });
            }
        }
        out.sort_by(|a, b| a.path.cmp(&b.path));
        Ok(out)
    }

    /// Reads a file whole and checks its hash and header.
    pub fn check_file(path: &Path) -> Result<ParamsHeader, ProverError> {
        let (header, _) = read_header(path)?;
        read_params(path, header.circuit, header.constraints)?;
        Ok(header)
    }
}

fn generate(circuit: CircuitKind, constraints: usize) -> Result<Parameters<Bls12>, ProverError> {
    let started = Instant::now();
    tracing::info!(%circuit, constraints, "generating Groth16 parameters (once per circuit and size)");
    let mut rng = ChaCha20Rng::from_seed(setup_seed(circuit, constraints));
    let params = random_setup::random_parameters(circuit.partition(constraints, 0, 0)?, &mut rng)
        .map_err(|e| ProverError::ParamsGeneration {
        circuit: circuit.name(),
        constraints,
        message: e.to_string(),
    })?;
    tracing::info!(%circuit, constraints, seconds = started.elapsed().as_secs_f64(), "parameters generated");
    Ok(params)
}

/// Hashes everything written through it.
struct HashingWriter<W> {
    inner: W,
    hasher: blake3::Hasher,
}

impl<W: Write> Write for HashingWriter<W> {
    fn write(&mut self, buf: &[u8]) -> io::Result<usize> {
        let n = self.inner.write(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
    fn flush(&mut self) -> io::Result<()> {
        self.inner.flush()
    }
}

/// Hashes everything read through it.
struct HashingReader<R> {
    inner: R,
    hasher: blake3::Hasher,
}

impl<R: Read> Read for HashingReader<R> {
    fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(buf)?;
        self.hasher.update(&buf[..n]);
        Ok(n)
    }
}

fn write_params(
    path: &Path,
    header: &ParamsHeader,
    params: &Parameters<Bls12>,
) -> Result<(), ProverError> {
    let write = |file: &File| -> io::Result<()> {
        let mut w = HashingWriter {
            inner: BufWriter::new(file),
            hasher: blake3::Hasher::new(),
        };
        let header = serde_json::to_vec(header).expect("header serializes");
        w.write_all(MAGIC)?;
        w.write_all(&(header.len() as u32).to_le_bytes())?;
        w.write_all(&header)?;
        params.write(&mut w)?;
        let digest = w.hasher.finalize();
        let mut inner = w.inner;
        inner.write_all(digest.as_bytes())?;
        inner.into_inner().map_err(|e| e.into_error())?.sync_all()
    };
    // Identical contents whoever wins: setup is deterministic per (circuit, size).
    crate::files::write_then_rename(path, write)
}

fn corrupt(path: &Path, reason: impl Into<String>) -> ProverError {
    ProverError::CorruptParams {
        path: path.to_path_buf(),
        reason: reason.into(),
    }
}

fn read_header_from<R: Read>(path: &Path, r: &mut R) -> Result<ParamsHeader, ProverError> {
    let mut magic = [0u8; 8];
    r.read_exact(&mut magic)
        .map_err(|_| corrupt(path, "shorter than its header"))?;
    if &magic != MAGIC {
        return Err(corrupt(path, "not a proofpipe parameter file (bad magic)"));
    }
    let mut len = [0u8; 4];
    r.read_exact(&mut len)
        .map_err(|_| corrupt(path, "truncated header"))?;
    let len = u32::from_le_bytes(len) as usize;
    if len > 64 * 1024 {
        return Err(corrupt(path, format!("header length {len} is implausible")));
    }
    let mut json = vec![0u8; len];
    r.read_exact(&mut json)
        .map_err(|_| corrupt(path, "truncated header"))?;
    serde_json::from_slice(&json).map_err(|e| corrupt(path, format!("unreadable header: {e}")))
}

fn read_header(path: &Path) -> Result<(ParamsHeader, u64), ProverError> {
    let file = File::open(path).map_err(ProverError::io("opening parameters", path))?;
    let len = file
        .metadata()
        .map_err(ProverError::io("reading metadata of", path))?
        .len();
    Ok((read_header_from(path, &mut BufReader::new(file))?, len))
}

fn read_params(
    path: &Path,
    circuit: CircuitKind,
    constraints: usize,
) -> Result<Parameters<Bls12>, ProverError> {
    let started = Instant::now();
    let file = File::open(path).map_err(ProverError::io("opening parameters", path))?;
    let len = file
        .metadata()
        .map_err(ProverError::io("reading metadata of", path))?
        .len();
    if len < 32 {
        return Err(corrupt(path, "too short"));
    }
    // Hash exactly the bytes before the 32-byte trailer.
    let mut r = HashingReader {
        inner: BufReader::with_capacity(1 << 20, file).take(len - 32),
        hasher: blake3::Hasher::new(),
    };
    let header = read_header_from(path, &mut r)?;
    let expected = header_for(circuit, constraints);
    if header != expected {
        return Err(corrupt(
            path,
            format!(
                "header says {} at {} constraints (format {}, setup seed {}), wanted {} at {} (format {}, setup seed {})",
                header.circuit,
                header.constraints,
                header.format,
                header.setup_seed,
                expected.circuit,
                expected.constraints,
                expected.format,
                expected.setup_seed
            ),
        ));
    }
    // Points are not subgroup-checked here: the hash below proves the bytes are the ones we wrote.
    let params = Parameters::<Bls12>::read(&mut r, false)
        .map_err(|e| corrupt(path, format!("unreadable parameters: {e}")))?;
    let mut rest = Vec::new();
    r.read_to_end(&mut rest)
        .map_err(ProverError::io("reading parameters", path))?;
    if !rest.is_empty() {
        return Err(corrupt(
            path,
            format!("{} unexpected bytes after the parameters", rest.len()),
        ));
    }
    let digest = r.hasher.finalize();
    let mut trailer = [0u8; 32];
    // The trailer follows in the same buffered reader (the file itself may be read ahead).
    let mut rest_of_file = r.inner.into_inner();
    rest_of_file
        .read_exact(&mut trailer)
        .map_err(ProverError::io("reading parameters", path))?;
    if digest.as_bytes() != &trailer {
        return Err(corrupt(path, "checksum mismatch"));
    }
    tracing::info!(%circuit, constraints, path = %path.display(), seconds = started.elapsed().as_secs_f64(), "parameters loaded");
    Ok(params)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_model_counts_points_at_their_real_size() {
        use proofpipe_model::sizing::{G1_AFFINE_BYTES, G2_AFFINE_BYTES};
        assert_eq!(G1_AFFINE_BYTES, size_of::<G1Affine>() as u64);
        assert_eq!(G2_AFFINE_BYTES, size_of::<G2Affine>() as u64);
    }

    #[test]
    fn generated_params_round_trip_and_load_once() {
        let dir = tempfile::tempdir().unwrap();
        let store = ParamsStore::new(dir.path());
        let (p, origin) = store.get(CircuitKind::MulChain, 64).unwrap();
        assert_eq!(origin, ParamsOrigin::Generated);
        let (q, origin) = store.get(CircuitKind::MulChain, 64).unwrap();
        assert_eq!(origin, ParamsOrigin::Memory);
        assert!(Arc::ptr_eq(&p, &q));

        let fresh = ParamsStore::new(dir.path());
        let (r, origin) = fresh.get(CircuitKind::MulChain, 64).unwrap();
        assert_eq!(origin, ParamsOrigin::Disk);
        assert_eq!(
            r.params.vk, p.params.vk,
            "generation is deterministic and the file round-trips"
        );
        assert!(r.heap_bytes() <= estimated_params_bytes(r.shape));
    }

    /// Provers sharing a params volume may write the same file at the same time (separate
    /// processes: `get` serialises only within one); each must succeed and leave one whole
    /// file, whoever renames last.
    #[test]
    fn concurrent_writers_of_one_file_all_succeed() {
        let dir = tempfile::tempdir().unwrap();
        let (circuit, constraints) = (CircuitKind::MulChain, 4096);
        let params = generate(circuit, constraints).unwrap();
        let header = header_for(circuit, constraints);
        let path = ParamsStore::new(dir.path()).path_for(circuit, constraints);
        let start = std::sync::Barrier::new(4);
        std::thread::scope(|scope| {
            let writers: Vec<_> = (0..4)
                .map(|_| {
                    scope.spawn(|| {
                        start.wait();
                        write_params(&path, &header, &params)
                    })
                })
                .collect();
            for writer in writers {
                writer
                    .join()
                    .unwrap()
                    .expect("every concurrent writer succeeds");
            }
        });
        let (_, origin) = ParamsStore::new(dir.path())
            .get(circuit, constraints)
            .unwrap();
        assert_eq!(origin, ParamsOrigin::Disk);
        let leftovers: Vec<_> = std::fs::read_dir(dir.path())
            .unwrap()
            .map(|entry| entry.unwrap().file_name())
            .filter(|name| name.to_string_lossy().ends_with(".partial"))
            .collect();
        assert!(leftovers.is_empty(), "temporary files left: {leftovers:?}");
    }

    #[test]
    fn corrupt_and_mismatched_files_are_refused() {
        let dir = tempfile::tempdir().unwrap();
        let store = ParamsStore::new(dir.path());
        store.get(CircuitKind::MulChain, 64).unwrap();
        let path = store.path_for(CircuitKind::MulChain, 64);

        // One flipped byte in the body.
        let mut bytes = std::fs::read(&path).unwrap();
        let mid = bytes.len() / 2;
        bytes[mid] ^= 0x40;
        std::fs::write(&path, &bytes).unwrap();
        let err = ParamsStore::new(dir.path())
            .get(CircuitKind::MulChain, 64)
            .err()
            .unwrap();
        assert!(matches!(err, ProverError::CorruptParams { .. }), "{err}");

        // A valid file for another size, under this size's name.
        store.get(CircuitKind::MulChain, 32).unwrap();
        std::fs::copy(store.path_for(CircuitKind::MulChain, 32), &path).unwrap();
        let err = ParamsStore::new(dir.path())
            .get(CircuitKind::MulChain, 64)
            .err()
            .unwrap()
            .to_string();
        assert!(
            err.contains("at 32 constraints") && err.contains("--regenerate"),
            "{err}"
        );

        // Truncated.
        std::fs::write(&path, &bytes[..100]).unwrap();
        assert!(
            ParamsStore::new(dir.path())
                .get(CircuitKind::MulChain, 64)
                .is_err()
        );
    }
}
