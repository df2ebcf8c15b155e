//! The fuzz targets (`fuzz/`, a crate of their own, see docs/guarantees.md) keep compiling
//! against the library: `cargo check` on them, with libFuzzer's C++ build turned off
//! (`--no-default-features`), so this needs neither cargo-fuzz, a nightly toolchain nor
//! `RUSTC_BOOTSTRAP`. Running the fuzzers is `make fuzz`, not part of the tests.
//!
//! The check builds into `target/fuzz-check`, so only the first run compiles the
//! dependencies. `TOOLMEND_SKIP_FUZZ_CHECK=1` skips it (saying so).

use std::path::Path;
use std::process::Command;

#[test]
fn fuzz_targets_compile() {
    if std::env::var_os("TOOLMEND_SKIP_FUZZ_CHECK").is_some() {
        eprintln!("skipped: TOOLMEND_SKIP_FUZZ_CHECK is set");
        return;
    }
    let root = Path::new(env!("CARGO_MANIFEST_DIR"));
    let cargo = std::env::var_os("CARGO").unwrap_or_else(|| "cargo".into());
    let output = Command::new(cargo)
        .current_dir(root)
        .args([
            "check",
            "--quiet",
            "--locked",
            "--no-default-features",
            "--bins",
        ])
        .arg("--manifest-path")
        .arg(root.join("fuzz/Cargo.toml"))
        .arg("--target-dir")
        .arg(root.join("target/fuzz-check"))
        // The targets are checked as they are written: no nightly flags, no sanitizer.
        .env_remove("RUSTC_BOOTSTRAP")
        .env_remove("RUSTFLAGS")
        .output()
        .expect("cargo runs");
    assert!(
        output.status.success(),
        "cargo check of the fuzz targets failed:\n{}",
        String::from_utf8_lossy(&output.stderr)
    );
}
