//! Page-locked host memory (`cudaHostAlloc`): the GPU stage's staging buffers for MSM
//! scalars, and the pool of blocks that synthesis writes a/b/c evaluations into, so that
//! their upload is a full-speed DMA.

use std::alloc::Layout;
use std::collections::HashMap;
use std::ffi::c_void;
use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::Mutex;

use super::ffi;
use super::lock::unpoisoned;
use crate::host_memory::HostPool;

/// Page-locked host memory (`cudaHostAlloc`), for scalars on their way to the device.
pub(super) struct Pinned {
    pub(super) ptr: *mut c_void,
    pub(super) bytes: usize,
}

// SAFETY: a staging buffer is used by one thread at a time (taken out of the pool).
unsafe impl Send for Pinned {}

impl Pinned {
    /// The first `len` elements of the buffer as `T`s yet to be written.
    ///
    /// # Safety
    /// The buffer holds at least `len` `T`s (suitably aligned: page-locked allocations are
    /// page-aligned), and no other reference to it is alive.
    // The slice is the page-locked block this handle points to, not memory borrowed from
    // `self`; the safety contract below rules out a second reference to it.
    #[allow(clippy::mut_from_ref)]
    pub(super) unsafe fn uninit<T>(&self, len: usize) -> &mut [MaybeUninit<T>] {
        debug_assert!(len * size_of::<T>() <= self.bytes);
        // SAFETY: as the caller promises.
        unsafe { std::slice::from_raw_parts_mut(self.ptr.cast::<MaybeUninit<T>>(), len) }
    }
}

impl Drop for Pinned {
    fn drop(&mut self) {
        // SAFETY: made by pp_pinned_alloc, freed once.
        unsafe { ffi::pp_pinned_free(self.ptr) }
    }
}

/// Page-locked blocks for a/b/c evaluations, handed to synthesis through
/// [`ProvingBackend::evaluation_alloc`] (see `host_memory`). A block given back is kept for the
/// next partition of the same size, so the pool holds at most as many as were ever alive at
/// once (the partition budget bounds that); a request of another size frees the idle ones.
#[derive(Default)]
pub(super) struct EvalPool {
    pub(super) live: Mutex<HashMap<usize, Pinned>>,
    idle: Mutex<Vec<Pinned>>,
}

/// cudaHostAlloc's blocks are page aligned.
const PINNED_ALIGN: usize = 4096;

impl EvalPool {
    /// Allocates idle blocks of `bytes` until the pool holds `count` of that size (idle or
    /// handed out); idle blocks of other sizes are freed first. Stops, with a warning, when
    /// page-locked memory runs out (synthesis then uses ordinary memory for the rest).
    pub(super) fn reserve(&self, bytes: usize, count: usize) {
        loop {
            {
                let mut idle = unpoisoned(&self.idle);
                idle.retain(|b| b.bytes == bytes);
                let live = unpoisoned(&self.live)
                    .values()
                    .filter(|b| b.bytes == bytes)
                    .count();
                if idle.len() + live >= count {
                    return;
                }
            }
            let mut ptr = std::ptr::null_mut();
            // SAFETY: `ptr` is an out-pointer.
            let e = unsafe { ffi::pp_pinned_alloc(bytes, &mut ptr) };
            if e.code != 0 {
                tracing::warn!(
                    bytes,
                    count,
                    error = %e,
                    "page-locked evaluation blocks not all reserved"
                );
                return;
            }
            unpoisoned(&self.idle).push(Pinned { ptr, bytes });
        }
    }
}

#[cfg(test)]
impl EvalPool {
    /// Idle blocks of `bytes`.
    pub(super) fn idle_blocks(&self, bytes: usize) -> usize {
        unpoisoned(&self.idle)
            .iter()
            .filter(|b| b.bytes == bytes)
            .count()
    }
}

impl HostPool for EvalPool {
    fn allocate(&self, layout: Layout) -> Option<NonNull<u8>> {
        if layout.align() > PINNED_ALIGN {
            return None;
        }
        let reused = {
            let mut idle = unpoisoned(&self.idle);
            match idle.iter().position(|b| b.bytes == layout.size()) {
                Some(i) => Some(idle.swap_remove(i)),
                None => {
                    idle.clear();
                    None
                }
            }
        };
        let block = match reused {
            Some(b) => b,
            None => {
                let mut ptr = std::ptr::null_mut();
                // SAFETY: `ptr` is an out-pointer.
                let e = unsafe { ffi::pp_pinned_alloc(layout.size(), &mut ptr) };
                if e.code != 0 {
                    tracing::warn!(
                        bytes = layout.size(),
                        error = %e,
                        "no page-locked memory for evaluations: using ordinary memory"
                    );
                    return None;
                }
                Pinned {
                    ptr,
                    bytes: layout.size(),
                }
            }
        };
        let ptr = NonNull::new(block.ptr.cast::<u8>())?;
        unpoisoned(&self.live).insert(ptr.as_ptr() as usize, block);
        Some(ptr)
    }

    unsafe fn deallocate(&self, ptr: NonNull<u8>) -> bool {
        let Some(block) = unpoisoned(&self.live).remove(&(ptr.as_ptr() as usize)) else {
            return false;
        };
        unpoisoned(&self.idle).push(block);
        true
    }
}
