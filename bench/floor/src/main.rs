//! The benchmark's floor: for each line of stdin, parse it into a `serde_json::Value`; when the
//! value is a JSON string, parse that string's contents once more; write the value back compact,
//! one per line, on stdout. A line that does not parse gets a short error line on stderr.
//!
//! It does less than `toolmend args` (no repair, no records), so it is the time toolmend is
//! measured against.

use std::io::{self, BufRead, BufWriter, Write};

use serde_json::Value;

fn main() -> io::Result<()> {
    let stdin = io::stdin().lock();
    let mut input = io::BufReader::with_capacity(1 << 16, stdin);
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut err = BufWriter::new(io::stderr().lock());
    let mut line = Vec::new();
    let mut number: u64 = 0;
    loop {
        line.clear();
        if input.read_until(b'\n', &mut line)? == 0 {
            break;
        }
        number += 1;
        let mut text: &[u8] = &line;
        if let Some(rest) = text.strip_suffix(b"\n") {
            text = rest;
        }
        if let Some(rest) = text.strip_suffix(b"\r") {
            text = rest;
        }
        let value = match serde_json::from_slice::<Value>(text) {
            Ok(Value::String(inner)) => serde_json::from_str::<Value>(&inner),
            other => other,
        };
        match value {
            Ok(value) => {
                serde_json::to_writer(&mut out, &value)?;
                out.write_all(b"\n")?;
            }
            Err(e) => writeln!(err, "line {number}: {e}")?,
        }
    }
    out.flush()?;
    err.flush()?;
    Ok(())
}
