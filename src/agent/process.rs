//! Running one child command: argv (never a shell), input on stdin, in its own process group,
//! under a deadline, with stdout and stderr read concurrently and kept up to a size bound.
//!
//! Both output streams are drained on their own threads, so a child that writes megabytes to
//! stderr while we wait for stdout cannot deadlock on a full pipe; stdin is written on a thread
//! too, so a child that never reads it cannot block us. When the child ends, times out or the
//! run is interrupted, its whole process group is stopped: SIGTERM first, so that a well-behaved
//! program can clean up, then SIGKILL for whatever is still alive after one second
//! (`KILL_GRACE`). A tool's background children die with it and cannot hold our pipes open.

use std::ffi::CString;
use std::io::{self, Read, Write};
use std::os::unix::ffi::OsStrExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, ExitStatus, Stdio};
use std::sync::{Arc, Mutex, mpsc};
use std::thread;
use std::time::{Duration, Instant};

use super::sys;

/// How long to wait for the output threads once the process group is dead. They only wait
/// on pipes a process outside the group (one that called `setsid`) could still hold.
const DRAIN_GRACE: Duration = Duration::from_millis(500);

/// Pieces of stdout (up to 64 KiB each) waiting for the watcher, at most.
const PIECES: usize = 16;

/// How long a stopped child's process group has between SIGTERM and SIGKILL.
const KILL_GRACE: Duration = Duration::from_secs(1);

/// Which process group a child runs in.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Group {
    /// A new group of its own: a timeout or a stop kills everything it started.
    Own,
    /// Ours, so it may use the terminal (a process in a background group that reads the
    /// terminal is stopped by SIGTTIN); a timeout kills only the child itself.
    Shared,
}

/// How a child's run ended.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Ended {
    /// It exited (or was killed by a signal not of ours).
    Exited(ExitStatus),
    /// The deadline passed; its process group was killed.
    TimedOut,
    /// SIGINT, SIGTERM or SIGHUP reached us; its process group was killed.
    Interrupted,
    /// The watcher of its stdout (see [`run_watched`]) had read enough; its process group
    /// was stopped.
    Stopped,
}

/// Why a child's run stops the whole run rather than fail on its own.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Cut {
    /// The run's deadline passed while it ran; its group was killed.
    RunTimedOut,
    /// A stop signal arrived while it ran; its group was killed.
    Interrupted,
}

impl Ended {
    /// Whether this end stops the whole run: a stop signal, or a timeout at the run's own
    /// deadline (`run_deadline`) rather than the child's.
    pub fn cut(self, run_deadline: Instant) -> Option<Cut> {
        match self {
            Ended::Interrupted => Some(Cut::Interrupted),
            Ended::TimedOut if Instant::now() >= run_deadline => Some(Cut::RunTimedOut),
            _ => None,
        }
    }
}

/// What a child wrote on one stream: the first bytes up to the bound, and how many it wrote.
#[derive(Debug, Clone, Default, PartialEq, Eq)]
pub struct Captured {
    /// The bytes kept (at most the bound).
    pub bytes: Vec<u8>,
    /// How many bytes the child wrote in all.
    pub total: u64,
}

impl Captured {
    /// Whether bytes were dropped past the bound.
    pub fn truncated(&self) -> bool {
        self.total > self.bytes.len() as u64
    }

    /// The kept bytes as text (invalid UTF-8 replaced).
    pub fn text(&self) -> String {
        String::from_utf8_lossy(&self.bytes).into_owned()
    }
}

/// A finished child run.
#[derive(Debug, Clone)]
pub struct Finished {
    /// How it ended.
    pub ended: Ended,
    /// Its standard output.
    pub stdout: Captured,
    /// Its standard error.
    pub stderr: Captured,
    /// Wall time from spawn to end.
    pub elapsed: Duration,
}

impl Finished {
    /// Whether it exited with status 0.
    pub fn succeeded(&self) -> bool {
        matches!(self.ended, Ended::Exited(status) if status.success())
    }

    /// A few words on how it ended: `exit status 3`, `killed by signal 9`, `timed out`.
    pub fn describe(&self) -> String {
        use std::os::unix::process::ExitStatusExt;
        match self.ended {
            Ended::Exited(status) => match (status.code(), status.signal()) {
                (Some(code), _) => format!("exit status {code}"),
                (None, Some(signal)) => format!("killed by signal {signal}"),
                (None, None) => "ended".to_owned(),
            },
            Ended::TimedOut => "timed out".to_owned(),
            Ended::Interrupted => "interrupted".to_owned(),
            Ended::Stopped => "stopped once its output was read".to_owned(),
        }
    }
}

/// Why `program` cannot be started, looked for the way starting it will look (a name with a
/// `/` is a path; a bare name is searched in `PATH`): not found, a directory, not executable.
/// `None` when it can be, as far as can be told before starting it (an executable script whose
/// interpreter is missing still fails then: see [`cannot_start`]).
pub fn unstartable(program: &str) -> Option<String> {
    if program.contains('/') {
        return why_not_executable(Path::new(program));
    }
    let Some(path) = std::env::var_os("PATH") else {
        return None; // the system's default search path: left to the start itself
    };
    let mut first_problem = None;
    for dir in std::env::split_paths(&path) {
        // An empty entry is the current directory, as for execvp.
        let candidate = if dir.as_os_str().is_empty() {
            PathBuf::from(program)
        } else {
            dir.join(program)
        };
        match why_not_executable(&candidate) {
            None => return None,
            Some(why) if candidate.exists() => {
                first_problem.get_or_insert(why);
            }
            Some(_) => {}
        }
    }
    Some(first_problem.unwrap_or_else(|| "not found in PATH".to_owned()))
}

/// Why the file at `path` cannot be executed, if it cannot.
fn why_not_executable(path: &Path) -> Option<String> {
    let meta = match std::fs::metadata(path) {
        Ok(meta) => meta,
        Err(e) if e.kind() == io::ErrorKind::NotFound => return Some("no such file".to_owned()),
        Err(e) => return Some(e.to_string()),
    };
    if meta.is_dir() {
        return Some(format!("{} is a directory", path.display()));
    }
    let Ok(c_path) = CString::new(path.as_os_str().as_bytes()) else {
        return Some("the path holds a NUL byte".to_owned());
    };
    // SAFETY: access reads the NUL-terminated path and touches nothing else.
    #[allow(unsafe_code)]
    let not_executable = unsafe { libc::access(c_path.as_ptr(), libc::X_OK) } != 0;
    if not_executable {
        return Some(format!("{} is not executable", path.display()));
    }
    None
}

/// Whether a failure to start a command says that the command itself is wrong (missing, not
/// executable, a missing interpreter, not a program), so that trying again cannot help; not
/// a passing shortage (threads, memory, file descriptors).
pub fn cannot_start(error: &io::Error) -> bool {
    matches!(
        error.raw_os_error(),
        Some(
            libc::ENOENT
                | libc::EACCES
                | libc::ENOEXEC
                | libc::ENOTDIR
                | libc::EISDIR
                | libc::ELOOP
                | libc::ENAMETOOLONG
                | libc::EPERM
        )
    )
}

/// The earlier of `timeout` from now and `limit` (a huge timeout cannot overflow).
pub fn deadline(timeout: Duration, limit: Instant) -> Instant {
    Instant::now()
        .checked_add(timeout)
        .map_or(limit, |end| end.min(limit))
}

/// Runs `argv` with `input` on stdin until it exits, `deadline` passes or a stop signal
/// arrives, keeping at most `max_output` bytes of each output stream.
///
/// # Errors
/// The command could not be started (not found, not executable, empty argv).
pub fn run(
    argv: &[String],
    input: &[u8],
    deadline: Instant,
    max_output: usize,
    group: Group,
) -> io::Result<Finished> {
    run_watched(argv, input, deadline, max_output, group, None)
}

/// Given each piece of a child's stdout (see [`run_watched`]).
pub type Watcher<'a> = dyn FnMut(&[u8]) -> Watch + 'a;

/// What a watcher of a child's stdout says after each piece.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Watch {
    /// Go on reading.
    More,
    /// Enough was read: stop the child ([`Ended::Stopped`]).
    Stop,
}

/// [`run`], with `watch` given each piece of stdout as it arrives (on this thread, while the
/// deadline and stop signals are still watched), up to `max_output` bytes; after a
/// [`Watch::Stop`] no more are given. The pieces go to the watcher only: so that a reply is
/// held once, [`Finished::stdout`] then counts stdout's bytes (`total`) but keeps none.
///
/// # Errors
/// As [`run`].
pub fn run_watched(
    argv: &[String],
    input: &[u8],
    deadline: Instant,
    max_output: usize,
    group: Group,
    watch: Option<&mut Watcher<'_>>,
) -> io::Result<Finished> {
    run_stopping_within(argv, input, deadline, max_output, group, watch, KILL_GRACE)
}

/// [`run_watched`], with `grace` between SIGTERM and SIGKILL when the child is stopped (tests
/// give a long one, to see that a child leaving on SIGTERM is not waited for).
fn run_stopping_within(
    argv: &[String],
    input: &[u8],
    deadline: Instant,
    max_output: usize,
    group: Group,
    mut watch: Option<&mut Watcher<'_>>,
    grace: Duration,
) -> io::Result<Finished> {
    let (program, args) = argv
        .split_first()
        .ok_or_else(|| io::Error::new(io::ErrorKind::InvalidInput, "empty command"))?;
    let started = Instant::now();
    let mut command = Command::new(program);
    command
        .args(args)
        .stdin(Stdio::piped())
        .stdout(Stdio::piped())
        .stderr(Stdio::piped());
    if group == Group::Own {
        // Its own group, so one killpg reaches everything it starts, and a Ctrl-C at the
        // terminal reaches only us: we decide what dies.
        command.process_group(0);
    }
    let mut child = command.spawn()?;

    if let Some(mut stdin) = child.stdin.take() {
        let input = input.to_vec();
        // A child that exits without reading gives EPIPE here: that is its business.
        thread::spawn(move || {
            let _ = stdin.write_all(&input);
        });
    }
    let (sender, receiver) = mpsc::channel();
    let outputs = [
        Arc::new(Mutex::new(Captured::default())),
        Arc::new(Mutex::new(Captured::default())),
    ];
    let mut streams = 0;
    // The pieces of stdout for the watcher; bounded, so that a child writing faster than
    // the watcher reads waits on its pipe instead of filling our memory.
    let (pieces, watched) = match watch {
        Some(_) => {
            let (tx, rx) = mpsc::sync_channel(PIECES);
            (Some(tx), Some(rx))
        }
        None => (None, None),
    };
    if let Some(stdout) = child.stdout.take() {
        spawn_reader(
            stdout,
            max_output,
            outputs[0].clone(),
            sender.clone(),
            pieces,
        );
        streams += 1;
    }
    if let Some(stderr) = child.stderr.take() {
        spawn_reader(stderr, max_output, outputs[1].clone(), sender, None);
        streams += 1;
    }

    let mut pause = Duration::from_millis(1);
    let ended = loop {
        match child.try_wait() {
            Ok(Some(status)) => break Ended::Exited(status),
            Ok(None) => {}
            Err(e) => {
                stop(&mut child, group, grace);
                return Err(e);
            }
        }
        if sys::stop_requested().is_some() {
            break Ended::Interrupted;
        }
        let now = Instant::now();
        if now >= deadline {
            break Ended::TimedOut;
        }
        let wait = pause.min(deadline - now);
        pause = (pause * 2).min(Duration::from_millis(20));
        match (&watched, &mut watch) {
            (Some(rx), Some(watch)) => match rx.recv_timeout(wait) {
                Ok(piece) => {
                    pause = Duration::from_millis(1);
                    if watch(&piece) == Watch::Stop {
                        break Ended::Stopped;
                    }
                }
                Err(mpsc::RecvTimeoutError::Timeout) => {}
                // stdout is closed; the child may still be running.
                Err(mpsc::RecvTimeoutError::Disconnected) => thread::sleep(wait),
            },
            _ => thread::sleep(wait),
        }
    };
    // Also after a normal exit: whatever it left running in the background goes with it.
    if group == Group::Own || !matches!(ended, Ended::Exited(_)) {
        stop(&mut child, group, grace);
    }

    // What the child wrote before it exited, not yet watched: given until its stdout closes
    // (the reader ends), then the channel is dropped, so that a reader held by a pipe an
    // escaped process keeps open is not blocked on it.
    if let (Some(rx), Some(watch)) = (&watched, &mut watch) {
        let until = Instant::now() + DRAIN_GRACE;
        let mut stopped = !matches!(ended, Ended::Exited(_));
        while let Ok(piece) = rx.recv_timeout(until.saturating_duration_since(Instant::now())) {
            if !stopped && watch(&piece) == Watch::Stop {
                stopped = true;
            }
        }
    }
    drop(watched);

    let drain_until = Instant::now() + DRAIN_GRACE;
    for _ in 0..streams {
        let wait = drain_until.saturating_duration_since(Instant::now());
        if receiver.recv_timeout(wait).is_err() {
            // Kept what was read so far; the reader ends when the pipe's last holder does.
            break;
        }
    }
    // Taken, not copied: a reply may be megabytes.
    let [stdout, stderr] = outputs.map(|shared| {
        shared
            .lock()
            .map(|mut captured| std::mem::take(&mut *captured))
            .unwrap_or_default()
    });
    Ok(Finished {
        ended,
        stdout,
        stderr,
        elapsed: started.elapsed(),
    })
}

/// Stops a child: its whole process group for [`Group::Own`] (what it started in the
/// background too), the child alone for [`Group::Shared`]. SIGTERM (and SIGCONT, so that a
/// stopped process gets it) first; SIGKILL for whatever is still alive after `grace`
/// ([`KILL_GRACE`]). The child is reaped when this returns.
fn stop(child: &mut Child, group: Group, grace: Duration) {
    let id = child.id();
    let alive = |child: &mut Child| match group {
        // Reaping the leader first, so that it does not count as alive as a zombie.
        Group::Own => {
            let _ = child.try_wait();
            sys::group_alive(id)
        }
        Group::Shared => matches!(child.try_wait(), Ok(None)),
    };
    if !alive(child) {
        return;
    }
    match group {
        Group::Own => {
            sys::signal_group(id, libc::SIGTERM);
            sys::signal_group(id, libc::SIGCONT);
        }
        Group::Shared => sys::signal_process(id, libc::SIGTERM),
    }
    let until = Instant::now() + grace;
    let mut pause = Duration::from_millis(1);
    while alive(child) {
        let now = Instant::now();
        if now >= until {
            match group {
                Group::Own => sys::kill_group(id),
                Group::Shared => {
                    let _ = child.kill();
                }
            }
            let _ = child.wait();
            return;
        }
        thread::sleep(pause.min(until - now));
        pause = (pause * 2).min(Duration::from_millis(10));
    }
}

/// Reads a stream to its end on a thread into `into`, keeping the first `max` bytes and
/// counting the rest, then says so on `done`. With `pieces`, what it keeps is sent there
/// instead (until the receiver is gone), and only counted in `into`.
fn spawn_reader(
    mut stream: impl Read + Send + 'static,
    max: usize,
    into: Arc<Mutex<Captured>>,
    done: mpsc::Sender<()>,
    mut pieces: Option<mpsc::SyncSender<Vec<u8>>>,
) {
    let watched = pieces.is_some();
    thread::spawn(move || {
        let mut chunk = vec![0u8; 64 * 1024];
        loop {
            match stream.read(&mut chunk) {
                Ok(0) => break,
                Ok(n) => {
                    let Ok(mut captured) = into.lock() else { break };
                    // What is kept is the first `max` bytes, whether here or sent.
                    let kept = captured.total.min(max as u64) as usize;
                    let take = n.min(max - kept);
                    captured.total += n as u64;
                    if !watched {
                        captured.bytes.extend_from_slice(&chunk[..take]);
                    } else if let Some(sender) = &pieces {
                        drop(captured);
                        if take > 0 && sender.send(chunk[..take].to_vec()).is_err() {
                            pieces = None;
                        }
                    }
                }
                Err(e) if e.kind() == io::ErrorKind::Interrupted => {}
                Err(_) => break,
            }
        }
        let _ = done.send(());
    });
}

#[cfg(test)]
mod tests {
    use super::*;

    fn sh(script: &str) -> Vec<String> {
        vec!["sh".into(), "-c".into(), script.into()]
    }

    fn soon(seconds: f64) -> Instant {
        Instant::now() + Duration::from_secs_f64(seconds)
    }

    /// What the commands that must be cut short would take: far past [`CUT_SHORT`].
    const HANG: &str = "sleep 120";
    /// The bound on a run that was cut short rather than waited out (a guard against a hang,
    /// not a measure of speed: a loaded machine does not take a run near it).
    const CUT_SHORT: Duration = Duration::from_secs(60);

    #[test]
    fn input_in_output_out() {
        let done = run(
            &sh("cat; echo oops >&2; exit 3"),
            b"hello",
            soon(10.0),
            100,
            Group::Own,
        )
        .unwrap();
        assert_eq!(done.stdout.bytes, b"hello");
        assert_eq!(done.stderr.bytes, b"oops\n");
        assert_eq!(done.describe(), "exit status 3");
        assert!(!done.succeeded());
    }

    #[test]
    fn output_is_bounded_and_counted() {
        let done = run(
            &sh("head -c 100000 /dev/zero"),
            b"",
            soon(10.0),
            1000,
            Group::Own,
        )
        .unwrap();
        assert_eq!(done.stdout.bytes.len(), 1000);
        assert_eq!(done.stdout.total, 100_000);
        assert!(done.stdout.truncated());
    }

    #[test]
    fn deadline_kills_the_group() {
        let started = Instant::now();
        let done = run(
            &sh(&format!("{HANG} & {HANG}")),
            b"",
            soon(0.2),
            100,
            Group::Own,
        )
        .unwrap();
        assert_eq!(done.ended, Ended::TimedOut);
        assert!(started.elapsed() < CUT_SHORT);
    }

    #[test]
    fn sigterm_comes_first_and_sigkill_after_the_grace() {
        // Leaves at once on SIGTERM, having said so: not waited for, even with a grace of
        // twice the bound (a stop that waited the grace out would take it past the bound).
        let done = run_stopping_within(
            &sh("trap 'echo got TERM; exit 0' TERM; echo ready; while :; do sleep 0.05; done"),
            b"",
            soon(0.5),
            100,
            Group::Own,
            None,
            CUT_SHORT * 2,
        )
        .unwrap();
        assert_eq!(done.ended, Ended::TimedOut);
        assert!(done.elapsed < CUT_SHORT, "{:?}", done.elapsed);
        assert_eq!(done.stdout.text(), "ready\ngot TERM\n");
        // Ignores it: SIGKILL a grace later.
        let done = run(
            &sh(&format!("trap '' TERM; {HANG}")),
            b"",
            soon(0.1),
            100,
            Group::Own,
        )
        .unwrap();
        assert_eq!(done.ended, Ended::TimedOut);
        assert!(done.elapsed >= KILL_GRACE, "{:?}", done.elapsed);
        assert!(done.elapsed < CUT_SHORT, "{:?}", done.elapsed);
    }

    #[test]
    fn output_read_before_an_escaped_child_holds_the_pipe_is_kept() {
        // setsid puts the sleeper outside the group, so it keeps stdout open past the kill.
        let pid_file =
            std::env::temp_dir().join(format!("toolmend-escaped-{}", std::process::id()));
        let script = format!(
            "echo early; setsid sh -c 'echo $$ > {}; exec {HANG}' &",
            pid_file.display()
        );
        let started = Instant::now();
        let done = run(&sh(&script), b"", soon(100.0), 100, Group::Own).unwrap();
        let took = started.elapsed();
        // The escaped sleeper is ours to end.
        let pid = std::fs::read_to_string(&pid_file).unwrap_or_default();
        let _ = std::fs::remove_file(&pid_file);
        if let Ok(pid) = pid.trim().parse::<u32>() {
            sys::kill_group(pid);
        }
        assert!(took < CUT_SHORT, "{took:?}");
        assert_eq!(done.stdout.bytes, b"early\n");
    }

    #[test]
    fn a_watcher_gets_stdout_as_it_comes_and_can_stop_the_child() {
        // Everything, up to the bound; the bytes go to the watcher only, and are counted.
        let mut seen = Vec::new();
        let mut watch = |piece: &[u8]| {
            seen.extend_from_slice(piece);
            Watch::More
        };
        let done = run_watched(
            &sh("printf abc; sleep 0.1; printf def"),
            b"",
            soon(10.0),
            5,
            Group::Own,
            Some(&mut watch),
        )
        .unwrap();
        assert_eq!(seen, b"abcde");
        assert_eq!(done.stdout.total, 6);
        assert!(done.stdout.bytes.is_empty());
        assert!(done.succeeded());
        // Stopped at the first piece: the child (which would sleep 120 s) and its group end.
        let started = Instant::now();
        let mut watch = |piece: &[u8]| {
            if piece.starts_with(b"call") {
                Watch::Stop
            } else {
                Watch::More
            }
        };
        let done = run_watched(
            &sh(&format!("printf call; {HANG} & {HANG}")),
            b"",
            soon(20.0),
            100,
            Group::Own,
            Some(&mut watch),
        )
        .unwrap();
        assert_eq!(done.ended, Ended::Stopped);
        assert!(started.elapsed() < CUT_SHORT, "{:?}", started.elapsed());
    }

    #[test]
    fn missing_command_is_an_error() {
        assert!(
            run(
                &["/nonexistent/toolmend-test".into()],
                b"",
                soon(1.0),
                10,
                Group::Own
            )
            .is_err()
        );
        assert!(run(&[], b"", soon(1.0), 10, Group::Own).is_err());
        let e = run(
            &["/nonexistent/toolmend-test".into()],
            b"",
            soon(1.0),
            10,
            Group::Own,
        )
        .unwrap_err();
        assert!(cannot_start(&e), "{e}");
    }

    #[test]
    fn unstartable_programs_are_named_before_they_run() {
        assert_eq!(unstartable("sh"), None);
        assert_eq!(unstartable("/bin/sh"), None);
        assert_eq!(
            unstartable("toolmend-no-such-program").as_deref(),
            Some("not found in PATH")
        );
        assert_eq!(
            unstartable("/nonexistent/x").as_deref(),
            Some("no such file")
        );
        assert!(unstartable("/").unwrap().contains("is a directory"));
        let dir = std::env::temp_dir().join(format!("toolmend-unstartable-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        let plain = dir.join("plain");
        std::fs::write(&plain, "#!/bin/sh\n").unwrap();
        let found = unstartable(plain.to_str().unwrap());
        // Written without an execute bit: access(X_OK) refuses it, even for root.
        assert!(found.unwrap().contains("is not executable"));
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
