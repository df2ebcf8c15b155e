//! The module graph has no import circle (docs/architecture.md): per file, and per top-level
//! module (a folder and its files counted as one).

#[test]
fn no_module_imports_one_that_imports_it_back() {
    for scope in [None, Some("--dirs")] {
        let out = std::process::Command::new("python3")
            .arg("tests/import_circles.py")
            .arg(".")
            .args(scope)
            .current_dir(env!("CARGO_MANIFEST_DIR"))
            .output()
            .unwrap();
        let text = String::from_utf8_lossy(&out.stdout);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        assert!(text.starts_with("no circle among "), "{scope:?}:\n{text}");
    }
}
