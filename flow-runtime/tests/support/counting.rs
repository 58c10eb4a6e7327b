//! A counting global allocator: the bytes live now and the peak since the last reset, so a
//! test asserts a memory bound, not a time. Include it in a test binary with
//! `#[path = "support/counting.rs"] mod counting;` and hold [`measure`]'s guard while measuring
//! (it serialises the binary's measured tests).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Mutex, MutexGuard};

struct Counting;

static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            let now = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
            PEAK.fetch_max(now, Ordering::Relaxed);
        }
        p
    }

    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        System.dealloc(ptr, layout);
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
    }

    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        let p = System.realloc(ptr, layout, new_size);
        if !p.is_null() {
            if new_size >= layout.size() {
                let grow = new_size - layout.size();
                let now = LIVE.fetch_add(grow, Ordering::Relaxed) + grow;
                PEAK.fetch_max(now, Ordering::Relaxed);
            } else {
                LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
            }
        }
        p
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

static SERIAL: Mutex<()> = Mutex::new(());

/// Holds the measuring lock; [`Measure::peak_growth`] is the peak above what was live at the
/// start.
pub struct Measure {
    _serial: MutexGuard<'static, ()>,
    base: usize,
}

/// Starts measuring (one measured test at a time in this binary).
pub fn measure() -> Measure {
    let serial = SERIAL.lock().unwrap_or_else(|e| e.into_inner());
    let base = LIVE.load(Ordering::Relaxed);
    PEAK.store(base, Ordering::Relaxed);
    Measure {
        _serial: serial,
        base,
    }
}

impl Measure {
    /// The highest number of bytes live at once since [`measure`], above the start.
    pub fn peak_growth(&self) -> usize {
        PEAK.load(Ordering::Relaxed).saturating_sub(self.base)
    }

    /// The bytes live now above the start (what a measured call kept).
    #[allow(dead_code)] // not every test binary that includes this asks
    pub fn live_growth(&self) -> usize {
        LIVE.load(Ordering::Relaxed).saturating_sub(self.base)
    }
}
