//! The stream's heap while it reads a reply of many calls, counted by a counting allocator:
//! what it holds of calls already read is small beside the reply. The values read inside
//! arguments written as a JSON string (`"arguments": "{\"path\": …}"`, OpenAI-style) were kept
//! per call until the stream was dropped (bench: the `encoded` reply streamed a byte at a time
//! peaked at 1.45x one-shot's RSS; 1.17x once they went when their arguments closed).
// The counting allocator implements `GlobalAlloc`, an unsafe trait over the system allocator.
#![allow(unsafe_code)]

use std::alloc::{GlobalAlloc, Layout, System};
use std::sync::atomic::{AtomicUsize, Ordering};

use toolmend_core::calls::{CallOptions, Stream};

/// Bytes allocated and not freed, and the most there were since the last reset.
static LIVE: AtomicUsize = AtomicUsize::new(0);
static PEAK: AtomicUsize = AtomicUsize::new(0);

struct Counting;

// SAFETY: every call is passed to the system allocator as it came; only counters change.
unsafe impl GlobalAlloc for Counting {
    unsafe fn alloc(&self, layout: Layout) -> *mut u8 {
        let live = LIVE.fetch_add(layout.size(), Ordering::Relaxed) + layout.size();
        PEAK.fetch_max(live, Ordering::Relaxed);
        unsafe { System.alloc(layout) }
    }
    unsafe fn dealloc(&self, ptr: *mut u8, layout: Layout) {
        LIVE.fetch_sub(layout.size(), Ordering::Relaxed);
        unsafe { System.dealloc(ptr, layout) }
    }
    unsafe fn realloc(&self, ptr: *mut u8, layout: Layout, new_size: usize) -> *mut u8 {
        if new_size >= layout.size() {
            let live = LIVE.fetch_add(new_size - layout.size(), Ordering::Relaxed) + new_size
                - layout.size();
            PEAK.fetch_max(live, Ordering::Relaxed);
        } else {
            LIVE.fetch_sub(layout.size() - new_size, Ordering::Relaxed);
        }
        unsafe { System.realloc(ptr, layout, new_size) }
    }
}

#[global_allocator]
static ALLOCATOR: Counting = Counting;

/// `n` calls in Hermes tags whose arguments are a JSON string holding an object.
fn encoded_calls(n: usize) -> String {
    (0..n)
        .map(|i| {
            let arguments = serde_json::json!({
                "path": format!("notes/day-{i}.txt"),
                "lines": [i, i + 1, i + 2],
                "options": {"mode": "append", "create": true, "note": "a few words of text"},
            })
            .to_string();
            format!(
                "<tool_call>{}</tool_call>\n",
                serde_json::json!({"name": "write", "arguments": arguments})
            )
        })
        .collect()
}

#[test]
fn a_stream_of_many_encoded_calls_holds_little_beside_the_reply() {
    let reply = encoded_calls(2_000);
    let mut stream = Stream::new(CallOptions::default());
    let mut events = Vec::new();
    let before = LIVE.load(Ordering::Relaxed);
    PEAK.store(before, Ordering::Relaxed);
    // A few bytes at a time, as a server streams it; the events are dropped as they come.
    for chunk in reply.as_bytes().chunks(3) {
        stream.feed_into(std::str::from_utf8(chunk).unwrap(), &mut events);
        events.clear();
    }
    let held = PEAK.load(Ordering::Relaxed) - before;
    eprintln!(
        "reply {} bytes, peak held while reading {held} bytes ({:.2} a byte)",
        reply.len(),
        held as f64 / reply.len() as f64
    );
    // The stream keeps the reply (its buffer grows by doubling: up to 2x of it) and a slot of
    // a few hundred bytes per call: 3.5 bytes a byte of this reply. With the values of every
    // call's arguments kept, it was 13.
    assert!(
        held < 5 * reply.len(),
        "the stream held {held} bytes reading a reply of {} bytes",
        reply.len()
    );
    assert!(!stream.finish().is_empty());
}
