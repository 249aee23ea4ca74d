//! Locks that outlive a panicking holder.

use std::sync::{Mutex, MutexGuard};

/// Locks a mutex whose data stays consistent even if a holder panicked (pools, statistics,
/// the device turn): a panicking GPU-stage worker must not stop the others.
pub(super) fn unpoisoned<T>(m: &Mutex<T>) -> MutexGuard<'_, T> {
    m.lock().unwrap_or_else(|p| p.into_inner())
}
