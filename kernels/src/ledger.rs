//! A GPU backend's account of its own device memory on one device, against an optional cap
//! (`PROOFPIPE_GPU_MEMORY`), so that a large card can prove as a smaller one would.
//!
//! Allocations that live on (resident bases, quotient workspaces, streaming engines) add up;
//! MSM temporaries do not: a device runs one MSM at a time (under its lock), so only the
//! largest admitted one counts. The CUDA context is a fixed charge.

// Used by the CUDA backend only; its logic is tested without a GPU.
#![cfg_attr(not(feature = "cuda"), allow(dead_code))]

use std::sync::{Arc, Mutex};

/// What an allocation is, in the ledger.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Held {
    Resident,
    Workspace,
    StreamEngine,
    MsmTemp,
}

/// One device's memory as a GPU backend counts it (its own allocations, not other
/// processes').
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct DeviceLedger {
    /// The cap allocations are held to, if any.
    pub cap: Option<u64>,
    /// The CUDA context and NTT tables (a fixed `GPU_CONTEXT_BYTES`).
    pub context_bytes: u64,
    /// Resident base points and their MSM engines' buckets.
    pub resident_bytes: u64,
    /// Quotient workspaces (a, b, c buffers), idle or in use.
    pub workspace_bytes: u64,
    /// Streaming MSM engines' buckets.
    pub stream_engine_bytes: u64,
    /// The largest temporaries of the MSMs admitted now (they run one at a time).
    pub msm_temp_bytes: u64,
}

impl DeviceLedger {
    /// Everything counted.
    pub fn held(&self) -> u64 {
        self.context_bytes
            + self.resident_bytes
            + self.workspace_bytes
            + self.stream_engine_bytes
            + self.msm_temp_bytes
    }
}

#[derive(Debug)]
pub(crate) struct Ledger {
    now: DeviceLedger,
    /// Admitted MSMs' temporaries; `now.msm_temp_bytes` is their maximum.
    temps: Vec<u64>,
}

impl Ledger {
    pub(crate) fn new(cap: Option<u64>, context_bytes: u64) -> Self {
        Self {
            now: DeviceLedger {
                cap,
                context_bytes,
                ..DeviceLedger::default()
            },
            temps: Vec::new(),
        }
    }

    pub(crate) fn snapshot(&self) -> DeviceLedger {
        self.now
    }

    fn slot(&mut self, kind: Held) -> &mut u64 {
        match kind {
            Held::Resident => &mut self.now.resident_bytes,
            Held::Workspace => &mut self.now.workspace_bytes,
            Held::StreamEngine => &mut self.now.stream_engine_bytes,
            Held::MsmTemp => &mut self.now.msm_temp_bytes,
        }
    }

    /// What would be held with `bytes` more of `kind`.
    fn held_with(&self, kind: Held, bytes: u64) -> u64 {
        let held = self.now.held();
        match kind {
            Held::MsmTemp => held - self.now.msm_temp_bytes + self.now.msm_temp_bytes.max(bytes),
            _ => held + bytes,
        }
    }

    /// Counts `bytes` of `kind` if that stays within the cap; else what is held now.
    pub(crate) fn try_take(&mut self, kind: Held, bytes: u64) -> Result<(), u64> {
        if self
            .now
            .cap
            .is_some_and(|cap| self.held_with(kind, bytes) > cap)
        {
            return Err(self.now.held());
        }
        if kind == Held::MsmTemp {
            self.temps.push(bytes);
            self.now.msm_temp_bytes = self.now.msm_temp_bytes.max(bytes);
        } else {
            *self.slot(kind) += bytes;
        }
        Ok(())
    }

    pub(crate) fn give_back(&mut self, kind: Held, bytes: u64) {
        if kind == Held::MsmTemp {
            if let Some(i) = self.temps.iter().position(|&t| t == bytes) {
                self.temps.swap_remove(i);
            }
            self.now.msm_temp_bytes = self.temps.iter().copied().max().unwrap_or(0);
        } else {
            let slot = self.slot(kind);
            *slot = slot.saturating_sub(bytes);
        }
    }
}

/// Bytes counted in a device's ledger, given back when dropped (after the allocation it
/// stands for is freed: it is the last field of its owner).
pub(crate) struct Charge {
    ledger: Arc<Mutex<Ledger>>,
    kind: Held,
    bytes: u64,
}

impl Charge {
    /// Counts `bytes` of `kind`, or returns what is held if the cap forbids it.
    pub(crate) fn take(ledger: &Arc<Mutex<Ledger>>, kind: Held, bytes: u64) -> Result<Self, u64> {
        let taken = lock(ledger).try_take(kind, bytes);
        taken.map(|()| Self {
            ledger: ledger.clone(),
            kind,
            bytes,
        })
    }
}

impl Drop for Charge {
    fn drop(&mut self) {
        lock(&self.ledger).give_back(self.kind, self.bytes);
    }
}

fn lock(ledger: &Mutex<Ledger>) -> std::sync::MutexGuard<'_, Ledger> {
    ledger.lock().unwrap_or_else(|p| p.into_inner())
}

#[cfg(test)]
mod tests {
    use super::*;

    const GIB: u64 = 1 << 30;

    #[test]
    fn allocations_add_up_and_temporaries_count_once() {
        let ledger = Arc::new(Mutex::new(Ledger::new(Some(10 * GIB), GIB)));
        let held = || lock(&ledger).snapshot().held();
        let bases = Charge::take(&ledger, Held::Resident, 4 * GIB).unwrap();
        let ws = Charge::take(&ledger, Held::Workspace, 2 * GIB).unwrap();
        assert_eq!(held(), 7 * GIB);
        // Two MSMs admitted: they run one at a time, so the larger counts.
        let t1 = Charge::take(&ledger, Held::MsmTemp, GIB).unwrap();
        let t2 = Charge::take(&ledger, Held::MsmTemp, 2 * GIB).unwrap();
        assert_eq!(held(), 9 * GIB);
        // 2 GiB more of bases would pass the cap; a temporary of 3 GiB just fits.
        assert_eq!(
            Charge::take(&ledger, Held::Resident, 2 * GIB).err(),
            Some(9 * GIB)
        );
        let t3 = Charge::take(&ledger, Held::MsmTemp, 3 * GIB).unwrap();
        assert_eq!(held(), 10 * GIB);
        assert!(Charge::take(&ledger, Held::MsmTemp, 3 * GIB + 1).is_err());
        drop(t3);
        assert_eq!(held(), 9 * GIB);
        drop(t2);
        assert_eq!(lock(&ledger).snapshot().msm_temp_bytes, GIB);
        drop((t1, ws));
        let s = lock(&ledger).snapshot();
        assert_eq!(
            (s.held(), s.resident_bytes, s.msm_temp_bytes),
            (5 * GIB, 4 * GIB, 0)
        );
        drop(bases);
        assert_eq!(held(), GIB);
    }

    #[test]
    fn without_a_cap_everything_is_counted_and_nothing_refused() {
        let ledger = Arc::new(Mutex::new(Ledger::new(None, GIB)));
        let big = Charge::take(&ledger, Held::StreamEngine, 1 << 50).unwrap();
        assert_eq!(lock(&ledger).snapshot().stream_engine_bytes, 1 << 50);
        drop(big);
        assert_eq!(lock(&ledger).snapshot().held(), GIB);
    }
}
