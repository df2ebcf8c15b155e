//! The few operating-system calls std does not offer: killing a whole process group and
//! noticing SIGINT/SIGTERM. Every `unsafe` block of the crate is here.

use std::io;
use std::sync::atomic::{AtomicI32, Ordering};

/// The signal that asked us to stop (0 while none has).
static STOP_SIGNAL: AtomicI32 = AtomicI32::new(0);

/// Kills every process in the group `pgid` with SIGKILL; a group that is already gone is fine.
pub fn kill_group(pgid: u32) {
    let Ok(pgid) = libc::pid_t::try_from(pgid) else {
        return;
    };
    // A pgid of 0 or 1 would mean our own group or init: never signal those.
    if pgid <= 1 {
        return;
    }
    // SAFETY: killpg only sends a signal; it touches no memory of ours.
    unsafe {
        libc::killpg(pgid, libc::SIGKILL);
    }
}

extern "C" fn on_stop_signal(signal: libc::c_int) {
    // Only an atomic store: the one thing that is async-signal-safe and all we need, since the
    // loop polls `stop_requested` while it waits for its children.
    STOP_SIGNAL.store(signal, Ordering::SeqCst);
}

/// Catches SIGINT and SIGTERM from now on: instead of dying (and leaving our children, which
/// run in their own process groups, behind), the process records the signal; the loop then
/// kills the running child's group and ends with [`Status::Interrupted`](super::Status).
///
/// # Errors
/// The handler could not be installed.
pub fn catch_stop_signals() -> io::Result<()> {
    for signal in [libc::SIGINT, libc::SIGTERM] {
        // SAFETY: the action is zero-initialised then filled in; the handler only does an
        // atomic store, which is async-signal-safe.
        let installed = unsafe {
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

/// The signal (SIGINT or SIGTERM) that asked the run to stop, if one has.
pub fn stop_requested() -> Option<i32> {
    match STOP_SIGNAL.load(Ordering::SeqCst) {
        0 => None,
        signal => Some(signal),
    }
}
