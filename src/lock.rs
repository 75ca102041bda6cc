//! Locks a panic elsewhere does not break.
//!
//! A `std::sync::Mutex` held by a thread that panics (in a caller's tracing
//! layer, say) is poisoned, and `lock().unwrap()` would then panic in every
//! send after it. Each value the crate keeps under a lock (a hold, a latch,
//! a histogram, a connection, a token, a body) is written whole under it, so
//! the value a poisoned lock holds is the last one written, and it is used:
//! one panic does not become a panic in every send after.

use std::sync::{Mutex, MutexGuard, PoisonError};

/// A `Mutex` taken whether or not a panic poisoned it.
pub(crate) trait Unpoisoned<T: ?Sized> {
    /// The guard, poisoned or not.
    fn lock_unpoisoned(&self) -> MutexGuard<'_, T>;

    /// The value, through the only reference there is, poisoned or not.
    fn get_mut_unpoisoned(&mut self) -> &mut T;
}

impl<T: ?Sized> Unpoisoned<T> for Mutex<T> {
    fn lock_unpoisoned(&self) -> MutexGuard<'_, T> {
        self.lock().unwrap_or_else(PoisonError::into_inner)
    }

    fn get_mut_unpoisoned(&mut self) -> &mut T {
        self.get_mut().unwrap_or_else(PoisonError::into_inner)
    }
}

#[cfg(test)]
mod tests {
    use std::panic::{AssertUnwindSafe, catch_unwind};

    use super::*;

    #[test]
    fn a_lock_poisoned_by_a_panic_is_still_read_and_written() {
        let mut lock = Mutex::new(1);
        let panicked = catch_unwind(AssertUnwindSafe(|| {
            let mut guard = lock.lock().expect("not poisoned yet");
            *guard = 2;
            panic!("a panic while the lock is held");
        }));
        assert!(panicked.is_err());
        assert!(lock.is_poisoned());
        assert_eq!(*lock.lock_unpoisoned(), 2);
        *lock.lock_unpoisoned() = 3;
        assert_eq!(*lock.get_mut_unpoisoned(), 3);
        *lock.get_mut_unpoisoned() = 4;
        assert_eq!(*lock.lock_unpoisoned(), 4);
    }
}
