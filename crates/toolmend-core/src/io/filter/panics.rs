//! An input that makes its job panic (a bug in toolmend) gets an `internal_error` record, and
//! the run goes on with the next input: one input, one record, even then. Without this, one
//! such line of a million would end the whole run (a panicking worker thread takes the process
//! down with it) and every input after it would get nothing.

use std::io;

use super::{Item, Job, Output};
use crate::io::input::RawInput;
use crate::io::kept::contained;
use crate::io::record::{Origin, Record};

/// Runs `job` on `item`, writing to `buf`. When the job panics, what it wrote to `buf` for the
/// item is taken back, `job` is replaced by a fresh one (the old one may have been left half-way
/// through anything), and the item gets its error record where the job writes error records:
/// on `out` with records, else on `err`.
///
/// # Errors
/// Only those of the item's `direct` writer (as [`Job::one`]).
pub(super) fn one_contained(
    job: &mut Box<dyn Job>,
    item: Item<'_>,
    buf: &mut Output,
) -> io::Result<Option<bool>> {
    let (line, file) = (item.line, item.file);
    let original = match &item.raw {
        RawInput::Bytes(bytes) => *bytes,
        RawInput::TooLarge { head, .. } => *head,
    };
    let kept = (buf.out.len(), buf.err.len());
    let error = match contained(original, || job.one(item, buf)) {
        Ok(done) => return done,
        Err(error) => error,
    };
    buf.out.truncate(kept.0);
    buf.err.truncate(kept.1);
    let records = job.records();
    *job = job.fresh();
    let origin = Origin {
        line,
        file,
        id: None,
    };
    let sink = if records { &mut buf.out } else { &mut buf.err };
    Record::error(&origin, &error, original).write(sink);
    Ok(Some(false))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::io::filter::{Filter, Reading};
    use crate::io::input::Framing;

    /// A job that numbers the inputs it has seen (so a fresh job shows), and panics on the
    /// input `boom` after writing part of its output.
    struct Boom {
        records: bool,
        seen: u64,
    }

    impl Job for Boom {
        fn one(&mut self, item: Item<'_>, buf: &mut Output) -> io::Result<Option<bool>> {
            self.seen += 1;
            let RawInput::Bytes(bytes) = item.raw else {
                return Ok(Some(false));
            };
            buf.out.extend_from_slice(b"half a rec");
            buf.err.extend_from_slice(b"half an err");
            assert!(bytes != b"boom", "boom at line {}", item.line);
            buf.out.truncate(buf.out.len() - 10);
            buf.err.truncate(buf.err.len() - 11);
            buf.out
                .extend_from_slice(format!("{} seen {}\n", item.line, self.seen).as_bytes());
            Ok(Some(true))
        }

        fn fresh(&self) -> Box<dyn Job> {
            Box::new(Boom {
                records: self.records,
                seen: 0,
            })
        }

        fn records(&self) -> bool {
            self.records
        }
    }

    fn run(input: &str, threads: usize, records: bool) -> (String, String, (u64, u64)) {
        let reading = Reading {
            framing: Framing::Lines,
            max_bytes: 1 << 20,
            line_buffered: false,
            threads,
        };
        let mut filter = Filter::with_job(reading, Box::new(Boom { records, seen: 0 }));
        let (mut out, mut err) = (Vec::new(), Vec::new());
        let summary = filter
            .run(input.as_bytes(), None, &mut out, &mut err)
            .unwrap();
        let text = |b: Vec<u8>| String::from_utf8(b).unwrap();
        (text(out), text(err), (summary.inputs, summary.failed))
    }

    #[test]
    fn an_input_that_panics_gets_its_record_and_the_run_goes_on() {
        let (out, err, counts) = run("a\nboom\nb\n", 1, false);
        assert_eq!(counts, (3, 1));
        // The job after the panic is a fresh one: it has seen one input at line 3.
        assert_eq!(out, "1 seen 1\n3 seen 1\n");
        assert!(
            err.starts_with(
                "{\"ok\":false,\"line\":2,\"error\":{\"code\":\"internal_error\",\"message\":\
                 \"toolmend failed on this input, a bug in toolmend (please report it with \
                 this input): boom at line 2\""
            ),
            "{err}"
        );
        assert!(err.ends_with(",\"original\":\"boom\"}}\n"), "{err}");
        assert!(!err.contains("half"), "{err}");

        let (out, err, counts) = run("boom\na\n", 1, true);
        assert_eq!(counts, (2, 1));
        assert!(err.is_empty());
        let lines: Vec<&str> = out.lines().collect();
        assert!(
            lines[0].starts_with("{\"ok\":false,\"line\":1,\"error\":{\"code\":\"internal_error\"")
        );
        assert_eq!(lines[1..], ["2 seen 1"]);
    }

    /// On worker threads too: every input gets its line, in order, and a panic in one batch
    /// does not end the others.
    #[test]
    fn panics_on_worker_threads_give_records_in_order() {
        let input: String = (0..30_000)
            .map(|i| {
                if i % 997 == 5 {
                    "boom\n".to_owned()
                } else {
                    format!("{i}\n")
                }
            })
            .collect();
        let booms = (0..30_000).filter(|i| i % 997 == 5).count() as u64;
        for threads in [2, 3] {
            let (out, err, counts) = run(&input, threads, true);
            assert_eq!(counts, (30_000, booms), "threads {threads}");
            assert!(err.is_empty());
            let lines: Vec<&str> = out.lines().collect();
            assert_eq!(lines.len(), 30_000);
            for (i, line) in lines.iter().enumerate() {
                let ok = format!("{} seen ", i + 1);
                let failed = format!(
                    "{{\"ok\":false,\"line\":{},\"error\":{{\"code\":\"internal_error\"",
                    i + 1
                );
                let expected = if i % 997 == 5 { &failed } else { &ok };
                assert!(
                    line.starts_with(expected.as_str()),
                    "line {}: {line}",
                    i + 1
                );
            }
        }
    }
}
