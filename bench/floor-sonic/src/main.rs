//! The benchmark's SIMD floor: as bench/floor (serde_json), but with sonic-rs, a SIMD JSON
//! parser. For each line of stdin, parse it into a `sonic_rs::Value`; when the value is a JSON
//! string, parse that string's contents once more; write the value back compact, one per line,
//! on stdout. A line that does not parse gets a short error line on stderr.
//!
//! It repairs nothing and keeps no record, so it is the fastest parse-and-write toolmend is
//! measured against.

use std::io::{self, BufRead, BufWriter, Write};

use sonic_rs::{JsonValueTrait, Value};

fn main() -> io::Result<()> {
    let stdin = io::stdin().lock();
    let mut input = io::BufReader::with_capacity(1 << 16, stdin);
    let mut out = BufWriter::with_capacity(1 << 16, io::stdout().lock());
    let mut err = BufWriter::new(io::stderr().lock());
    let mut line = Vec::new();
    let mut number: u64 = 0;
    let mut written: Vec<u8> = Vec::new();
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
        let value = match sonic_rs::from_slice::<Value>(text) {
            Ok(value) => match value.as_str() {
                Some(inner) => sonic_rs::from_str::<Value>(inner),
                None => Ok(value),
            },
            Err(e) => Err(e),
        };
        match value {
            Ok(value) => {
                // sonic-rs writes to its own writer trait (a Vec is one): one buffer, reused.
                written.clear();
                sonic_rs::to_writer(&mut written, &value).map_err(io::Error::other)?;
                written.push(b'\n');
                out.write_all(&written)?;
            }
            // sonic-rs's messages quote the input over several lines: one line per error.
            Err(e) => writeln!(err, "line {number}: {}", e.to_string().replace('\n', " "))?,
        }
    }
    out.flush()?;
    err.flush()?;
    Ok(())
}
