//! A counting global allocator for the memory benchmarks: the heap bytes live now
//! ([`LIVE`]) and the most live at once ([`PEAK`]; store [`LIVE`] into it to start a
//! measurement). Bytes requested, not allocator overhead or RSS. A benchmark takes it with
//! `#[path = "common/counting.rs"] mod counting;` (not through `common`: only the memory
//! benchmarks want their allocations counted).

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

/// Counts live and peak heap bytes.
struct Counting;

/// The heap bytes live now.
pub static LIVE: AtomicUsize = AtomicUsize::new(0);
/// The most heap bytes live at once since it was last set.
pub static PEAK: AtomicUsize = AtomicUsize::new(0);

fn added(size: usize) {
    let now = LIVE.fetch_add(size, Ordering::Relaxed) + size;
    PEAK.fetch_max(now, Ordering::Relaxed);
}

unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc(layout);
        if !p.is_null() {
            added(layout.size());
        }
        p
    }
    unsafe fn alloc_zeroed(&self, layout: Layout) -> *mut u8 {
        let p = System.alloc_zeroed(layout);
        if !p.is_null() {
            added(layout.size());
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
            LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
            added(new_size);
        }
        p
    }
}

#[global_allocator]
static ALLOC: Counting = Counting;
