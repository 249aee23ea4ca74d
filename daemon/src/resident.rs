//! The Filecoin proving keys a prover keeps between jobs, counted against its memory.
//!
//! A prover loads a parameter set on its first job that needs it and keeps it, so that the
//! next job of the same kind and size starts at once (a 32 GiB PoRep set is ~45 GB). A pool
//! that serves several kinds (curio sends PoRep and SnapDeals to one engine) would then hold
//! several sets while each job's plan counted its own: the pipeline would be sized for memory
//! that is not there. So every job is planned with the other resident sets counted, and when
//! they do not leave room (for loading the job's set, or for the pipeline's plan) they are
//! dropped first: a job never waits on memory its prover could free, and the bound stays
//! honest.

use std::collections::BTreeMap;
use std::path::PathBuf;
use std::sync::Arc;

use parking_lot::Mutex;

use proofpipe_filecoin::param_set::ParamSet;
use proofpipe_filecoin::params::DigestCheck;
use proofpipe_pipeline::error::ProverError;
use proofpipe_pipeline::params::ProvingKey;

/// Whether the sets already resident (`others` bytes) may stay while a set of `needed` bytes
/// is loaded beside them, within `budget` bytes.
pub fn others_may_stay(others: u64, needed: u64, budget: u64) -> bool {
    others.saturating_add(needed) <= budget
}

/// The proving keys this prover holds, by filecoin-proofs' circuit identifier.
pub struct ResidentKeys {
    dir: PathBuf,
    check: DigestCheck,
    keys: Mutex<BTreeMap<String, Arc<ProvingKey>>>,
    /// The registered proof each identifier was loaded for, for the prover's report.
    names: Mutex<BTreeMap<String, String>>,
}

/// A job's key, and the bytes of the other sets still resident beside it.
pub struct JobKey {
    pub key: Arc<ProvingKey>,
    pub identifier: String,
    pub others_bytes: u64,
    /// Loaded for this job (not resident before).
    pub loaded: bool,
}

impl ResidentKeys {
    pub fn new(dir: impl Into<PathBuf>, check: DigestCheck) -> Self {
        Self {
            dir: dir.into(),
            check,
            keys: Mutex::new(BTreeMap::new()),
            names: Mutex::new(BTreeMap::new()),
        }
    }

    /// The key of `set`, loaded if it is not resident; other sets are dropped first when they
    /// and this one's file would not fit in `budget` bytes. Blocking: call it on a blocking
    /// thread (the daemon proves one job at a time, so loads never race).
    pub fn get(&self, set: ParamSet, budget: u64) -> Result<JobKey, ProverError> {
        let files = set.files(&self.dir)?;
        // The file's size stands for the key's (the points as stored, uncompressed); a
        // missing file is reported by the load, with its digest.
        let needed = std::fs::metadata(&files.params).map_or(0, |m| m.len());
        let key = self.get_or_load(files.identifier, needed, budget, || {
            set.load(&self.dir, self.check)
        })?;
        self.names.lock().insert(key.identifier.clone(), set.name());
        Ok(key)
    }

    /// The key of `set` for urgent work beside a running job: the resident one, or loaded when
    /// its file fits in `room` bytes; `None` when it does not. Never drops another set (the
    /// running job holds its key, so dropping would free nothing). Blocking.
    pub fn get_beside(&self, set: ParamSet, room: u64) -> Result<Option<JobKey>, ProverError> {
        let files = set.files(&self.dir)?;
        let resident = self.keys.lock().contains_key(&files.identifier);
        let needed = std::fs::metadata(&files.params).map_or(0, |m| m.len());
        if !resident && needed > room {
            return Ok(None);
        }
        // Resident, or it fits: `get` neither drops nor waits with an unbounded budget.
        self.get(set, u64::MAX).map(Some)
    }

    /// Whether the set of this circuit identifier is resident.
    pub fn is_resident(&self, identifier: &str) -> bool {
        self.keys.lock().contains_key(identifier)
    }

    /// The registered proofs of the resident sets (their identifiers where no name is known).
    pub fn resident(&self) -> Vec<String> {
        let identifiers: Vec<String> = self.keys.lock().keys().cloned().collect();
        let names = self.names.lock();
        identifiers
            .into_iter()
            .map(|id| names.get(&id).cloned().unwrap_or(id))
            .collect()
    }

    /// The key resident under `identifier`, or the one `load` makes (expected to take
    /// `needed` bytes), kept from then on.
    fn get_or_load(
        &self,
        identifier: String,
        needed: u64,
        budget: u64,
        load: impl FnOnce() -> Result<ProvingKey, ProverError>,
    ) -> Result<JobKey, ProverError> {
        // The guard must end with this statement: in edition 2024 a guard taken in an
        // `if let` scrutinee lives through the whole block, and `others_bytes` locks again
        // (parking_lot's mutex is not reentrant: a warm prover hung on its second job).
        let resident = self.keys.lock().get(&identifier).cloned();
        if let Some(key) = resident {
            let others_bytes = self.others_bytes(&identifier);
            return Ok(JobKey {
                key,
                identifier,
                others_bytes,
                loaded: false,
            });
        }
        let others = self.others_bytes(&identifier);
        if others > 0 && !others_may_stay(others, needed, budget) {
            tracing::info!(
                needed,
                resident = others,
                budget,
                "dropping the other resident Filecoin parameter sets to load {identifier}"
            );
            self.keep_only(&identifier);
        }
        let key = Arc::new(load()?);
        self.keys.lock().insert(identifier.clone(), key.clone());
        Ok(JobKey {
            key,
            others_bytes: self.others_bytes(&identifier),
            identifier,
            loaded: true,
        })
    }

    /// Bytes of the resident keys other than `identifier`'s.
    pub fn others_bytes(&self, identifier: &str) -> u64 {
        self.keys
            .lock()
            .iter()
            .filter(|(id, _)| id.as_str() != identifier)
            .map(|(_, key)| key.heap_bytes())
            .sum()
    }

    /// Drops every resident key but `identifier`'s (their memory is freed once no job holds
    /// them; the daemon's previous job has stopped by the time the next one asks).
    pub fn keep_only(&self, identifier: &str) {
        self.keys.lock().retain(|id, _| id == identifier);
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proofpipe_filecoin::RegisteredUpdateProof;

    #[test]
    fn other_sets_stay_only_while_they_fit_beside_the_needed_one() {
        let gib = 1u64 << 30;
        assert!(others_may_stay(10 * gib, 45 * gib, 60 * gib));
        assert!(!others_may_stay(20 * gib, 45 * gib, 60 * gib));
        assert!(!others_may_stay(u64::MAX, 1, u64::MAX - 1), "no overflow");
    }

    /// A small real key (a random setup of a tiny circuit).
    fn tiny_key() -> ProvingKey {
        let params = proofpipe_pipeline::params::CircuitParams::generate(
            proofpipe_pipeline::circuits::CircuitKind::MulChain,
            1024,
        )
        .expect("a tiny setup");
        Arc::try_unwrap(params.key)
            .ok()
            .expect("nothing else holds the new key")
    }

    /// Runs `f` on a thread and fails the test if it has not returned within 30 s: a
    /// deadlock fails instead of hanging the suite.
    fn within_30s<T: Send + 'static>(f: impl FnOnce() -> T + Send + 'static) -> T {
        let (tx, rx) = std::sync::mpsc::channel();
        std::thread::spawn(move || {
            let _ = tx.send(f());
        });
        rx.recv_timeout(std::time::Duration::from_secs(30))
            .expect("the key cache deadlocked (a lock guard held across a call that locks again)")
    }

    #[test]
    fn a_resident_key_is_served_again_without_a_second_load() {
        let keys = Arc::new(ResidentKeys::new("/nonexistent", DigestCheck::Skip));
        let first = tiny_key();
        let cache = keys.clone();
        within_30s(move || {
            let load = |key: ProvingKey| move || Ok(key);
            let a = cache
                .get_or_load("set-a".into(), 1, 1 << 30, load(first))
                .unwrap();
            assert!(a.loaded);
            // The second job of the same set: served from the cache (this hung before).
            let again = cache
                .get_or_load("set-a".into(), 1, 1 << 30, || panic!("loaded twice"))
                .unwrap();
            assert!(Arc::ptr_eq(&a.key, &again.key));
            assert!(!again.loaded);
            assert_eq!(again.others_bytes, 0);
            // A second set beside it, then the first again: both resident, counted.
            let b = cache
                .get_or_load("set-b".into(), 1, 1 << 30, load(tiny_key()))
                .unwrap();
            assert_eq!(b.others_bytes, a.key.heap_bytes());
            let a_again = cache
                .get_or_load("set-a".into(), 1, 1 << 30, || panic!("loaded twice"))
                .unwrap();
            assert_eq!(a_again.others_bytes, b.key.heap_bytes());
            assert!(!a_again.loaded, "each set loaded once");
        });
    }

    #[test]
    fn other_sets_are_dropped_when_the_new_one_would_not_fit_beside_them() {
        let keys = Arc::new(ResidentKeys::new("/nonexistent", DigestCheck::Skip));
        let cache = keys.clone();
        within_30s(move || {
            let a = cache
                .get_or_load("set-a".into(), 1, u64::MAX, || Ok(tiny_key()))
                .unwrap();
            let budget = a.key.heap_bytes() + 10;
            let b = cache
                .get_or_load("set-b".into(), 11, budget, || Ok(tiny_key()))
                .unwrap();
            assert_eq!(b.others_bytes, 0, "set-a was dropped to make room");
            assert_eq!(cache.keys.lock().len(), 1);
        });
    }

    #[test]
    fn a_missing_set_is_refused_with_its_path_and_nothing_is_kept() {
        let dir = tempfile::tempdir().unwrap();
        let keys = ResidentKeys::new(dir.path(), DigestCheck::Skip);
        let Err(err) = keys.get(
            ParamSet::Update(RegisteredUpdateProof::StackedDrg2KiBV1),
            1 << 30,
        ) else {
            panic!("loaded parameters that are not there")
        };
        let message = err.to_string();
        assert!(
            message.contains("v28-empty-sector-update-merkletree-poseidon_hasher-8-0-0"),
            "{message}"
        );
        assert!(keys.keys.lock().is_empty());
    }
}
