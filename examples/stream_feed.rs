//! Feeds a reply to `toolmend_core::calls::Stream` in chunks of a fixed size and times it against
//! `extract` on the whole reply (the `stream` series of `make bench`).
//!
//! ```text
//! cargo run --release --example stream_feed -- REPLY_FILE CHUNK_BYTES [ROUNDS [oneshot|stream]]
//! ```
//!
//! Prints one JSON object: the reply's size, the chunk size, the fastest and the median
//! seconds of one-shot `extract` with its record written (what `calls` does) and of the stream
//! (every event serialized, as `calls --stream` writes them through a 64 KiB buffer to
//! stdout, here counted and dropped), their ratio (of the fastest
//! runs: on a shared machine the others mostly measure the other processes), the same for
//! the thread's CPU time (`cpu_ratio`: what the other processes of a loaded machine add to
//! least), the CPU time of the stream's `finish` alone (the results and `end`, from `calls` on
//! the whole reply: the fastest round's), the CPU time of the first round of each and their ratio
//! (`first_cpu_ratio`: a process reads one reply), the minor page faults of the median round of
//! each (and of the stream's `finish`: a round that touches memory the allocator gave back to
//! the system at the end of the one before pays a fault per page), and the number and total
//! size of the events. With `oneshot` or `stream` only that one runs (for its peak memory). With `floor`, one-shot and, in place of the stream, a loop that only writes one
//! minimal event line (`{"event":"text","delta":"x"}`) per chunk the same way (`floor_*`,
//! `floor_cpu_ratio`): what any stream that writes an event per chunk costs at least.
//!
//! With more than one round, rounds keep the heap they grew (glibc told to return no memory to
//! the system and to map nothing apart, `keeps_heap` true in the output; one round, as for peak
//! memory, keeps glibc's defaults): else whether a round pays a page fault per
//! page it touches depends on how much the round before happened to grow, not on its work (one
//! build's one-shot faulted 0 times a round and the next, which built less, 4,927 times). The
//! first round of each, in a heap grown by nothing before it, is what a process that reads one
//! reply pays (`first_cpu_ratio`).
// The thread CPU clock is read through libc.
#![allow(unsafe_code)]

use std::io::Write;
use std::time::Instant;

/// Where the stream's events go: counted and dropped, after a 64 KiB buffer, as
/// `calls --stream` writes them to stdout through one.
struct Counted(usize);

impl Write for Counted {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.0 += bytes.len();
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        Ok(())
    }
}

/// This thread's CPU time in seconds (what a loaded machine's other processes do not add to).
fn cpu() -> f64 {
    let mut t = libc::timespec {
        tv_sec: 0,
        tv_nsec: 0,
    };
    // SAFETY: `t` is a valid timespec for the call to fill.
    unsafe { libc::clock_gettime(libc::CLOCK_THREAD_CPUTIME_ID, &mut t) };
    t.tv_sec as f64 + t.tv_nsec as f64 * 1e-9
}

/// This thread's minor page faults so far (a round that grows memory the allocator gave back
/// to the system at the end of the last one pays one per page it touches).
fn faults() -> i64 {
    // SAFETY: an all-zero `rusage` is valid for the call to fill.
    let mut usage: libc::rusage = unsafe { std::mem::zeroed() };
    // SAFETY: `usage` is a valid rusage for the call to fill.
    unsafe { libc::getrusage(libc::RUSAGE_THREAD, &mut usage) };
    usage.ru_minflt
}

use toolmend_core::calls::{CallOptions, Event, EventWriter, Shape, extract};

/// Tells glibc to keep the memory it is given back and to put large blocks in the heap too;
/// whether it took both.
fn keep_heap() -> bool {
    // SAFETY: mallopt only sets the allocator's parameters, before anything here allocates much.
    unsafe {
        libc::mallopt(libc::M_TRIM_THRESHOLD, i32::MAX) == 1
            && libc::mallopt(libc::M_MMAP_THRESHOLD, 32 << 20) == 1
    }
}

/// One round of one-shot `calls` on the whole reply: extracted, then written as its record;
/// how many calls it found and the size of its record as an `end` event line. Apart (never inlined) so that `make bench` counts its instructions
/// alone (callgrind's `--toggle-collect`).
#[inline(never)]
fn oneshot_round(reply: &str, options: &CallOptions) -> (usize, usize) {
    let found = extract(reply, options);
    let calls = match &found {
        Ok(f) => f.calls.len(),
        Err(f) => f.extracted.as_ref().map_or(0, |x| x.calls.len()),
    };
    let record = Event::End {
        result: Box::new(found),
        original: String::new(),
    };
    let mut sink = Vec::new();
    serde_json::to_writer(&mut sink, &record).expect("in memory");
    (calls, sink.len() + 1)
}

/// What one stream round did.
struct StreamRound {
    events: usize,
    event_bytes: usize,
    finish_cpu: f64,
    finish_faults: i64,
}

/// One round of the stream: what `calls --stream` does (`EventWriter`), the events of each
/// chunk written as JSON lines through a 64 KiB buffer, flushed after each chunk that gave
/// any, then finished. Apart, as [`oneshot_round`].
#[inline(never)]
fn stream_round(cuts: &[&str], options: &CallOptions) -> StreamRound {
    let mut writer = EventWriter::new(options.clone(), None, Shape::Native, usize::MAX, Counted(0));
    // The chunks were cut before the clock started; each is given as bytes, as `calls
    // --stream` gives what it reads (`write_bytes` checks them for UTF-8 itself).
    for &piece in cuts {
        writer.write_bytes(piece.as_bytes()).expect("in memory");
    }
    let (finish_start, finish_start_faults) = (cpu(), faults());
    writer.finish().expect("in memory");
    StreamRound {
        finish_cpu: cpu() - finish_start,
        finish_faults: faults() - finish_start_faults,
        events: writer.events_written() as usize,
        event_bytes: writer.get_ref().0,
    }
}

/// What any stream that writes an event per chunk costs at least: one minimal event line
/// per chunk, written as [`stream_round`] writes its events (a 64 KiB buffer, flushed after
/// each chunk). Its events and their bytes. Apart, as [`oneshot_round`].
#[inline(never)]
fn floor_round(cuts: &[&str]) -> (usize, usize) {
    let mut out = std::io::BufWriter::with_capacity(64 << 10, Counted(0));
    for _ in cuts {
        out.write_all(b"{\"event\":\"text\",\"delta\":\"x\"}\n")
            .expect("in memory");
        out.flush().expect("in memory");
    }
    (cuts.len(), out.get_ref().0)
}

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(chunk)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: stream_feed REPLY_FILE CHUNK_BYTES [ROUNDS]");
        std::process::exit(2);
    };
    let reply = std::fs::read_to_string(path).expect("a UTF-8 reply file");
    let chunk: usize = chunk.parse().expect("a chunk size");
    let rounds: usize = args.get(3).map_or(3, |r| r.parse().expect("rounds"));
    // One round (as for peak memory) has no round before it, and keeps glibc's own ways.
    let keeps_heap = rounds > 1 && keep_heap();
    let only = args.get(4).map(String::as_str);
    let floor = only == Some("floor");
    let (run_oneshot, run_stream) = (only != Some("stream"), only != Some("oneshot") && !floor);
    let options = CallOptions::default();

    let mut oneshot = Vec::new();
    let mut oneshot_cpu = Vec::new();
    let mut oneshot_faults = Vec::new();
    let (mut calls, mut end_bytes) = (0, 0);
    for _ in 0..if run_oneshot { rounds } else { 0 } {
        let (start, start_cpu, start_faults) = (Instant::now(), cpu(), faults());
        (calls, end_bytes) = oneshot_round(&reply, &options);
        oneshot.push(start.elapsed().as_secs_f64());
        oneshot_cpu.push(cpu() - start_cpu);
        oneshot_faults.push(faults() - start_faults);
    }

    // Chunks end at character boundaries, as text read from a pipe would be fed.
    let mut cuts = Vec::new();
    let mut at = 0;
    while at < reply.len() {
        let mut end = (at + chunk.max(1)).min(reply.len());
        while !reply.is_char_boundary(end) {
            end += 1;
        }
        cuts.push(&reply[at..end]);
        at = end;
    }
    let mut streamed = Vec::new();
    let mut streamed_cpu = Vec::new();
    let mut finish_cpu = Vec::new();
    let (mut stream_faults, mut finish_faults) = (Vec::new(), Vec::new());
    let (mut events, mut event_bytes) = (0usize, 0usize);
    for _ in 0..if run_stream { rounds } else { 0 } {
        let (start, start_cpu, start_faults) = (Instant::now(), cpu(), faults());
        let round = stream_round(&cuts, &options);
        finish_cpu.push(round.finish_cpu);
        finish_faults.push(round.finish_faults);
        stream_faults.push(faults() - start_faults);
        streamed.push(start.elapsed().as_secs_f64());
        streamed_cpu.push(cpu() - start_cpu);
        (events, event_bytes) = (round.events, round.event_bytes);
    }
    let mut floor_cpu = Vec::new();
    for _ in 0..if floor { rounds } else { 0 } {
        let start_cpu = cpu();
        (events, event_bytes) = floor_round(&cuts);
        floor_cpu.push(cpu() - start_cpu);
    }
    // The first round's CPU (what a process that reads one reply pays: `calls --stream` reads
    // one; later rounds reuse, or grow again, memory the allocator kept or gave back).
    let (oneshot_first, stream_first) =
        (oneshot_cpu.first().copied(), streamed_cpu.first().copied());
    // (fastest, median), or nulls for what did not run.
    let stats = |v: &mut Vec<f64>| -> (Option<f64>, Option<f64>) {
        v.sort_by(f64::total_cmp);
        (v.first().copied(), v.get(v.len() / 2).copied())
    };
    let ((o_min, o_med), (s_min, s_med)) = (stats(&mut oneshot), stats(&mut streamed));
    let ratio = o_min.zip(s_min).map(|(o, s)| s / o);
    let ((oc_min, _), (sc_min, _)) = (stats(&mut oneshot_cpu), stats(&mut streamed_cpu));
    let cpu_ratio = oc_min.zip(sc_min).map(|(o, s)| s / o);
    let (floor_min, _) = stats(&mut floor_cpu);
    let (finish_min, _) = stats(&mut finish_cpu);
    let floor_ratio = oc_min.zip(floor_min).map(|(o, f)| f / o);
    // The page faults of the median round: on this allocator a round's CPU goes with them.
    let median = |v: &mut Vec<i64>| {
        v.sort_unstable();
        v.get(v.len() / 2).copied()
    };
    let (oneshot_faults, stream_faults, finish_faults) = (
        median(&mut oneshot_faults),
        median(&mut stream_faults),
        median(&mut finish_faults),
    );
    println!(
        "{}",
        serde_json::json!({
            "bytes": reply.len(), "chunk": chunk, "calls": calls, "rounds": rounds,
            "keeps_heap": keeps_heap,
            "oneshot_min_s": o_min, "oneshot_median_s": o_med,
            "stream_min_s": s_min, "stream_median_s": s_med, "ratio": ratio,
            "oneshot_cpu_min_s": oc_min, "stream_cpu_min_s": sc_min, "cpu_ratio": cpu_ratio,
            "stream_finish_cpu_min_s": finish_min,
            "oneshot_cpu_first_s": oneshot_first, "stream_cpu_first_s": stream_first,
            "first_cpu_ratio": oneshot_first.zip(stream_first).map(|(o, s)| s / o),
            "oneshot_faults_median": oneshot_faults, "stream_faults_median": stream_faults,
            "stream_finish_faults_median": finish_faults,
            "events": events, "event_bytes": event_bytes,
            // The `end` event's line: the record `calls --records` gives (the one-shot's).
            "end_bytes": (run_oneshot && run_stream).then_some(end_bytes),
            "floor_cpu_min_s": floor_min, "floor_cpu_ratio": floor_ratio,
        })
    );
}
