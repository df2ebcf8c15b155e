//! What each published crate ships (`cargo package --list`): its sources, README and licenses,
//! and none of the measurements, fixtures, fuzz targets or packages that stay in the repository.
//! `make test-install` builds and verifies the packages themselves (`cargo package --workspace`).

use std::process::Command;

fn packaged_files(package: &str) -> Vec<String> {
    let cargo = std::env::var("CARGO").unwrap_or_else(|_| "cargo".into());
    let out = Command::new(cargo)
        .args([
            "package",
            "--list",
            "--allow-dirty",
            "--offline",
            "-p",
            package,
        ])
        .current_dir(env!("CARGO_MANIFEST_DIR"))
        .output()
        .expect("cargo runs");
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    String::from_utf8(out.stdout)
        .unwrap()
        .lines()
        .map(str::to_owned)
        .collect()
}

fn check(package: &str, entry: &str) {
    let files = packaged_files(package);
    for needed in [
        entry,
        "Cargo.toml",
        "README.md",
        "LICENSE-MIT",
        "LICENSE-APACHE",
    ] {
        assert!(files.iter().any(|f| f == needed), "{package}: no {needed}");
    }
    let stays_home = [
        "bench/",
        "compare/",
        "fixtures/",
        "fuzz/",
        "python/",
        "node/",
        "tests/",
    ];
    let leaked: Vec<&String> = files
        .iter()
        .filter(|f| {
            stays_home.iter().any(|dir| f.starts_with(dir))
                || f.starts_with('.') && !f.starts_with(".cargo_vcs")
        })
        .collect();
    assert!(leaked.is_empty(), "{package} ships {leaked:?}");
}

#[test]
fn the_binary_crate_ships_its_sources_and_no_measurements() {
    check("toolmend", "src/main.rs");
    let files = packaged_files("toolmend");
    assert!(files.iter().any(|f| f == "src/lib.rs"));
    assert!(!files.iter().any(|f| f.starts_with("crates/")));
}

#[test]
fn the_core_crate_ships_its_sources_readme_and_licenses() {
    check("toolmend-core", "src/lib.rs");
}
