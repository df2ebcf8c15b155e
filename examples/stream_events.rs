//! Writes to stdout the events `calls --stream` writes (`EventWriter`) for a reply fed in
//! chunks whose sizes cycle from 1 to MAX bytes (1, 2, …, MAX, 1, 2, …; cut at character
//! boundaries): to compare two builds' events byte for byte on the same splits.
//!
//! ```text
//! cargo run --release --example stream_events -- REPLY_FILE MAX [bytes|str [STEP]]
//! ```
//!
//! With `bytes` each chunk is given to `EventWriter::write_bytes` (what `calls --stream` reads
//! with), else to `write_str`. `STEP` is the arguments step (`--arguments-step`, 128 unless
//! given).

use std::io::Write;

use toolmend_core::calls::{CallOptions, EventWriter, Shape};

fn main() {
    let args: Vec<String> = std::env::args().collect();
    let (Some(path), Some(max)) = (args.get(1), args.get(2)) else {
        eprintln!("usage: stream_events REPLY_FILE MAX [bytes|str [STEP]]");
        std::process::exit(2);
    };
    let reply = std::fs::read_to_string(path).expect("a UTF-8 reply file");
    let max: usize = max.parse().expect("a chunk size");
    let bytes = args.get(3).is_some_and(|a| a == "bytes");
    let step = args
        .get(4)
        .map_or(toolmend_core::calls::ARGUMENTS_STEP, |s| {
            s.parse().expect("a step in bytes")
        });
    let stdout = std::io::stdout().lock();
    let mut writer = EventWriter::new(
        CallOptions::default(),
        None,
        Shape::Native,
        usize::MAX,
        stdout,
    )
    .with_arguments_step(step);
    let (mut at, mut size) = (0, 0);
    while at < reply.len() {
        size = size % max.max(1) + 1;
        let mut end = (at + size).min(reply.len());
        while !reply.is_char_boundary(end) {
            end += 1;
        }
        if bytes {
            writer.write_bytes(&reply.as_bytes()[at..end])
        } else {
            writer.write_str(&reply[at..end])
        }
        .expect("stdout");
        at = end;
    }
    writer.finish().expect("stdout");
    drop(writer);
    std::io::stdout().flush().expect("stdout");
}
