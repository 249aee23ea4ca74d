//! The bounded hand-off between synthesis and the GPU stage.
//!
//! A bounded channel whose receive runs a callback under the same lock that removes the item,
//! so the buffer tracker moves a partition from `queued` to `gpu` at the exact moment it
//! leaves the queue. With a general-purpose channel the receiver marks the move a moment
//! later, and in that moment a synthesis worker can already have started its next
//! partition: the counts would briefly show one partition more than exists, and the
//! `partition_workers + channel_capacity` bound could not be checked exactly.

use std::collections::VecDeque;

use parking_lot::{Condvar, Mutex};

struct State<T> {
    items: VecDeque<T>,
    open_senders: usize,
}

pub(crate) struct Handoff<T> {
    state: Mutex<State<T>>,
    capacity: usize,
    not_full: Condvar,
    not_empty: Condvar,
}

impl<T> Handoff<T> {
    /// A hand-off of `capacity` slots fed by `senders` producers (each calls
    /// [`Handoff::close_sender`] when it stops).
    pub fn new(capacity: usize, senders: usize) -> Self {
        assert!(capacity > 0, "a hand-off needs at least one slot");
        Self {
            state: Mutex::new(State {
                items: VecDeque::with_capacity(capacity),
                open_senders: senders,
            }),
            capacity,
            not_full: Condvar::new(),
            not_empty: Condvar::new(),
        }
    }

    /// Blocks while full, then enqueues: the backpressure on synthesis.
    pub fn send(&self, item: T) {
        let mut s = self.state.lock();
        while s.items.len() >= self.capacity {
            self.not_full.wait(&mut s);
        }
        s.items.push_back(item);
        self.not_empty.notify_one();
    }

    /// The next item, with `on_take` run before the lock is released; `None` once every
    /// sender has closed and the queue is empty.
    pub fn recv(&self, on_take: impl FnOnce(&mut T)) -> Option<T> {
        let mut s = self.state.lock();
        loop {
            if let Some(mut item) = s.items.pop_front() {
                on_take(&mut item);
                self.not_full.notify_one();
                return Some(item);
            }
            if s.open_senders == 0 {
                return None;
            }
            self.not_empty.wait(&mut s);
        }
    }

    /// A producer stopped; receivers drain what is left, then see the end.
    pub fn close_sender(&self) {
        let mut s = self.state.lock();
        s.open_senders -= 1;
        if s.open_senders == 0 {
            self.not_empty.notify_all();
        }
    }
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;
    use std::sync::atomic::{AtomicUsize, Ordering};

    use super::*;

    #[test]
    fn delivers_everything_in_order_and_ends_when_senders_close() {
        let h = Arc::new(Handoff::new(2, 1));
        let producer = {
            let h = h.clone();
            std::thread::spawn(move || {
                for i in 0..100 {
                    h.send(i);
                }
                h.close_sender();
            })
        };
        let taken = AtomicUsize::new(0);
        let mut got = Vec::new();
        while let Some(i) = h.recv(|_| {
            taken.fetch_add(1, Ordering::Relaxed);
        }) {
            got.push(i);
        }
        producer.join().unwrap();
        assert_eq!(got, (0..100).collect::<Vec<_>>());
        assert_eq!(taken.load(Ordering::Relaxed), 100);
    }

    #[test]
    fn never_holds_more_than_its_capacity() {
        let h = Arc::new(Handoff::new(3, 4));
        let producers: Vec<_> = (0..4)
            .map(|_| {
                let h = h.clone();
                std::thread::spawn(move || {
                    for i in 0..50 {
                        h.send(i);
                    }
                    h.close_sender();
                })
            })
            .collect();
        let mut n = 0;
        while h.recv(|_| {}).is_some() {
            assert!(h.state.lock().items.len() <= 3);
            n += 1;
        }
        producers.into_iter().for_each(|p| p.join().unwrap());
        assert_eq!(n, 200);
    }
}
