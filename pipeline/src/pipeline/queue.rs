//! Partitions waiting for a synthesis worker, highest job priority first, then oldest job,
//! then lowest partition index. Workers block here; closing wakes them all.

use std::cmp::Ordering;
use std::collections::BinaryHeap;
use std::sync::Arc;

use parking_lot::{Condvar, Mutex};

use super::job::Job;

pub(crate) struct Task {
    pub job: Arc<Job>,
    pub partition: u32,
}

impl Task {
    fn key(&self) -> (i32, std::cmp::Reverse<u64>, std::cmp::Reverse<u32>) {
        (
            self.job.priority,
            std::cmp::Reverse(self.job.seq),
            std::cmp::Reverse(self.partition),
        )
    }
}

impl PartialEq for Task {
    fn eq(&self, other: &Self) -> bool {
        self.key() == other.key()
    }
}
impl Eq for Task {}
impl PartialOrd for Task {
    fn partial_cmp(&self, other: &Self) -> Option<Ordering> {
        Some(self.cmp(other))
    }
}
impl Ord for Task {
    fn cmp(&self, other: &Self) -> Ordering {
        self.key().cmp(&other.key())
    }
}

#[derive(Default)]
struct State {
    heap: BinaryHeap<Task>,
    closed: bool,
}

#[derive(Default)]
pub(crate) struct WorkQueue {
    state: Mutex<State>,
    ready: Condvar,
}

impl WorkQueue {
    /// Adds tasks; false if the queue is closed.
    pub fn push_all(&self, tasks: impl IntoIterator<Item = Task>) -> bool {
        let mut s = self.state.lock();
        if s.closed {
            return false;
        }
        s.heap.extend(tasks);
        self.ready.notify_all();
        true
    }

    /// The next task of a job still live, blocking while none; `None` once closed and empty.
    pub fn pop(&self) -> Option<Task> {
        let mut s = self.state.lock();
        loop {
            while let Some(task) = s.heap.pop() {
                if task.job.is_live() {
                    return Some(task);
                }
            }
            if s.closed {
                return None;
            }
            self.ready.wait(&mut s);
        }
    }

    pub fn len(&self) -> usize {
        self.state.lock().heap.len()
    }

    /// Drops the tasks of jobs that are no longer live (cancelled or failed).
    pub fn purge_dead(&self) {
        self.state.lock().heap.retain(|t| t.job.is_live());
    }

    /// No more tasks will come: workers drain what is left, then stop.
    pub fn close(&self) {
        self.state.lock().closed = true;
        self.ready.notify_all();
    }
}
