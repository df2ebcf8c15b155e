//! The `args` and `repair` commands as a stream filter: inputs in, one record (or value) out
//! per input, in order.

use std::io::{self, BufRead, Write};

use crate::error::{Code, Error};
use crate::input::{Framing, InputReader, RawInput, decode_input};
use crate::mend::{Mender, Options};
use crate::record::{Origin, write_error, write_ok};

/// Settings of the filter.
#[derive(Debug, Clone)]
pub struct FilterOptions {
    /// The pipeline's settings.
    pub mend: Options,
    /// How the stream is cut into inputs.
    pub framing: Framing,
    /// Write one record per input on stdout (else values on stdout, error records on stderr).
    pub records: bool,
    /// Flush after every record, for a program that writes a line and waits for its answer.
    pub line_buffered: bool,
    /// Inputs longer than this fail with `too_large`.
    pub max_bytes: usize,
}

impl Default for FilterOptions {
    fn default() -> FilterOptions {
        FilterOptions {
            mend: Options::default(),
            framing: Framing::Lines,
            records: false,
            line_buffered: false,
            max_bytes: 64 << 20,
        }
    }
}

/// Counts of what a run saw.
#[derive(Debug, Clone, Copy, Default, PartialEq, Eq)]
pub struct Summary {
    /// Inputs read.
    pub inputs: u64,
    /// Inputs that failed.
    pub failed: u64,
}

/// Output is handed to the writer in blocks of about this size (unless line-buffered).
const BLOCK: usize = 64 << 10;

/// Mends every input of a stream and writes the results.
///
/// ```
/// use toolmend::{Filter, FilterOptions};
///
/// let mut filter = Filter::new(FilterOptions { records: true, ..FilterOptions::default() });
/// let (mut out, mut err) = (Vec::new(), Vec::new());
/// let input = "{\"a\":1}\n\"{\\\"b\\\":2}\"\n[]\n";
/// let summary = filter.run(input.as_bytes(), None, &mut out, &mut err).unwrap();
/// assert_eq!((summary.inputs, summary.failed), (3, 1));
/// let out = String::from_utf8(out).unwrap();
/// assert!(out.lines().nth(1).unwrap().contains(r#""value":{"b":2}"#));
/// assert!(out.lines().nth(2).unwrap().contains(r#""code":"not_an_object""#));
/// ```
pub struct Filter {
    options: FilterOptions,
    mender: Mender,
    out: Vec<u8>,
    err: Vec<u8>,
}

impl Filter {
    /// A filter with these settings.
    pub fn new(options: FilterOptions) -> Filter {
        Filter {
            mender: Mender::new(options.mend.clone()),
            options,
            out: Vec::with_capacity(BLOCK + 4096),
            err: Vec::new(),
        }
    }

    /// Reads `reader` to its end, writing values or records to `out` and (without records)
    /// error records to `err`. `file` names the stream in records, when several are read.
    ///
    /// # Errors
    /// Only I/O errors: reading the stream or writing the output. A broken pipe is one of
    /// them, for the caller to treat as a quiet end.
    pub fn run<R: BufRead, W: Write, E: Write>(
        &mut self,
        reader: R,
        file: Option<&str>,
        out: &mut W,
        err: &mut E,
    ) -> io::Result<Summary> {
        let mut summary = Summary::default();
        let mut inputs = InputReader::new(reader, self.options.framing, self.options.max_bytes);
        while let Some((line, raw)) = inputs.next_input()? {
            summary.inputs += 1;
            let ok = self.one(line, file, raw);
            if !ok {
                summary.failed += 1;
                if !self.err.is_empty() {
                    // Error records on stderr go out at once, in step with the values.
                    out.write_all(&self.out)?;
                    self.out.clear();
                    out.flush()?;
                    err.write_all(&self.err)?;
                    self.err.clear();
                    err.flush()?;
                }
            }
            if self.options.line_buffered || self.out.len() >= BLOCK {
                out.write_all(&self.out)?;
                self.out.clear();
                if self.options.line_buffered {
                    out.flush()?;
                }
            }
        }
        out.write_all(&self.out)?;
        self.out.clear();
        out.flush()?;
        Ok(summary)
    }

    /// Mends one input and writes its result; returns whether it succeeded.
    fn one(&mut self, line: u64, file: Option<&str>, raw: RawInput<'_>) -> bool {
        let mut origin = Origin {
            line,
            file,
            id: None,
        };
        let sink = if self.options.records {
            &mut self.out
        } else {
            &mut self.err
        };
        let bytes = match raw {
            RawInput::TooLarge { head, len } => {
                let error = Error::whole(
                    Code::TooLarge,
                    format!(
                        "input is {len} bytes, more than --max-bytes {}",
                        self.options.max_bytes
                    ),
                );
                write_error(sink, &origin, &error, head);
                return false;
            }
            RawInput::Bytes(bytes) => bytes,
        };
        let decoded = match decode_input(bytes, self.options.framing) {
            Ok(decoded) => decoded,
            Err(error) => {
                write_error(sink, &origin, &error, bytes);
                return false;
            }
        };
        origin.id = decoded.id;
        match self.mender.mend(&decoded.text) {
            Ok(mended) => {
                if self.options.records {
                    write_ok(&mut self.out, &origin, &mended);
                } else {
                    mended.write_value(&mut self.out);
                    self.out.push(b'\n');
                }
                true
            }
            Err(error) => {
                write_error(sink, &origin, &error, decoded.text.as_bytes());
                false
            }
        }
    }
}
