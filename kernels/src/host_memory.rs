//! Where a partition's a/b/c evaluations live on the host.
//!
//! Synthesis writes the a, b, c evaluations (3 x 32 B per constraint) once, and the GPU stage
//! uploads them once. From ordinary (pageable) memory that upload runs at ~8 GB/s through the
//! driver's own staging copies, on one CPU thread; from page-locked memory it is a DMA at
//! ~55 GB/s (H200, measured). So a GPU backend hands the synthesis workers an allocator
//! ([`EvalAlloc`]) backed by a pool of page-locked buffers, and synthesis writes straight into
//! them: no extra copy anywhere. The CPU backend hands out ordinary heap memory.
//!
//! The pool never holds more than the pipeline ever had alive at once: a buffer comes back to
//! it when its evaluations are dropped (after their upload), and the partition budget bounds
//! how many partitions hold evaluations at a time, so the memory plan's count of a/b/c holds.

use std::alloc::Layout;
use std::ptr::NonNull;
use std::sync::Arc;

use allocator_api2::alloc::{AllocError, Allocator, Global};
use blstrs::Scalar as Fr;

/// Memory for large evaluation vectors, from a backend.
pub trait HostPool: Send + Sync {
    /// A block of at least `layout.size()` bytes at `layout.align()`, or None (the caller
    /// then uses ordinary memory).
    fn allocate(&self, layout: Layout) -> Option<NonNull<u8>>;
    /// Takes back a block this pool handed out; false if `ptr` is not one of its blocks.
    ///
    /// # Safety
    /// `ptr` is not used after a `true` return.
    unsafe fn deallocate(&self, ptr: NonNull<u8>) -> bool;
}

/// The allocator of a partition's evaluations: ordinary heap memory, or a backend's pool for
/// blocks of at least [`EvalAlloc::POOL_FROM`] bytes (smaller ones are not worth pinning).
#[derive(Clone, Default)]
pub struct EvalAlloc(Option<Arc<dyn HostPool>>);

impl std::fmt::Debug for EvalAlloc {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str(if self.0.is_some() {
            "EvalAlloc(pool)"
        } else {
            "EvalAlloc(heap)"
        })
    }
}

impl EvalAlloc {
    /// Blocks below this many bytes come from the heap even with a pool.
    pub const POOL_FROM: usize = 1 << 20;

    /// Ordinary heap memory.
    pub fn heap() -> Self {
        Self(None)
    }

    /// Blocks of at least [`EvalAlloc::POOL_FROM`] bytes from `pool`.
    pub fn pooled(pool: Arc<dyn HostPool>) -> Self {
        Self(Some(pool))
    }

    pub fn is_pooled(&self) -> bool {
        self.0.is_some()
    }
}

// SAFETY: every block is either the pool's (it says so on deallocate) or Global's, and is
// handed back to the one that made it; clones share the pool, so a block may be freed through
// any clone.
unsafe impl Allocator for EvalAlloc {
    fn allocate(&self, layout: Layout) -> Result<NonNull<[u8]>, AllocError> {
        if let Some(pool) = &self.0
            && layout.size() >= Self::POOL_FROM
            && let Some(p) = pool.allocate(layout)
        {
            return Ok(NonNull::slice_from_raw_parts(p, layout.size()));
        }
        Global.allocate(layout)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>, layout: Layout) {
        if let Some(pool) = &self.0
            && layout.size() >= Self::POOL_FROM
            // SAFETY: the block is not used after it is given back.
            && unsafe { pool.deallocate(ptr) }
        {
            return;
        }
        // SAFETY: not the pool's, so Global's, with this layout.
        unsafe { Global.deallocate(ptr, layout) }
    }
}

/// A/b/c evaluations: a `Vec` of field elements in an [`EvalAlloc`].
pub type Evaluations = allocator_api2::vec::Vec<Fr, EvalAlloc>;

/// Empty evaluations with room for `capacity` elements, in `alloc`.
pub fn evaluations(capacity: usize, alloc: &EvalAlloc) -> Evaluations {
    Evaluations::with_capacity_in(capacity, alloc.clone())
}

/// Evaluations on the heap with these values (tests, and callers without a backend).
pub fn heap_evaluations(values: Vec<Fr>) -> Evaluations {
    let (ptr, len, cap) = (values.as_ptr().cast_mut(), values.len(), values.capacity());
    std::mem::forget(values);
    // SAFETY: std's Vec allocated `ptr` through the global allocator with the layout of
    // `cap` Fr, which is what EvalAlloc::heap() (Global) frees it with.
    unsafe { Evaluations::from_raw_parts_in(ptr, len, cap, EvalAlloc::heap()) }
}

/// The evaluations as a std `Vec`: without a copy when they are on the heap, copied out of a
/// pool's block otherwise (which then goes back to the pool).
pub fn into_std_vec(values: Evaluations) -> Vec<Fr> {
    if values.allocator().is_pooled() {
        return values.to_vec();
    }
    let (ptr, len, cap, _) = values.into_raw_parts_with_alloc();
    // SAFETY: a heap EvalAlloc allocates through Global, i.e. std's global allocator, with
    // the layout of `cap` Fr: what std's Vec frees.
    unsafe { Vec::from_raw_parts(ptr, len, cap) }
}

#[cfg(test)]
mod tests {
    use super::*;
    use ff::Field;
    use std::collections::HashMap;
    use std::sync::Mutex;

    /// A pool over the heap that counts what it hands out and keeps what comes back.
    #[derive(Default)]
    struct CountingPool {
        live: Mutex<HashMap<usize, Layout>>,
        idle: Mutex<Vec<(NonNull<u8>, Layout)>>,
        made: Mutex<usize>,
    }

    // SAFETY: the pointers are plain heap blocks, used under the mutexes.
    unsafe impl Send for CountingPool {}
    unsafe impl Sync for CountingPool {}

    impl HostPool for CountingPool {
        fn allocate(&self, layout: Layout) -> Option<NonNull<u8>> {
            let mut idle = self.idle.lock().unwrap();
            let p = match idle.iter().position(|(_, l)| *l == layout) {
                Some(i) => idle.swap_remove(i).0,
                None => {
                    *self.made.lock().unwrap() += 1;
                    Global.allocate(layout).ok()?.cast()
                }
            };
            self.live
                .lock()
                .unwrap()
                .insert(p.as_ptr() as usize, layout);
            Some(p)
        }
        unsafe fn deallocate(&self, ptr: NonNull<u8>) -> bool {
            let layout = self.live.lock().unwrap().remove(&(ptr.as_ptr() as usize));
            match layout {
                Some(layout) => {
                    self.idle.lock().unwrap().push((ptr, layout));
                    true
                }
                None => false,
            }
        }
    }

    #[test]
    fn large_evaluations_come_from_the_pool_and_go_back_to_it() {
        let pool = Arc::new(CountingPool::default());
        let alloc = EvalAlloc::pooled(pool.clone());
        let n = EvalAlloc::POOL_FROM / 32 + 1;
        for round in 0..3 {
            let mut v = evaluations(n, &alloc);
            v.resize(n, Fr::ONE);
            assert_eq!(pool.live.lock().unwrap().len(), 1, "round {round}");
            // Small ones bypass the pool.
            let small = evaluations(4, &alloc);
            assert_eq!(pool.live.lock().unwrap().len(), 1);
            drop(small);
            let std = into_std_vec(v);
            assert_eq!(std.len(), n);
            assert!(std.iter().all(|x| *x == Fr::ONE));
            assert!(
                pool.live.lock().unwrap().is_empty(),
                "copied out, block returned"
            );
        }
        assert_eq!(*pool.made.lock().unwrap(), 1, "one block, reused");
        // Growing past the reservation moves the values to a new block, keeping them.
        let mut v = evaluations(n, &alloc);
        v.extend((0..n).map(|i| Fr::from(i as u64)));
        v.extend((0..n).map(|i| Fr::from((n + i) as u64)));
        assert!(v.iter().enumerate().all(|(i, x)| *x == Fr::from(i as u64)));
        drop(v);
        assert!(pool.live.lock().unwrap().is_empty());
        for (p, l) in pool.idle.lock().unwrap().drain(..) {
            // SAFETY: heap blocks of this layout, no longer used.
            unsafe { Global.deallocate(p, l) };
        }
    }

    #[test]
    fn heap_evaluations_round_trip_without_a_copy() {
        let values: Vec<Fr> = (0..1000u64).map(Fr::from).collect();
        let ptr = values.as_ptr();
        let e = heap_evaluations(values);
        assert_eq!(e.as_ptr(), ptr);
        let back = into_std_vec(e);
        assert_eq!(back.as_ptr(), ptr);
        assert_eq!(back[999], Fr::from(999u64));
    }
}
