//! Whether toolmend was started with stderr closed (`2>&-`).
//!
//! Rust's runtime opens `/dev/null` on a closed standard descriptor before `main`, so from
//! `main` a closed stderr looks like one that takes every write. `loop --verbose` promises its
//! events on stderr and must fail closed when they cannot be shown; so the descriptor is looked
//! at earlier, by a constructor the C runtime runs before Rust's (the `.init_array` of ELF,
//! `__mod_init_func` of Mach-O). Elsewhere the answer is always "open".

// The constructor's registration and its one fcntl call are unsafe code; nothing else is here.
#![allow(unsafe_code)]

use std::sync::atomic::{AtomicBool, Ordering};

static CLOSED_AT_START: AtomicBool = AtomicBool::new(false);

/// Whether descriptor 2 was closed when the process started.
pub fn closed_at_start() -> bool {
    CLOSED_AT_START.load(Ordering::Relaxed)
}

#[cfg(unix)]
extern "C" fn look_at_stderr() {
    // SAFETY: fcntl(F_GETFD) only reads the descriptor's flags; -1 (EBADF) means it is closed.
    let closed = unsafe { libc::fcntl(2, libc::F_GETFD) } == -1;
    CLOSED_AT_START.store(closed, Ordering::Relaxed);
}

#[cfg(any(target_os = "linux", target_os = "android", target_os = "freebsd"))]
#[used]
#[unsafe(link_section = ".init_array")]
static LOOK_AT_STDERR: extern "C" fn() = look_at_stderr;

#[cfg(target_vendor = "apple")]
#[used]
#[unsafe(link_section = "__DATA,__mod_init_func")]
static LOOK_AT_STDERR: extern "C" fn() = look_at_stderr;
