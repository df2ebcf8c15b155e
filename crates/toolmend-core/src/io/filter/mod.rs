//! The `args` and `repair` commands as a stream filter: inputs in, one record (or value) out
//! per input, in order.
//!
//! With several threads, the calling thread reads the stream into batches of inputs, worker
//! threads mend whole batches (the calling thread too, when they are all busy), and the calling
//! thread writes their output back in the order it read them. Batches and their output buffers are handed back and forth and reused, so a long
//! run allocates nothing per line once they have grown.

use std::collections::VecDeque;
use std::io::{self, BufRead, Write};
use std::sync::{Arc, mpsc};
use std::thread;

use crate::args::Options;
use crate::io::input::{Framing, InputReader, RawInput};
use crate::tools::schema::Schema;

mod mend;
mod panics;

use mend::Mend;

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
    /// Threads that mend inputs; 0 picks one per available core (at most 8), and more than
    /// [`MAX_THREADS`] count as that many. Output order never depends on it. One thread is
    /// used anyway when line-buffered or reading one whole input; when the system cannot start
    /// as many as asked, the run goes on with those that started.
    pub threads: usize,
    /// A JSON Schema each value must match (each item with `Concat::All`): values are coerced
    /// to it where the intent is unambiguous (not with `strict`), and what still breaks it fails
    /// with `invalid_parameters`.
    pub schema: Option<Arc<Schema>>,
}

/// The most threads a run uses (`--threads` refuses more): far more than any machine has cores
/// to keep busy, and few enough that starting them cannot exhaust the system.
pub const MAX_THREADS: usize = 256;

impl Default for FilterOptions {
    fn default() -> FilterOptions {
        FilterOptions {
            mend: Options::default(),
            framing: Framing::Lines,
            records: false,
            line_buffered: false,
            max_bytes: crate::DEFAULT_MAX_BYTES,
            threads: 1,
            schema: None,
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

impl Summary {
    /// Counts one input's result (`None`: no input).
    fn count(&mut self, ok: Option<bool>) {
        if let Some(ok) = ok {
            self.inputs += 1;
            self.failed += u64::from(!ok);
        }
    }
}

/// Output is handed to the writer in blocks of about this size (unless line-buffered).
const BLOCK: usize = 64 << 10;

/// A batch for a worker holds about this many input bytes: large enough that handing it over
/// costs little next to mending it, small enough that both cores get work early.
const BATCH_BYTES: usize = 128 << 10;

/// A batch also holds at most this many inputs: empty or tiny lines add next to no bytes, and
/// each still gives a record, so a byte bound alone would let one batch (and its output) grow
/// with the number of lines.
const BATCH_INPUTS: usize = 2048;

/// An input at least this long is mended by the reading thread itself, straight from the
/// reader's buffer, rather than copied into a batch.
const HUGE: usize = 4 << 20;

/// Batches in flight per worker: one being mended, one waiting.
const IN_FLIGHT: usize = 2;

/// Mends every input of a stream and writes the results.
///
/// ```
/// use toolmend_core::{Filter, FilterOptions};
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
    reading: Reading,
    worker: Worker,
    batches: Vec<Batch>,
}

/// How a filter reads its stream and writes its output, whatever its job.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Reading {
    /// How the stream is cut into inputs.
    pub framing: Framing,
    /// Inputs longer than this fail with `too_large`.
    pub max_bytes: usize,
    /// Flush after every record.
    pub line_buffered: bool,
    /// Threads, as [`FilterOptions::threads`].
    pub threads: usize,
}

/// What a filter does with each input: `args` and `repair` mend it ([`Mend`]), `calls` reads
/// its calls. One job runs on each thread.
pub(crate) trait Job: Send {
    /// Writes the result of one input to `buf`: a value or a record to `out`, or (an error
    /// without records) its error record to `err`. Whether it succeeded; `None` when it is no
    /// input (skipped, not counted).
    ///
    /// # Errors
    /// Only those of the item's `direct` writer.
    fn one(&mut self, item: Item<'_>, buf: &mut Output) -> io::Result<Option<bool>>;

    /// The same job for another thread (or in place of one that panicked).
    fn fresh(&self) -> Box<dyn Job>;

    /// Whether error records go to `out` (with records) rather than to `err`.
    fn records(&self) -> bool;
}

impl Filter {
    /// A filter with these settings.
    pub fn new(options: FilterOptions) -> Filter {
        let reading = Reading {
            framing: options.framing,
            max_bytes: options.max_bytes,
            line_buffered: options.line_buffered,
            threads: options.threads,
        };
        Filter::with_job(reading, Box::new(Mend::new(options)))
    }

    /// A filter that runs `job` on each input.
    pub(crate) fn with_job(reading: Reading, job: Box<dyn Job>) -> Filter {
        Filter {
            reading,
            worker: Worker::new(job),
            batches: Vec::new(),
        }
    }

    /// How many threads mend inputs in a run.
    fn threads(&self) -> usize {
        if self.reading.line_buffered || self.reading.framing == Framing::Whole {
            return 1;
        }
        match self.reading.threads {
            0 => thread::available_parallelism().map_or(1, |n| n.get().min(8)),
            n => n.min(MAX_THREADS),
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
        let inputs = InputReader::new(reader, self.reading.framing, self.reading.max_bytes);
        match self.threads() {
            1 => self.run_here(inputs, file, out, err),
            n => self.run_threaded(n, inputs, file, out, err),
        }
    }

    /// The one-thread run: each input is mended and written in turn.
    fn run_here<R: BufRead, W: Write, E: Write>(
        &mut self,
        mut inputs: InputReader<R>,
        file: Option<&str>,
        out: &mut W,
        err: &mut E,
    ) -> io::Result<Summary> {
        let worker = &mut self.worker;
        let line_buffered = self.reading.line_buffered;
        let mut summary = Summary::default();
        loop {
            let (line, raw) = match inputs.next_input() {
                Ok(Some(input)) => input,
                Ok(None) => break,
                Err(e) => {
                    // What was read before the failure still gets its output.
                    worker.write_out(out)?;
                    out.flush()?;
                    return Err(e);
                }
            };
            let ok = match raw {
                RawInput::Bytes(bytes) if bytes.len() >= HUGE => {
                    worker.one_to(line, file, bytes, out)?
                }
                raw => worker.one(line, file, raw),
            };
            summary.count(ok);
            if ok == Some(false) && !worker.buf.err.is_empty() {
                // Error records on stderr go out at once, in step with the values.
                worker.write_out(out)?;
                out.flush()?;
                err.write_all(&worker.buf.err)?;
                worker.buf.err.clear();
                err.flush()?;
            }
            if line_buffered || worker.buf.out.len() >= BLOCK {
                worker.write_out(out)?;
                if line_buffered {
                    out.flush()?;
                }
            }
        }
        worker.write_out(out)?;
        out.flush()?;
        Ok(summary)
    }

    /// The run over `n` mending threads: this one, which also reads and writes, and `n - 1`
    /// workers. A full batch goes to the worker with the fewest in flight; when every worker
    /// has [`IN_FLIGHT`] batches, this thread mends the batch itself rather than wait, so `n`
    /// threads keep `n` cores busy. Output is written in the order batches were read.
    fn run_threaded<R: BufRead, W: Write, E: Write>(
        &mut self,
        n: usize,
        mut inputs: InputReader<R>,
        file: Option<&str>,
        out: &mut W,
        err: &mut E,
    ) -> io::Result<Summary> {
        let pool = &mut self.batches;
        let here = &mut self.worker;
        thread::scope(|scope| {
            let mut crew = Crew {
                jobs: Vec::with_capacity(n - 1),
                results: Vec::with_capacity(n - 1),
                in_flight: vec![0; n - 1],
                pending: VecDeque::new(),
            };
            for _ in 1..n {
                let (job_tx, job_rx) = mpsc::channel::<Batch>();
                let (done_tx, done_rx) = mpsc::channel::<Batch>();
                let mut worker = Worker::new(here.job.fresh());
                let started = thread::Builder::new().spawn_scoped(scope, move || {
                    for mut batch in job_rx {
                        batch.mend(&mut worker, file);
                        if done_tx.send(batch).is_err() {
                            break;
                        }
                    }
                });
                if started.is_err() {
                    // The system will not start another thread: the run goes on with those it
                    // has (with none, this thread mends every batch).
                    break;
                }
                crew.jobs.push(job_tx);
                crew.results.push(done_rx);
            }
            let n = crew.jobs.len() + 1;
            let mut summary = Summary::default();
            let mut batch = pool.pop().unwrap_or_default();
            batch.reset();
            loop {
                let framed = match inputs.read_into(&mut batch.data) {
                    Ok(framed) => framed,
                    Err(e) => {
                        // What was read before the failure still gets its output.
                        batch.data.truncate(batch.ends.last().map_or(0, |e| e.end));
                        crew.hand_over(&mut batch, pool, here, file);
                        while crew.write_front(true, pool, out, err, &mut summary)? {}
                        out.flush()?;
                        return Err(e);
                    }
                };
                let end = framed.is_none();
                if let Some((line, too_large)) = framed {
                    let start = batch.ends.last().map_or(0, |e| e.end);
                    if batch.ends.is_empty() {
                        batch.first_line = line;
                    }
                    let size = batch.data.len() - start;
                    if too_large.is_none() && size >= HUGE {
                        // Written straight out once everything before it is.
                        let whole = std::mem::take(&mut batch.data);
                        batch.data.extend_from_slice(&whole[..start]);
                        let bytes = &whole[start..];
                        crew.hand_over(&mut batch, pool, here, file);
                        while crew.write_front(true, pool, out, err, &mut summary)? {}
                        summary.count(here.one_to(line, file, bytes, out)?);
                        here.write_out(out)?;
                        err.write_all(&here.buf.err)?;
                        here.buf.err.clear();
                        continue;
                    }
                    batch.ends.push(Entry {
                        end: batch.data.len(),
                        too_large,
                    });
                }
                let full = batch.data.len() >= BATCH_BYTES || batch.ends.len() >= BATCH_INPUTS;
                if !batch.ends.is_empty() && (end || full) {
                    // What is mended goes out; far ahead of the oldest batch, this thread waits
                    // for it rather than hold more.
                    while crew.write_front(false, pool, out, err, &mut summary)? {}
                    if crew.pending.len() >= MAX_PENDING * n {
                        crew.write_front(true, pool, out, err, &mut summary)?;
                    }
                    crew.hand_over(&mut batch, pool, here, file);
                }
                if end {
                    break;
                }
            }
            while crew.write_front(true, pool, out, err, &mut summary)? {}
            out.flush()?;
            Ok(summary)
        })
    }
}

/// Once this many batches per thread are mended but not written (one worker is slow), the
/// reading thread waits for the oldest rather than hold more.
const MAX_PENDING: usize = 4;

/// A batch on its way to being written.
enum Unwritten {
    /// Being mended by this worker.
    Worker(usize),
    /// Mended by the reading thread.
    Done(Batch),
}

/// The worker threads of a threaded run, and the batches not written yet.
struct Crew {
    jobs: Vec<mpsc::Sender<Batch>>,
    results: Vec<mpsc::Receiver<Batch>>,
    in_flight: Vec<usize>,
    pending: VecDeque<Unwritten>,
}

impl Crew {
    /// Hands `batch` (when it holds anything) to the least busy worker or, when every worker
    /// has [`IN_FLIGHT`] batches, mends it with `here`; then starts a fresh batch.
    fn hand_over(
        &mut self,
        batch: &mut Batch,
        pool: &mut Vec<Batch>,
        here: &mut Worker,
        file: Option<&str>,
    ) {
        if batch.ends.is_empty() {
            return;
        }
        let mut fresh = pool.pop().unwrap_or_default();
        fresh.reset();
        let mut full = std::mem::replace(batch, fresh);
        let least = (0..self.jobs.len()).min_by_key(|&w| self.in_flight[w]);
        match least {
            Some(w) if self.in_flight[w] < IN_FLIGHT => {
                // A worker only stops when its channel closes, so this cannot fail while we
                // hold it.
                self.jobs[w]
                    .send(full)
                    .expect("a worker thread stopped early");
                self.in_flight[w] += 1;
                self.pending.push_back(Unwritten::Worker(w));
            }
            _ => {
                full.mend(here, file);
                self.pending.push_back(Unwritten::Done(full));
            }
        }
    }

    /// Writes the oldest batch when it is mended, or (with `wait`) once its worker is done
    /// with it; whether one was written.
    fn write_front<W: Write, E: Write>(
        &mut self,
        wait: bool,
        pool: &mut Vec<Batch>,
        out: &mut W,
        err: &mut E,
        summary: &mut Summary,
    ) -> io::Result<bool> {
        let stopped = || io::Error::other("a worker thread stopped early");
        let done = match self.pending.pop_front() {
            None => return Ok(false),
            Some(Unwritten::Done(batch)) => batch,
            Some(Unwritten::Worker(w)) => {
                let batch = if wait {
                    self.results[w].recv().map_err(|_| stopped())?
                } else {
                    match self.results[w].try_recv() {
                        Ok(batch) => batch,
                        Err(mpsc::TryRecvError::Empty) => {
                            self.pending.push_front(Unwritten::Worker(w));
                            return Ok(false);
                        }
                        Err(mpsc::TryRecvError::Disconnected) => return Err(stopped()),
                    }
                };
                self.in_flight[w] -= 1;
                batch
            }
        };
        *summary = done.write(out, err, *summary)?;
        pool.push(done);
        Ok(true)
    }
}

/// Where one input of a batch ends, and its length when it was over the limit (the batch then
/// holds only its first bytes).
#[derive(Debug, Clone, Copy)]
struct Entry {
    end: usize,
    too_large: Option<u64>,
}

/// Inputs read together, and once mended, their output.
#[derive(Default)]
struct Batch {
    first_line: u64,
    data: Vec<u8>,
    ends: Vec<Entry>,
    buf: Output,
    /// Without records: after each error, how much of `out` and `err` had been written, so the
    /// two streams are written in step.
    steps: Vec<(usize, usize)>,
    failed: u64,
    /// Entries that were no input.
    skipped: u64,
}

impl Batch {
    fn reset(&mut self) {
        self.data.clear();
        self.ends.clear();
        self.buf.out.clear();
        self.buf.err.clear();
        self.steps.clear();
        self.failed = 0;
        self.skipped = 0;
    }

    /// Mends every input of the batch with `worker`, keeping the output in the batch.
    fn mend(&mut self, worker: &mut Worker, file: Option<&str>) {
        std::mem::swap(&mut worker.buf, &mut self.buf);
        let mut start = 0;
        for (i, entry) in self.ends.iter().enumerate() {
            let bytes = &self.data[start..entry.end];
            start = entry.end;
            let raw = match entry.too_large {
                Some(len) => RawInput::TooLarge { head: bytes, len },
                None => RawInput::Bytes(bytes),
            };
            match worker.one(self.first_line + i as u64, file, raw) {
                Some(true) => {}
                Some(false) => {
                    self.failed += 1;
                    if !worker.buf.err.is_empty() {
                        self.steps
                            .push((worker.buf.out.len(), worker.buf.err.len()));
                    }
                }
                None => self.skipped += 1,
            }
        }
        std::mem::swap(&mut worker.buf, &mut self.buf);
    }

    /// Writes the batch's output and adds its counts to `summary`.
    fn write<W: Write, E: Write>(
        &self,
        out: &mut W,
        err: &mut E,
        mut summary: Summary,
    ) -> io::Result<Summary> {
        let (mut out_at, mut err_at) = (0, 0);
        for &(out_end, err_end) in &self.steps {
            out.write_all(&self.buf.out[out_at..out_end])?;
            out.flush()?;
            err.write_all(&self.buf.err[err_at..err_end])?;
            err.flush()?;
            (out_at, err_at) = (out_end, err_end);
        }
        out.write_all(&self.buf.out[out_at..])?;
        summary.inputs += self.ends.len() as u64 - self.skipped;
        summary.failed += self.failed;
        Ok(summary)
    }
}

/// One input of a stream: its line (or record) number, the file it is in, and its bytes.
pub(crate) struct Item<'a> {
    pub line: u64,
    pub file: Option<&'a str>,
    pub raw: RawInput<'a>,
    /// For an input of many megabytes, where what `buf` held was just written: a job may
    /// write the value straight there rather than copy it into `buf`.
    pub direct: Option<&'a mut dyn Write>,
}

/// What a job writes: values and records, and the error records meant for stderr.
#[derive(Default)]
pub(crate) struct Output {
    pub out: Vec<u8>,
    pub err: Vec<u8>,
}

/// Runs its job on inputs one at a time, into its own output buffers.
struct Worker {
    job: Box<dyn Job>,
    buf: Output,
}

impl Worker {
    fn new(job: Box<dyn Job>) -> Worker {
        Worker {
            job,
            buf: Output {
                out: Vec::with_capacity(BLOCK + 4096),
                err: Vec::new(),
            },
        }
    }

    fn write_out<W: Write>(&mut self, out: &mut W) -> io::Result<()> {
        out.write_all(&self.buf.out)?;
        self.buf.out.clear();
        Ok(())
    }

    fn one(&mut self, line: u64, file: Option<&str>, raw: RawInput<'_>) -> Option<bool> {
        let item = Item {
            line,
            file,
            raw,
            direct: None,
        };
        let ok = panics::one_contained(&mut self.job, item, &mut self.buf);
        ok.expect("only the direct writer fails")
    }

    /// An input of many megabytes: what the buffer holds is written to `out` first, then the
    /// result (see [`Item::direct`]).
    fn one_to<W: Write>(
        &mut self,
        line: u64,
        file: Option<&str>,
        bytes: &[u8],
        out: &mut W,
    ) -> io::Result<Option<bool>> {
        self.write_out(out)?;
        let item = Item {
            line,
            file,
            raw: RawInput::Bytes(bytes),
            direct: Some(out),
        };
        panics::one_contained(&mut self.job, item, &mut self.buf)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::io::{BufReader, Read};

    /// Gives `data`, then fails.
    struct FailsAfter<'a>(&'a [u8]);

    impl Read for FailsAfter<'_> {
        fn read(&mut self, buf: &mut [u8]) -> io::Result<usize> {
            if self.0.is_empty() {
                return Err(io::Error::other("disk on fire"));
            }
            let n = buf.len().min(self.0.len());
            buf[..n].copy_from_slice(&self.0[..n]);
            self.0 = &self.0[n..];
            Ok(n)
        }
    }

    /// Batches mended by workers and by the reading thread (when the workers are full) come
    /// out in input order, with the same bytes as one thread writes.
    #[test]
    fn batches_mended_anywhere_come_out_in_order() {
        let mut data = String::new();
        for i in 0..200_000 {
            match i % 4 {
                0 => data.push_str(&format!("{{\"n\":{i}}}\n")),
                1 => data.push_str(&format!("{{'n': {i}, 'more': [1, 2,],}}\n")),
                2 => data.push_str(&format!("\"{{\\\"n\\\": {i}}}\"\n")),
                _ => data.push_str("[not an object]\n"),
            }
        }
        let run = |threads| {
            let mut filter = Filter::new(FilterOptions {
                threads,
                records: threads % 2 == 0,
                ..FilterOptions::default()
            });
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let summary = filter
                .run(data.as_bytes(), None, &mut out, &mut err)
                .unwrap();
            (summary, out, err)
        };
        let (one, records) = (run(1), run(2));
        assert_eq!((one.0.inputs, one.0.failed), (200_000, 50_000));
        assert_eq!(one.1.iter().filter(|&&b| b == b'\n').count(), 150_000);
        for threads in [3, 5] {
            assert!(run(threads) == one, "--threads {threads}");
        }
        assert!(run(4) == records);
        let lines: Vec<&[u8]> = records.1.split(|&b| b == b'\n').collect();
        assert_eq!(lines.len(), 200_001);
        for (i, line) in lines[..200_000].iter().enumerate() {
            let prefix = format!("{{\"ok\":{},\"line\":{}", i % 4 != 3, i + 1);
            assert!(line.starts_with(prefix.as_bytes()), "line {}", i + 1);
        }
    }

    #[test]
    fn a_read_error_comes_after_the_output_of_everything_read_before_it() {
        let data: String = (0..50_000).map(|i| format!("{{\"n\":{i}}}\n")).collect();
        for threads in [1, 2, 3] {
            let mut filter = Filter::new(FilterOptions {
                threads,
                ..FilterOptions::default()
            });
            let (mut out, mut err) = (Vec::new(), Vec::new());
            let reader = BufReader::with_capacity(4096, FailsAfter(data.as_bytes()));
            let e = filter.run(reader, None, &mut out, &mut err).unwrap_err();
            assert_eq!(e.to_string(), "disk on fire");
            assert_eq!(String::from_utf8(out).unwrap(), data, "threads {threads}");
        }
    }
}
