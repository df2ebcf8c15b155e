//! The job of `args` and `repair`: each input mended, with a schema coerced and checked, and
//! written as a value or a record.

use std::io;

use super::{FilterOptions, Item, Job, Output};
use crate::args::Mender;
use crate::io::input::{RawInput, decode_input, too_large};
use crate::io::record::{Origin, Record, RecordResult, Written};

/// The job of `args` and `repair`: mends each input, and with a schema coerces and checks it.
pub(super) struct Mend {
    options: FilterOptions,
    mender: Mender,
}

impl Mend {
    pub(super) fn new(options: FilterOptions) -> Mend {
        Mend {
            mender: Mender::new(options.mend.clone()),
            options,
        }
    }

    /// Mends one input and writes its result, the value straight to `direct` when there is
    /// one; whether it succeeded.
    fn mend_one(&mut self, item: Item<'_>, buf: &mut Output) -> io::Result<bool> {
        let Item {
            line,
            file,
            raw,
            direct,
        } = item;
        let mut origin = Origin {
            line,
            file,
            id: None,
        };
        let sink = if self.options.records {
            &mut buf.out
        } else {
            &mut buf.err
        };
        let bytes = match raw {
            RawInput::TooLarge { head, len } => {
                let error = too_large(len, self.options.max_bytes);
                Record::error(&origin, &error, head).write(sink);
                return Ok(false);
            }
            RawInput::Bytes(bytes) => bytes,
        };
        let decoded = match decode_input(bytes, self.options.framing) {
            Ok(decoded) => decoded,
            Err(error) => {
                Record::error(&origin, &error, bytes).write(sink);
                return Ok(false);
            }
        };
        origin.id = decoded.id;
        if direct.is_none() && !self.options.records && self.options.schema.is_none() {
            // The most common case, a value per line: written once, in place.
            return match self.mender.mend_onto(&decoded.text, &mut buf.out) {
                Ok(()) => {
                    buf.out.push(b'\n');
                    Ok(true)
                }
                Err(error) => {
                    // Without records, an error record goes to stderr.
                    Record::error(&origin, &error, decoded.text.as_bytes()).write(&mut buf.err);
                    Ok(false)
                }
            };
        }
        match self.mender.mend(&decoded.text) {
            Ok(mended) => {
                if let Some(schema) = &self.options.schema {
                    let checked = crate::io::checked::apply_schema(
                        &mended,
                        schema,
                        !self.options.mend.strict,
                    );
                    let (value, repairs) = match checked {
                        Ok(checked) => checked,
                        Err(mismatch) => {
                            let outcome = RecordResult::Err {
                                error: &mismatch.error,
                                original: decoded.text.as_bytes(),
                                violations: &mismatch.violations,
                                value: None,
                            };
                            let origin = Some(&origin);
                            Record { origin, outcome }.write(sink);
                            return Ok(false);
                        }
                    };
                    let mut whole = Vec::new();
                    let target = if direct.is_some() {
                        &mut whole
                    } else {
                        &mut buf.out
                    };
                    if self.options.records {
                        let outcome = RecordResult::Ok {
                            value: Written::Text(value.as_bytes()),
                            repairs: &repairs,
                            more: &[],
                            dropped: Some(&mended),
                        };
                        let origin = Some(&origin);
                        Record { origin, outcome }.write(target);
                    } else {
                        target.extend_from_slice(value.as_bytes());
                        target.push(b'\n');
                    }
                    if let Some(out) = direct {
                        out.write_all(&whole)?;
                    }
                    return Ok(true);
                }
                match (direct, self.options.records) {
                    (None, true) => Record::mended(&origin, &mended).write(&mut buf.out),
                    (None, false) => {
                        mended.write_value(&mut buf.out);
                        buf.out.push(b'\n');
                    }
                    (Some(out), true) => {
                        Record::mended(&origin, &mended).write_to(out, &mut buf.out)?
                    }
                    (Some(out), false) => {
                        mended.write_value_to(out)?;
                        out.write_all(b"\n")?;
                    }
                }
                Ok(true)
            }
            Err(error) => {
                Record::error(&origin, &error, decoded.text.as_bytes()).write(sink);
                Ok(false)
            }
        }
    }
}

impl Job for Mend {
    /// A huge value is written straight from the mender's buffer instead of being copied into
    /// the output buffer (a third of the memory such a line takes).
    fn one(&mut self, item: Item<'_>, buf: &mut Output) -> io::Result<Option<bool>> {
        self.mend_one(item, buf).map(Some)
    }

    fn fresh(&self) -> Box<dyn Job> {
        Box::new(Mend::new(self.options.clone()))
    }

    fn records(&self) -> bool {
        self.options.records
    }
}
