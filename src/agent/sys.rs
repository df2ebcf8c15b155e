//! The few operating-system calls std does not offer: signalling a whole process group,
//! telling whether a group still has a live member, and noticing SIGINT/SIGTERM/SIGHUP. Every
//! `unsafe` block of the crate is here, but for one call of the parser's SSE2 string scan
//! (`parse::find_any_sse2`).

// This module is where the loop's operating-system calls are, so unsafe code is allowed here.
#![allow(unsafe_code)]

use std::io;
use std::sync::atomic::{AtomicI32, Ordering};

/// The signal that asked us to stop (0 while none has).
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// The signals that stop a run: Ctrl-C, `kill`, and the terminal going away.
const STOP_SIGNALS: [libc::c_int; 3] = [libc::SIGINT, libc::SIGTERM, libc::SIGHUP];

/// A process group id we may signal: never 0 or 1 (our own group, init).
fn group_id(pgid: u32) -> Option<libc::pid_t> {
    libc::pid_t::try_from(pgid).ok().filter(|&id| id > 1)
}

/// Sends `signal` to every process in the group `pgid`; a group that is already gone is fine.
pub fn signal_group(pgid: u32, signal: libc::c_int) {
    let Some(pgid) = group_id(pgid) else { return };
    // SAFETY: killpg only sends a signal; it touches no memory of ours.
    unsafe {
        libc::killpg(pgid, signal);
    }
}

/// Sends `signal` to the one process `pid` (never 0 or 1); one that is already gone is fine.
pub fn signal_process(pid: u32, signal: libc::c_int) {
    let Some(pid) = group_id(pid) else { return };
    // SAFETY: kill only sends a signal; it touches no memory of ours.
    unsafe {
        libc::kill(pid, signal);
    }
}

/// Kills every process in the group `pgid` with SIGKILL; a group that is already gone is fine.
pub fn kill_group(pgid: u32) {
    signal_group(pgid, libc::SIGKILL);
}

/// Whether the group `pgid` still has a member that is not a zombie.
///
/// `killpg(pgid, 0)` alone also counts zombies, and an orphan that died is a zombie until its
/// new parent reaps it, which a container's init may never do: so on Linux the members are
/// looked up in `/proc`. Where that cannot be read, a member that answers is taken as live.
pub fn group_alive(pgid: u32) -> bool {
    let Some(id) = group_id(pgid) else {
        return false;
    };
    // SAFETY: signal 0 only checks that the group exists and may be signalled.
    if unsafe { libc::killpg(id, 0) } != 0 {
        return io::Error::last_os_error().raw_os_error() != Some(libc::ESRCH);
    }
    let Ok(entries) = std::fs::read_dir("/proc") else {
        return true;
    };
    let mut seen_any = false;
    for entry in entries.flatten() {
        let name = entry.file_name();
        let Some(pid) = name
            .to_str()
            .filter(|n| n.bytes().all(|b| b.is_ascii_digit()))
        else {
            continue;
        };
        seen_any = true;
        let Ok(stat) = std::fs::read_to_string(format!("/proc/{pid}/stat")) else {
            continue;
        };
        // `pid (comm) state ppid pgrp …`; comm may hold spaces and parentheses.
        let Some(rest) = stat.rfind(')').map(|at| &stat[at + 1..]) else {
            continue;
        };
        let mut fields = rest.split_whitespace();
        let state = fields.next().unwrap_or("");
        let pgrp = fields.nth(1).and_then(|p| p.parse::<libc::pid_t>().ok());
        if pgrp == Some(id) && state != "Z" && state != "X" {
            return true;
        }
    }
    // No /proc to look in (not Linux, not mounted): trust killpg.
    !seen_any
}

extern "C" fn on_stop_signal(signal: libc::c_int) {
    // Only an atomic store: the one thing that is async-signal-safe and all we need, since the
    // loop polls `stop_requested` while it waits for its children.
    STOP_SIGNAL.store(signal, Ordering::SeqCst);
}

/// Catches SIGINT, SIGTERM and SIGHUP from now on: instead of dying (and leaving our children,
/// which run in their own process groups, behind), the process records the signal; the loop
/// then kills the running child's group and ends with [`Status::Interrupted`](super::Status).
///
/// A signal that was ignored when we started (`nohup`, a background job of a shell without
/// job control) stays ignored: whoever started us asked for that.
///
/// # Errors
/// The handler could not be installed.
pub fn catch_stop_signals() -> io::Result<()> {
    for signal in STOP_SIGNALS {
        // SAFETY: both actions are zero-initialised then filled in by the kernel or by us; the
        // handler only does an atomic store, which is async-signal-safe.
        let installed = unsafe {
            let mut current: libc::sigaction = std::mem::zeroed();
            if libc::sigaction(signal, std::ptr::null(), &mut current) != 0 {
                return Err(io::Error::last_os_error());
            }
            if current.sa_sigaction == libc::SIG_IGN {
                continue;
            }
            let mut action: libc::sigaction = std::mem::zeroed();
            action.sa_sigaction = on_stop_signal as extern "C" fn(libc::c_int) as usize;
            libc::sigemptyset(&mut action.sa_mask);
            action.sa_flags = libc::SA_RESTART;
            libc::sigaction(signal, &action, std::ptr::null_mut())
        };
        if installed != 0 {
            return Err(io::Error::last_os_error());
        }
    }
    Ok(())
}

/// The signal (SIGINT, SIGTERM or SIGHUP) that asked the run to stop, if one has.
pub fn stop_requested() -> Option<i32> {
    match STOP_SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::os::unix::process::CommandExt;
    use std::process::Command;

    #[test]
    fn a_group_is_alive_until_its_members_are_dead() {
        let mut child = Command::new("sleep")
            .arg("30")
            .process_group(0)
            .spawn()
            .unwrap();
        let pgid = child.id();
        assert!(group_alive(pgid));
        kill_group(pgid);
        // Killed, not yet reaped: the leader is a zombie, which killpg still reaches, so this
        // goes through the /proc scan, which must not count it.
        let until = std::time::Instant::now() + std::time::Duration::from_secs(5);
        while group_alive(pgid) {
            assert!(
                std::time::Instant::now() < until,
                "a zombie leader counts as alive"
            );
            std::thread::sleep(std::time::Duration::from_millis(5));
        }
        let _ = child.wait();
        assert!(!group_alive(pgid));
        assert!(!group_alive(0));
        assert!(!group_alive(1));
    }
}
