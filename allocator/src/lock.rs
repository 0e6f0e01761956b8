//! Mutual exclusion for the allocator state, costing nothing where there is only one thread.
//!
//! Gear programs are single-threaded Wasm (no `atomics` target feature), so there the lock is
//! a no-op and adds no gas. On the host, tests may share a heap across threads, so it spins.

#[cfg(not(all(target_family = "wasm", not(target_feature = "atomics"))))]
use core::sync::atomic::{AtomicBool, Ordering};

/// A lock that protects nothing by itself; [`Lock::lock`] returns a guard held for the
/// duration of one allocator call.
pub struct Lock {
    #[cfg(not(all(target_family = "wasm", not(target_feature = "atomics"))))]
    held: AtomicBool,
}

/// Releases the lock when dropped.
pub struct Guard<'a> {
    #[cfg(not(all(target_family = "wasm", not(target_feature = "atomics"))))]
    lock: &'a Lock,
    #[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
    _lock: core::marker::PhantomData<&'a Lock>,
}

impl Lock {
    /// An unlocked lock.
    pub const fn new() -> Self {
        Lock {
            #[cfg(not(all(target_family = "wasm", not(target_feature = "atomics"))))]
            held: AtomicBool::new(false),
        }
    }

    /// Waits for the lock and holds it until the guard drops.
    #[inline(always)]
    pub fn lock(&self) -> Guard<'_> {
        #[cfg(not(all(target_family = "wasm", not(target_feature = "atomics"))))]
        {
            while self
                .held
                .compare_exchange_weak(false, true, Ordering::Acquire, Ordering::Relaxed)
                .is_err()
            {
                core::hint::spin_loop();
            }
            Guard { lock: self }
        }
        #[cfg(all(target_family = "wasm", not(target_feature = "atomics")))]
        {
            Guard {
                _lock: core::marker::PhantomData,
            }
        }
    }
}

impl Drop for Guard<'_> {
    #[inline(always)]
    fn drop(&mut self) {
        #[cfg(not(all(target_family = "wasm", not(target_feature = "atomics"))))]
        self.lock.held.store(false, Ordering::Release);
    }
}

/// A value only reached under a [`Lock`]: the state of an allocator behind `&self`.
pub struct Locked<T> {
    lock: Lock,
    value: core::cell::UnsafeCell<T>,
}

// SAFETY: every access to `value` happens under `lock` (a real lock wherever threads exist).
unsafe impl<T: Send> Sync for Locked<T> {}

impl<T> Locked<T> {
    /// `value`, unlocked.
    pub const fn new(value: T) -> Self {
        Locked {
            lock: Lock::new(),
            value: core::cell::UnsafeCell::new(value),
        }
    }

    /// Runs `f` with the only live reference to the value.
    #[inline(always)]
    pub fn with<R>(&self, f: impl FnOnce(&mut T) -> R) -> R {
        let _guard = self.lock();
        // SAFETY: the lock makes this the only live reference to the value.
        f(unsafe { &mut *self.value.get() })
    }

    #[inline(always)]
    fn lock(&self) -> Guard<'_> {
        self.lock.lock()
    }
}
