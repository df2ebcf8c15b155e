//! `toolmend.node`: the toolmend library in-process for Node (napi-rs).
//!
//! A thin layer: options in, the library's results out as plain objects holding compact JSON
//! text, which `index.js` parses and wraps (its `Record`, `ToolmendError`). Inputs that are not
//! strings or buffers never get here: `index.js` answers them itself.

use std::ffi::c_void;
use std::str::FromStr;
use std::sync::{Arc, OnceLock};

use napi::JsValue;
use napi::bindgen_prelude::*;
use napi_derive::napi;
use toolmend::calls::{CallOptions, Extracted, Failure, Shape};
use toolmend::schema::Schema;
use toolmend::tools::Tools;
use toolmend::{Code, Concat, Options, Target, Truncated};

/// The default limit on one input's size, as the CLI's `--max-bytes`.
const MAX_BYTES: f64 = (64 << 20) as f64;

/// Settings of the args and repair pipelines (all optional).
#[napi(object)]
pub struct MendOptions {
    /// "object" (args, the default) or "any" (repair).
    pub target: Option<String>,
    /// "first" (default), "all" or "error".
    pub concat: Option<String>,
    /// Input cut off before its end: "heal" (default, reported as repairs) or "error".
    pub truncated: Option<String>,
    pub strict: Option<bool>,
    pub max_depth: Option<u32>,
    pub max_nesting: Option<u32>,
    pub max_bytes: Option<f64>,
    /// Threads of a batch (0: one per core, at most 8, as the CLI).
    pub threads: Option<u32>,
    /// A JSON Schema for the value, as JSON text (`index.js` writes the object): the value is
    /// coerced to it and checked, as `toolmend args --schema`. `Mender` only.
    pub schema: Option<String>,
}

/// One input's result, with the value and repairs as JSON text.
#[napi(object)]
pub struct RawRecord {
    pub ok: bool,
    pub json: Option<String>,
    pub repairs: Option<String>,
    pub dropped: Option<Vec<String>>,
    pub code: Option<String>,
    pub message: Option<String>,
    pub offset: Option<f64>,
    pub original: Option<String>,
    /// For `invalid_parameters`: the violations as a JSON array of `{path, keyword, message}`.
    pub violations: Option<String>,
}

/// The pipeline's options, the size limit and the thread count.
fn options(o: Option<&MendOptions>) -> Result<(Options, usize, usize)> {
    let target: Target = word(o.and_then(|o| o.target.as_deref()), "object")?;
    let concat: Concat = word(o.and_then(|o| o.concat.as_deref()), "first")?;
    let truncated: Truncated = word(o.and_then(|o| o.truncated.as_deref()), "heal")?;
    let defaults = Options::default();
    let options = Options {
        target,
        concat,
        truncated,
        strict: o.and_then(|o| o.strict).unwrap_or(false),
        max_depth: o.and_then(|o| o.max_depth).unwrap_or(defaults.max_depth),
        max_nesting: o
            .and_then(|o| o.max_nesting)
            .map_or(defaults.max_nesting, |n| n as usize),
    };
    let max_bytes = limit(o.and_then(|o| o.max_bytes));
    let threads = o.and_then(|o| o.threads).unwrap_or(0) as usize;
    Ok((options, max_bytes, threads))
}

/// A size limit from JavaScript: a number of bytes (NaN or negative refuse everything).
fn limit(max_bytes: Option<f64>) -> usize {
    let max_bytes = max_bytes.unwrap_or(MAX_BYTES);
    if max_bytes >= 0.0 {
        max_bytes as usize
    } else {
        0
    }
}

/// The value an option's word names (`default` when none is given).
fn word<T: FromStr<Err = toolmend::UnknownWord>>(given: Option<&str>, default: &str) -> Result<T> {
    given
        .unwrap_or(default)
        .parse()
        .map_err(|e: toolmend::UnknownWord| invalid_arg(e.to_string()))
}

fn invalid_arg(message: String) -> napi::Error {
    napi::Error::new(Status::InvalidArg, message)
}

fn failed(error: &toolmend::Error, original: String) -> RawRecord {
    RawRecord {
        ok: false,
        json: None,
        repairs: None,
        dropped: None,
        code: Some(error.code.as_str().to_owned()),
        message: Some(error.message.clone()),
        offset: error.offset.map(|o| o as f64),
        original: Some(original),
        violations: None,
    }
}

fn record(
    input: &toolmend::Input<'_>,
    result: std::result::Result<toolmend::MendedValue, toolmend::Error>,
) -> RawRecord {
    match result {
        Ok(mended) => {
            let mut repairs = Vec::new();
            toolmend::write_repairs(&mut repairs, &mended.repairs);
            RawRecord {
                ok: true,
                json: Some(mended.value),
                repairs: Some(String::from_utf8(repairs).expect("records are UTF-8")),
                dropped: Some(mended.dropped),
                code: None,
                message: None,
                offset: None,
                original: None,
                violations: None,
            }
        }
        Err(error) => failed(&error, input.original()),
    }
}

/// Text or UTF-8 bytes as the library's input (too large or not UTF-8: an error already).
fn input<'a>(text: &'a Either<String, Buffer>, max_bytes: usize) -> toolmend::Input<'a> {
    let bytes: &[u8] = match text {
        Either::A(s) => s.as_bytes(),
        Either::B(b) => b,
    };
    toolmend::Input::from_bytes(bytes, max_bytes)
}

/// The args (or repair) pipeline over one input after another, keeping its buffers.
#[napi]
pub struct Mender {
    inner: toolmend::Mender,
    max_bytes: usize,
    schema: Option<Schema>,
    /// `mend_string`'s input as UTF-16 and as UTF-8, and its value as UTF-8 and as the text
    /// of a JavaScript string: kept between calls.
    units: Vec<u16>,
    text: String,
    value: Vec<u8>,
    narrow: Vec<u8>,
    wide: Vec<u16>,
}

/// A JavaScript value made by hand, returned as it is.
pub struct Made(napi::sys::napi_value);

impl TypeName for Made {
    fn type_name() -> &'static str {
        "unknown"
    }

    fn value_type() -> ValueType {
        ValueType::Unknown
    }
}

impl ToNapiValue for Made {
    unsafe fn to_napi_value(_env: napi::sys::napi_env, val: Self) -> Result<napi::sys::napi_value> {
        Ok(val.0)
    }
}

#[napi]
impl Mender {
    #[napi(constructor)]
    pub fn new(options: Option<MendOptions>) -> Result<Mender> {
        let schema = options
            .as_ref()
            .and_then(|o| o.schema.as_deref())
            .map(load_schema)
            .transpose()?;
        let (options, max_bytes, _) = self::options(options.as_ref())?;
        Ok(Mender {
            inner: toolmend::Mender::new(options),
            max_bytes,
            schema,
            units: Vec::new(),
            text: String::new(),
            value: Vec::new(),
            narrow: Vec::new(),
            wide: Vec::new(),
        })
    }

    /// `mend_value` for a string without a schema, the way that costs least per call: the
    /// string is copied as UTF-16 (no conversion in V8) and turned into UTF-8 here, and the
    /// value's JSON text goes back as Latin-1 or UTF-16. Null for a string with a lone
    /// surrogate (`index.js` makes that error).
    #[napi(ts_return_type = "string | RawRecord | null")]
    pub fn mend_string(&mut self, env: Env, text: napi::JsString) -> Result<Made> {
        let env = env.raw();
        let string = text.value().value;
        let mut length = 0;
        // SAFETY: a null buffer asks for the length only.
        check(unsafe {
            napi::sys::napi_get_value_string_utf16(
                env,
                string,
                std::ptr::null_mut(),
                0,
                &mut length,
            )
        })?;
        self.units.clear();
        self.units.reserve(length + 1);
        let mut written = 0;
        // SAFETY: room for `length` units and napi's NUL; napi says how many it wrote.
        check(unsafe {
            napi::sys::napi_get_value_string_utf16(
                env,
                string,
                self.units.as_mut_ptr(),
                length + 1,
                &mut written,
            )
        })?;
        // SAFETY: napi wrote these `written` units.
        unsafe { self.units.set_len(written) };
        let mut made = std::ptr::null_mut();
        if !utf16_to_utf8(&self.units, &mut self.text) {
            // SAFETY: an out-pointer.
            check(unsafe { napi::sys::napi_get_null(env, &mut made) })?;
            return Ok(Made(made));
        }
        let input = toolmend::Input::from_bytes(self.text.as_bytes(), self.max_bytes);
        let mended = match input.text().and_then(|t| self.inner.mend(t)) {
            Ok(mended) => mended,
            Err(error) => {
                // SAFETY: `env` is this call's.
                return Ok(Made(unsafe {
                    RawRecord::to_napi_value(env, failed(&error, input.original()))?
                }));
            }
        };
        self.value.clear();
        mended.write_value(&mut self.value);
        // SAFETY: pointers and lengths of live vectors; V8 copies them.
        let status = unsafe {
            if self.value.iter().all(|&b| b < 0x80) {
                napi::sys::napi_create_string_latin1(
                    env,
                    self.value.as_ptr().cast(),
                    self.value.len() as isize,
                    &mut made,
                )
            } else if self.value.iter().all(|&b| b < 0xc4) {
                self.narrow.clear();
                push_latin1(&mut self.narrow, &self.value);
                napi::sys::napi_create_string_latin1(
                    env,
                    self.narrow.as_ptr().cast(),
                    self.narrow.len() as isize,
                    &mut made,
                )
            } else {
                self.wide.clear();
                push_utf16(&mut self.wide, &self.value);
                napi::sys::napi_create_string_utf16(
                    env,
                    self.wide.as_ptr(),
                    self.wide.len() as isize,
                    &mut made,
                )
            }
        };
        check(status)?;
        Ok(Made(made))
    }

    /// One input's record.
    #[napi]
    pub fn mend(&mut self, text: Either<String, Buffer>) -> RawRecord {
        let input = input(&text, self.max_bytes);
        let Some(schema) = &self.schema else {
            let result = input.mend(&mut self.inner);
            return record(&input, result);
        };
        let coerce = !self.inner.options().strict;
        let text = match input.text() {
            Ok(text) => text,
            Err(error) => return failed(&error, input.original()),
        };
        let mended = match self.inner.mend(text) {
            Ok(mended) => mended,
            Err(error) => return failed(&error, input.original()),
        };
        match schema.apply_mended(&mended, coerce) {
            Ok(coerced) => {
                let mut value = toolmend::MendedValue::from(&mended);
                if let Some((json, repairs)) = coerced {
                    value.value = json;
                    value.repairs.extend(repairs);
                }
                record(&input, Ok(value))
            }
            Err(violations) => {
                let listed: Vec<serde_json::Value> = violations
                    .iter()
                    .map(|v| serde_json::json!({"path": v.path, "keyword": v.keyword, "message": v.message}))
                    .collect();
                let mut raw = failed(&Schema::mismatch(&violations), input.original());
                raw.violations = Some(serde_json::Value::Array(listed).to_string());
                raw
            }
        }
    }

    /// One input's value as compact JSON text, or its failed record: what `mendArgs` and
    /// `repair` need, as one string rather than a record of eight fields.
    #[napi(ts_return_type = "string | RawRecord")]
    pub fn mend_value(&mut self, text: Either<String, Buffer>) -> Either<String, RawRecord> {
        if self.schema.is_some() {
            // The schema's coercions and violations are the record's.
            let mut raw = self.mend(text);
            return match raw.json.take() {
                Some(json) if raw.ok => Either::A(json),
                json => {
                    raw.json = json;
                    Either::B(raw)
                }
            };
        }
        let input = input(&text, self.max_bytes);
        let result = input
            .text()
            .and_then(|t| self.inner.mend(t).map(|m| m.value().into_owned()));
        match result {
            Ok(json) => Either::A(json),
            Err(error) => Either::B(failed(&error, input.original())),
        }
    }
}

/// The schema of `MendOptions.schema` (JSON text).
fn load_schema(text: &str) -> Result<Schema> {
    let document: serde_json::Value =
        serde_json::from_str(text).map_err(|e| invalid_arg(format!("schema: {e}")))?;
    Schema::new(document).map_err(|e| invalid_arg(format!("schema: {e}")))
}

/// A batch has no schema: `mendMany` would otherwise silently not apply it.
fn no_schema(options: Option<&MendOptions>) -> Result<()> {
    if options.is_some_and(|o| o.schema.is_some()) {
        return Err(invalid_arg(
            "schema is not taken by mendMany; use mendArgs or a Mender".into(),
        ));
    }
    Ok(())
}

/// Where one input of a batch is in [`Batch`].
#[derive(Clone, Copy)]
enum Span {
    /// A string: these UTF-16 units of `Batch::units`.
    Text(usize, usize),
    /// A Uint8Array: these bytes of `Batch::bytes`.
    Bytes(usize, usize),
    /// Not text: `index.js` makes its record (the error it already found).
    Elsewhere,
}

/// A batch of inputs, copied out of JavaScript at once so it can be mended off the main thread:
/// every string's UTF-16 one after another (a copy V8 makes without converting; each is turned
/// into UTF-8 on the mending threads), and the bytes of the Uint8Arrays.
pub struct Batch {
    units: Vec<u16>,
    bytes: Vec<u8>,
    spans: Vec<Span>,
    options: Options,
    max_bytes: usize,
    threads: usize,
}

/// `lengths[i]`, from `index.js`: the length of the string `texts[i]`, -1 for a Uint8Array,
/// -2 for anything else.
fn copy_batch(texts: &Array, lengths: &[f64], options: Option<&MendOptions>) -> Result<Batch> {
    no_schema(options)?;
    let (options, max_bytes, threads) = self::options(options)?;
    let count = texts.len() as usize;
    if lengths.len() != count {
        return Err(invalid_arg("one length per input".into()));
    }
    let total: usize = lengths
        .iter()
        .filter(|&&l| l > 0.0)
        .map(|&l| l as usize)
        .sum();
    // One more unit: napi ends each copy with a NUL, which the next string overwrites.
    let mut units: Vec<u16> = Vec::with_capacity(total + 1);
    let mut bytes = Vec::new();
    let mut spans = Vec::with_capacity(count);
    let env = texts.value().env;
    let array = texts.value().value;
    for (i, &length) in lengths.iter().enumerate() {
        if length < -1.5 {
            spans.push(Span::Elsewhere);
            continue;
        }
        let mut item = std::ptr::null_mut();
        // SAFETY: `array` is the live array argument of this call, `item` an out-pointer.
        check(unsafe { napi::sys::napi_get_element(env, array, i as u32, &mut item) })?;
        if length < 0.0 {
            let (start, data) = (bytes.len(), typed_array_bytes(env, item)?);
            bytes.extend_from_slice(data);
            spans.push(Span::Bytes(start, bytes.len()));
            continue;
        }
        let start = units.len();
        let room = (total - start).min(length as usize) + 1;
        let mut written = 0;
        // SAFETY: `room` units from `start` are within the capacity (`total + 1`); napi writes
        // at most `room - 1` units and the NUL, and says how many it wrote.
        check(unsafe {
            napi::sys::napi_get_value_string_utf16(
                env,
                item,
                units.as_mut_ptr().add(start),
                room,
                &mut written,
            )
        })?;
        // SAFETY: napi wrote these `written` units.
        unsafe { units.set_len(start + written) };
        spans.push(Span::Text(start, start + written));
    }
    Ok(Batch {
        units,
        bytes,
        spans,
        options,
        max_bytes,
        threads,
    })
}

fn check(status: napi::sys::napi_status) -> Result<()> {
    if status == napi::sys::Status::napi_ok {
        Ok(())
    } else {
        Err(invalid_arg(format!(
            "an input of the batch could not be read (napi status {status})"
        )))
    }
}

/// The bytes a Uint8Array (a Buffer) shows, borrowed for this call.
fn typed_array_bytes<'a>(
    env: napi::sys::napi_env,
    value: napi::sys::napi_value,
) -> Result<&'a [u8]> {
    let mut kind = 0;
    let mut length = 0;
    let mut data = std::ptr::null_mut();
    let mut buffer = std::ptr::null_mut();
    let mut offset = 0;
    // SAFETY: out-pointers only.
    check(unsafe {
        napi::sys::napi_get_typedarray_info(
            env,
            value,
            &mut kind,
            &mut length,
            &mut data,
            &mut buffer,
            &mut offset,
        )
    })?;
    if kind != napi::sys::TypedarrayType::uint8_array {
        return Err(invalid_arg(
            "an input of the batch is not a Uint8Array".into(),
        ));
    }
    if data.is_null() || length == 0 {
        return Ok(&[]);
    }
    // SAFETY: napi gives the array's data (already at its byte offset) and its length; the
    // value is held by the caller's array for the whole call, and the slice is copied in it.
    Ok(unsafe { std::slice::from_raw_parts(data.cast::<u8>(), length) })
}

/// What a record's numbers say in [`Records::meta`]: its kind, …
const OK: f64 = 0.0;
const FAILED: f64 = 1.0;
/// …made by `index.js` (not text, or a string with a lone surrogate).
const ELSEWHERE: f64 = 2.0;
/// Numbers per record in `meta`: kind, segment, four bounds in the segment, error offset.
const META: usize = 7;

/// Every record of a batch: their texts in long strings (segments: two for each part of the
/// batch a thread takes at once, about 128 KiB of input), and per record [`META`] numbers.
/// An ok record's segment holds its value, its repairs (a JSON array) and what was dropped (a
/// JSON array), one after another; a failed one's its code, message and original. Bounds
/// count UTF-16 units, as JavaScript's `slice` does.
pub struct Records {
    segments: Vec<Segment>,
    meta: Vec<f64>,
}

/// A segment's text: records whose every character is below U+0100 go to a one-byte
/// segment (half the memory, and what V8 makes of such text anyway), the others to UTF-16.
enum Segment {
    Latin1(Vec<u8>),
    Utf16(Vec<u16>),
}

/// The records of one part of a batch, written as UTF-8 into buffers a thread keeps from part
/// to part, then each moved once into a segment allocated at its final size: growing the
/// segments record by record cost reallocations (a copy of all written so far each time) and
/// fresh pages for every copy.
struct Writer {
    /// Every record of the part, one after another: a record's pieces (value, repairs,
    /// dropped; or code, message, original) end at its `ends`.
    utf8: Vec<u8>,
    records: Vec<Written>,
}

/// A record in [`Writer::utf8`].
struct Written {
    kind: f64,
    /// Some character is U+0100 or above: the record goes to the UTF-16 segment.
    wide: bool,
    start: usize,
    ends: [usize; 3],
    offset: f64,
}

impl Writer {
    fn new() -> Writer {
        Writer {
            utf8: Vec::new(),
            records: Vec::new(),
        }
    }

    /// Notes the record written since `start` (its pieces ending at `ends`).
    fn put(&mut self, kind: f64, start: usize, ends: [usize; 3], offset: f64) {
        // Lead bytes from 0xC4 start characters from U+0100 on.
        let wide = self.utf8[start..].iter().any(|&b| b >= 0xc4);
        self.records.push(Written {
            kind,
            wide,
            start,
            ends,
            offset,
        });
    }

    fn ok(&mut self, mended: &toolmend::Mended<'_>) {
        let start = self.utf8.len();
        mended.write_value(&mut self.utf8);
        let value = self.utf8.len();
        toolmend::write_repairs(&mut self.utf8, mended.repairs());
        let repairs = self.utf8.len();
        self.utf8.push(b'[');
        for (i, dropped) in mended.dropped().enumerate() {
            if i > 0 {
                self.utf8.push(b',');
            }
            self.utf8.extend_from_slice(dropped.as_bytes());
        }
        self.utf8.push(b']');
        let end = self.utf8.len();
        self.put(OK, start, [value, repairs, end], -1.0);
    }

    fn failed(&mut self, error: &toolmend::Error, input: &toolmend::Input<'_>) {
        let start = self.utf8.len();
        let mut ends = [0; 3];
        for (k, text) in [error.code.as_str(), &error.message, &input.original()]
            .into_iter()
            .enumerate()
        {
            self.utf8.extend_from_slice(text.as_bytes());
            ends[k] = self.utf8.len();
        }
        self.put(FAILED, start, ends, error.offset.map_or(-1.0, |o| o as f64));
    }

    fn elsewhere(&mut self) {
        let at = self.utf8.len();
        self.records.push(Written {
            kind: ELSEWHERE,
            wide: false,
            start: at,
            ends: [at; 3],
            offset: -1.0,
        });
    }

    fn record(&mut self, input: &toolmend::Input<'_>, mender: &mut toolmend::Mender) {
        match input.text().and_then(|text| mender.mend(text)) {
            Ok(mended) => self.ok(&mended),
            Err(error) => self.failed(&error, input),
        }
    }

    /// The part's two segments (numbered `first` and `first + 1` in the batch) and its
    /// records' numbers; the writer is empty again.
    fn finish(&mut self, first: f64) -> ([Segment; 2], Vec<f64>) {
        // A character takes at most as many Latin-1 bytes or UTF-16 units as UTF-8 bytes:
        // the segments never grow.
        let (mut narrow_bytes, mut wide_bytes) = (0, 0);
        for r in &self.records {
            let n = r.ends[2] - r.start;
            if r.wide {
                wide_bytes += n;
            } else {
                narrow_bytes += n;
            }
        }
        let mut narrow = Vec::with_capacity(narrow_bytes);
        let mut wide = Vec::with_capacity(wide_bytes);
        let mut meta = Vec::with_capacity(self.records.len() * META);
        for r in &self.records {
            let mut bounds = [0.0; 4];
            let mut start = r.start;
            if r.wide {
                bounds[0] = wide.len() as f64;
                for (k, &end) in r.ends.iter().enumerate() {
                    push_utf16(&mut wide, &self.utf8[start..end]);
                    bounds[k + 1] = wide.len() as f64;
                    start = end;
                }
            } else {
                bounds[0] = narrow.len() as f64;
                for (k, &end) in r.ends.iter().enumerate() {
                    push_latin1(&mut narrow, &self.utf8[start..end]);
                    bounds[k + 1] = narrow.len() as f64;
                    start = end;
                }
            }
            let segment = first + if r.wide { 1.0 } else { 0.0 };
            meta.extend_from_slice(&[r.kind, segment]);
            meta.extend_from_slice(&bounds);
            meta.push(r.offset);
        }
        self.utf8.clear();
        self.records.clear();
        narrow.shrink_to_fit();
        wide.shrink_to_fit();
        ([Segment::Latin1(narrow), Segment::Utf16(wide)], meta)
    }
}

/// How many of the first units are ASCII (below 0x80), sixteen at a time where it can.
fn ascii_run<T: Copy + Into<u32>>(units: &[T]) -> usize {
    let mut n = 0;
    for chunk in units.chunks_exact(16) {
        if chunk.iter().fold(0, |acc, &u| acc | u.into()) >= 0x80 {
            break;
        }
        n += 16;
    }
    n + units[n..].iter().take_while(|&&u| u.into() < 0x80).count()
}

/// Appends valid UTF-8 whose characters are all below U+0100 as Latin-1.
fn push_latin1(out: &mut Vec<u8>, utf8: &[u8]) {
    out.reserve(utf8.len());
    let mut i = 0;
    while i < utf8.len() {
        let run = ascii_run(&utf8[i..]);
        out.extend_from_slice(&utf8[i..i + run]);
        i += run;
        if let Some(&b) = utf8.get(i) {
            // 0xC2 or 0xC3 and a continuation byte: U+0080 to U+00FF.
            out.push(((b & 0x03) << 6) | (utf8[i + 1] & 0x3f));
            i += 2;
        }
    }
}

/// Appends valid UTF-8 as UTF-16.
fn push_utf16(out: &mut Vec<u16>, utf8: &[u8]) {
    out.reserve(utf8.len());
    let mut i = 0;
    while i < utf8.len() {
        let run = ascii_run(&utf8[i..]);
        out.extend(utf8[i..i + run].iter().map(|&b| u16::from(b)));
        i += run;
        let Some(&b) = utf8.get(i) else { break };
        // The text is valid UTF-8: a lead byte and its continuation bytes.
        let tail = |k: usize| u32::from(utf8[i + k] & 0x3f);
        let (c, width) = match b {
            0xc0..=0xdf => ((u32::from(b & 0x1f) << 6) | tail(1), 2),
            0xe0..=0xef => ((u32::from(b & 0x0f) << 12) | (tail(1) << 6) | tail(2), 3),
            _ => (
                (u32::from(b & 0x07) << 18) | (tail(1) << 12) | (tail(2) << 6) | tail(3),
                4,
            ),
        };
        if c < 0x10000 {
            out.push(c as u16);
        } else {
            let c = c - 0x10000;
            out.extend_from_slice(&[0xd800 | (c >> 10) as u16, 0xdc00 | (c & 0x3ff) as u16]);
        }
        i += width;
    }
}

/// UTF-16 as UTF-8 into `out` (cleared first); false at a lone surrogate.
fn utf16_to_utf8(units: &[u16], out: &mut String) -> bool {
    out.clear();
    // SAFETY: only whole UTF-8 sequences are appended (ASCII, or a char's encoding), and
    // `out` is cleared before returning false.
    let bytes = unsafe { out.as_mut_vec() };
    bytes.reserve(units.len());
    let mut i = 0;
    while i < units.len() {
        let run = ascii_run(&units[i..]);
        bytes.extend(units[i..i + run].iter().map(|&u| u as u8));
        i += run;
        let Some(&u) = units.get(i) else { break };
        let (c, width) = if (0xd800..0xdc00).contains(&u) {
            match units.get(i + 1) {
                Some(&low) if (0xdc00..0xe000).contains(&low) => {
                    let c = 0x10000 + ((u32::from(u) - 0xd800) << 10) + (u32::from(low) - 0xdc00);
                    (char::from_u32(c), 2)
                }
                _ => (None, 1),
            }
        } else {
            (char::from_u32(u32::from(u)), 1)
        };
        let Some(c) = c else {
            bytes.clear();
            return false;
        };
        let mut buf = [0; 4];
        bytes.extend_from_slice(c.encode_utf8(&mut buf).as_bytes());
        i += width;
    }
    true
}

thread_local! {
    /// A thread's writer and UTF-8 text, kept from part to part.
    static WRITER: std::cell::RefCell<(Writer, String)> =
        std::cell::RefCell::new((Writer::new(), String::new()));
}

/// Text known to be UTF-8 as the library's input (checked for size only).
fn text_input(text: &str, max_bytes: usize) -> toolmend::Input<'_> {
    if text.len() > max_bytes {
        toolmend::Input::from_bytes(text.as_bytes(), max_bytes)
    } else {
        toolmend::Input::Text(text)
    }
}

impl Batch {
    fn run(&self) -> Records {
        let size = |i| match self.spans[i] {
            Span::Text(a, b) | Span::Bytes(a, b) => b - a,
            Span::Elsewhere => 0,
        };
        // Each batch is turned into UTF-8, mended and written on the thread that takes it.
        let parts = toolmend::mend_batches(
            self.spans.len(),
            size,
            &self.options,
            self.threads,
            |range, mender| {
                WRITER.with_borrow_mut(|(writer, text)| {
                    for &span in &self.spans[range] {
                        match span {
                            Span::Text(a, b) => {
                                if utf16_to_utf8(&self.units[a..b], text) {
                                    writer.record(&text_input(text, self.max_bytes), mender);
                                } else {
                                    writer.elsewhere();
                                }
                            }
                            Span::Bytes(a, b) => {
                                let input =
                                    toolmend::Input::from_bytes(&self.bytes[a..b], self.max_bytes);
                                writer.record(&input, mender);
                            }
                            Span::Elsewhere => writer.elsewhere(),
                        }
                    }
                    writer.finish(0.0)
                })
            },
        );
        let mut all = Records {
            segments: Vec::with_capacity(parts.len() * 2),
            meta: Vec::with_capacity(self.spans.len() * META),
        };
        for (segments, meta) in parts {
            let first = all.segments.len() as f64;
            all.meta.extend(meta.chunks_exact(META).flat_map(|m| {
                let mut m: [f64; META] = m.try_into().expect("META numbers a record");
                m[1] += first;
                m
            }));
            all.segments.extend(segments);
        }
        all
    }
}

impl TypeName for Records {
    fn type_name() -> &'static str {
        "Records"
    }

    fn value_type() -> ValueType {
        ValueType::Object
    }
}

/// `node_api_create_external_string_latin1` and `_utf16` (Node 18.18 and 20.4 on): V8 keeps
/// a segment where it is instead of copying it.
type External<T> = unsafe extern "C" fn(
    napi::sys::napi_env,
    *mut T,
    usize,
    Option<unsafe extern "C" fn(napi::sys::napi_env, *mut c_void, *mut c_void)>,
    *mut c_void,
    *mut napi::sys::napi_value,
    *mut bool,
) -> napi::sys::napi_status;

/// The two functions, looked up when first needed; None in a Node without them.
fn external_strings() -> Option<(External<u8>, External<u16>)> {
    static FOUND: OnceLock<Option<(usize, usize)>> = OnceLock::new();
    let found = FOUND.get_or_init(|| {
        // SAFETY: dlsym with the process's own symbols and NUL-terminated names.
        let (latin1, utf16) = unsafe {
            (
                libc::dlsym(
                    libc::RTLD_DEFAULT,
                    c"node_api_create_external_string_latin1".as_ptr(),
                ),
                libc::dlsym(
                    libc::RTLD_DEFAULT,
                    c"node_api_create_external_string_utf16".as_ptr(),
                ),
            )
        };
        (!latin1.is_null() && !utf16.is_null()).then_some((latin1 as usize, utf16 as usize))
    });
    // SAFETY: the symbols are these functions, with the signature of js_native_api.h.
    found.map(|(latin1, utf16)| unsafe {
        (
            std::mem::transmute::<usize, External<u8>>(latin1),
            std::mem::transmute::<usize, External<u16>>(utf16),
        )
    })
}

/// Frees a segment V8 no longer needs (`hint`: its length).
unsafe extern "C" fn free_segment<T>(
    _env: napi::sys::napi_env,
    data: *mut c_void,
    hint: *mut c_void,
) {
    // SAFETY: `data` and `hint` are the pointer and length of a boxed slice leaked in `segment`.
    drop(unsafe {
        Box::from_raw(std::ptr::slice_from_raw_parts_mut(
            data.cast::<T>(),
            hint as usize,
        ))
    });
}

/// A segment as a JavaScript string: external where Node can, else copied.
fn segment(env: napi::sys::napi_env, segment: Segment) -> Result<napi::sys::napi_value> {
    let mut string = std::ptr::null_mut();
    let mut copied = false;
    // SAFETY: the pointers and lengths are those of live vectors; a leaked box is freed by
    // `free_segment`, which Node calls once (at once when it copies instead).
    let status = unsafe {
        match (segment, external_strings()) {
            (Segment::Latin1(b), Some((latin1, _))) if !b.is_empty() => {
                let b = Box::into_raw(b.into_boxed_slice());
                latin1(
                    env,
                    b.cast(),
                    b.len(),
                    Some(free_segment::<u8>),
                    b.len() as *mut c_void,
                    &mut string,
                    &mut copied,
                )
            }
            (Segment::Utf16(u), Some((_, utf16))) if !u.is_empty() => {
                let u = Box::into_raw(u.into_boxed_slice());
                utf16(
                    env,
                    u.cast(),
                    u.len(),
                    Some(free_segment::<u16>),
                    u.len() as *mut c_void,
                    &mut string,
                    &mut copied,
                )
            }
            (Segment::Latin1(b), _) => napi::sys::napi_create_string_latin1(
                env,
                b.as_ptr().cast(),
                b.len() as isize,
                &mut string,
            ),
            (Segment::Utf16(u), _) => {
                napi::sys::napi_create_string_utf16(env, u.as_ptr(), u.len() as isize, &mut string)
            }
        }
    };
    if status != napi::sys::Status::napi_ok {
        return Err(napi::Error::new(
            Status::GenericFailure,
            "the records are too long for one JavaScript string",
        ));
    }
    Ok(string)
}

impl ToNapiValue for Records {
    /// `[segments, meta]`: an array of strings and a Float64Array.
    unsafe fn to_napi_value(env: napi::sys::napi_env, val: Self) -> Result<napi::sys::napi_value> {
        let mut segments = std::ptr::null_mut();
        // SAFETY: `env` is the live env of this call; out-pointers only.
        check(unsafe {
            napi::sys::napi_create_array_with_length(env, val.segments.len(), &mut segments)
        })?;
        for (i, s) in val.segments.into_iter().enumerate() {
            let string = segment(env, s)?;
            // SAFETY: `segments` was made above with this length.
            check(unsafe { napi::sys::napi_set_element(env, segments, i as u32, string) })?;
        }
        // SAFETY: as above.
        let meta = unsafe { Float64Array::to_napi_value(env, Float64Array::new(val.meta))? };
        let mut pair = std::ptr::null_mut();
        // SAFETY: as above.
        unsafe {
            check(napi::sys::napi_create_array_with_length(env, 2, &mut pair))?;
            check(napi::sys::napi_set_element(env, pair, 0, segments))?;
            check(napi::sys::napi_set_element(env, pair, 1, meta))?;
        }
        Ok(pair)
    }
}

impl Task for Batch {
    type Output = Records;
    type JsValue = Records;

    fn compute(&mut self) -> Result<Self::Output> {
        Ok(self.run())
    }

    fn resolve(&mut self, _env: Env, output: Self::Output) -> Result<Self::JsValue> {
        Ok(output)
    }
}

/// Every input's record, in order, mended on the CLI's threads off the main thread:
/// `[segments, meta]` (see [`Records`]). `index.js` makes the records.
#[napi(ts_return_type = "Promise<[string[], Float64Array]>")]
pub fn mend_many(
    texts: Array,
    lengths: Float64Array,
    options: Option<MendOptions>,
) -> Result<AsyncTask<Batch>> {
    Ok(AsyncTask::new(copy_batch(
        &texts,
        &lengths,
        options.as_ref(),
    )?))
}

/// `mendMany` on the calling thread (its worker threads still run in parallel).
#[napi(ts_return_type = "[string[], Float64Array]")]
pub fn mend_many_sync(
    texts: Array,
    lengths: Float64Array,
    options: Option<MendOptions>,
) -> Result<Records> {
    Ok(copy_batch(&texts, &lengths, options.as_ref())?.run())
}

/// Settings of the calls extractor (all optional).
#[napi(object)]
pub struct CallsOptions {
    /// Tool definitions as JSON text (toolmend's, OpenAI's or MCP's).
    pub tools_json: Option<String>,
    /// The path of a JSON or TOML tools file.
    pub tools_path: Option<String>,
    pub format: Option<String>,
    pub require_terminate: Option<bool>,
    pub strict: Option<bool>,
    pub max_depth: Option<u32>,
    pub max_nesting: Option<u32>,
    pub max_bytes: Option<f64>,
}

/// What a reply held (`json`, as `toolmend calls` writes its value), or why it fails.
#[napi(object)]
pub struct RawCalls {
    pub ok: bool,
    /// The value; for a failure, what was found (with `rejected`), when anything was.
    pub json: Option<String>,
    pub code: Option<String>,
    pub message: Option<String>,
    pub offset: Option<f64>,
    /// For `invalid_parameters`: the violations as a JSON array of {path, message}.
    pub violations: Option<String>,
}

/// `toolmend calls` with one set of options and tools (loaded once).
#[napi]
pub struct CallExtractor {
    options: CallOptions,
    max_bytes: usize,
}

#[napi]
impl CallExtractor {
    #[napi(constructor)]
    pub fn new(options: Option<CallsOptions>) -> Result<CallExtractor> {
        let o = options.as_ref();
        let format = o.and_then(|o| o.format.clone());
        if let Some(name) = &format
            && !toolmend::calls::format_names().any(|n| n == name)
        {
            let names: Vec<_> = toolmend::calls::format_names().collect();
            return Err(invalid_arg(format!(
                "unknown format {name:?}; one of: {}",
                names.join(", ")
            )));
        }
        let tools = match (
            o.and_then(|o| o.tools_path.as_deref()),
            o.and_then(|o| o.tools_json.as_deref()),
        ) {
            (Some(path), _) => Some(Tools::from_path(path.as_ref())),
            (None, Some(json)) => Some(Tools::from_json_str(json)),
            (None, None) => None,
        }
        .transpose()
        .map_err(|e| napi::Error::new(Status::InvalidArg, format!("invalid_input: tools: {e}")))?;
        let defaults = CallOptions::default();
        Ok(CallExtractor {
            options: CallOptions {
                format,
                tools: tools.map(Arc::new),
                require_terminate: o.and_then(|o| o.require_terminate).unwrap_or(false),
                strict: o.and_then(|o| o.strict).unwrap_or(false),
                max_depth: o.and_then(|o| o.max_depth).unwrap_or(defaults.max_depth),
                max_nesting: o
                    .and_then(|o| o.max_nesting)
                    .map_or(defaults.max_nesting, |n| n as usize),
                ..defaults
            },
            max_bytes: limit(o.and_then(|o| o.max_bytes)),
        })
    }

    /// The calls in a reply: text, or (with `message`) an assistant message as JSON text.
    #[napi]
    pub fn extract(&self, reply: Either<String, Buffer>, message: Option<bool>) -> RawCalls {
        let input = input(&reply, self.max_bytes);
        let result = match input.text() {
            Err(error) => Err(Failure {
                error,
                extracted: None,
            }),
            Ok(text) if message == Some(true) => match serde_json_value(text) {
                Ok(value) => toolmend::calls::extract_message(&value, &self.options),
                Err(error) => Err(Failure {
                    error,
                    extracted: None,
                }),
            },
            Ok(text) => toolmend::calls::extract(text, &self.options),
        };
        match result {
            Ok(found) => RawCalls {
                ok: true,
                json: Some(found.to_value_with_repairs(Shape::Native).to_string()),
                code: None,
                message: None,
                offset: None,
                violations: None,
            },
            Err(failure) => failure_record(&failure),
        }
    }
}

/// A reply read as it arrives (`toolmend calls --stream`); each method returns the events it
/// makes known as a JSON array (index.js parses it).
#[napi(js_name = "Stream")]
pub struct NativeStream {
    inner: toolmend::calls::Stream,
}

#[napi]
impl NativeStream {
    #[napi(constructor)]
    pub fn new(options: Option<CallsOptions>) -> Result<NativeStream> {
        let extractor = CallExtractor::new(options)?;
        Ok(NativeStream {
            inner: toolmend::calls::Stream::new(extractor.options),
        })
    }

    /// The next piece of the reply's text.
    #[napi]
    pub fn feed(&mut self, chunk: String) -> String {
        events_json(&self.inner.feed(&chunk))
    }

    /// Reasoning a server sends apart from the text.
    #[napi]
    pub fn feed_reasoning(&mut self, delta: String) -> String {
        events_json(&self.inner.feed_reasoning(&delta))
    }

    /// A piece of a tool call a server parsed itself (`key`: its index).
    #[napi]
    pub fn feed_call(
        &mut self,
        key: u32,
        id: Option<String>,
        name: Option<String>,
        arguments: Option<String>,
    ) -> String {
        events_json(&self.inner.feed_call(
            key as usize,
            id.as_deref(),
            name.as_deref(),
            arguments.as_deref().unwrap_or(""),
        ))
    }

    /// Ends the reply: the results and the `end` event.
    #[napi]
    pub fn finish(&mut self) -> String {
        events_json(&self.inner.finish())
    }
}

fn events_json(events: &[toolmend::calls::Event]) -> String {
    let list: Vec<serde_json::Value> = events.iter().map(|e| e.to_value(Shape::Native)).collect();
    serde_json::Value::Array(list).to_string()
}

fn serde_json_value(text: &str) -> std::result::Result<serde_json::Value, toolmend::Error> {
    serde_json::from_str(text).map_err(|e| {
        toolmend::Error::whole(Code::InvalidInput, format!("the message is not JSON: {e}"))
    })
}

fn failure_record(failure: &Failure) -> RawCalls {
    let found: Option<&Extracted> = failure.extracted.as_deref();
    let violations = found
        .and_then(|f| f.rejected.first())
        .filter(|r| r.error == failure.error)
        .map(|r| {
            let list: Vec<_> = r
                .violations
                .iter()
                .map(|v| {
                    serde_json::json!({"path": v.path, "keyword": v.keyword, "message": v.message})
                })
                .collect();
            serde_json::Value::Array(list).to_string()
        });
    RawCalls {
        ok: false,
        json: found.map(|f| f.failure_value(Shape::Native).to_string()),
        code: Some(failure.error.code.as_str().to_owned()),
        message: Some(failure.error.message.clone()),
        offset: failure.error.offset.map(|o| o as f64),
        violations,
    }
}

/// The names `format` accepts, most specific first.
#[napi]
pub fn call_formats() -> Vec<String> {
    toolmend::calls::format_names().map(str::to_owned).collect()
}

/// The version of the toolmend library inside.
#[napi]
pub fn version() -> String {
    env!("CARGO_PKG_VERSION").to_owned()
}
