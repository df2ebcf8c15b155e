//! The module graph of both crates (the core library and the binary) has no import circle
//! (docs/architecture.md): per file, and per top-level module (a folder and its files counted as
//! one); and the top-level modules import only those declared below them.

mod common;

/// `tests/import_circles.py . EXTRA…` run from the crate root: its stdout, once it succeeded.
fn import_circles(extra: &[&str]) -> String {
    let args: Vec<&str> = ["tests/import_circles.py", "."]
        .into_iter()
        .chain(extra.iter().copied())
        .collect();
    String::from_utf8_lossy(&common::python3(&args)).into_owned()
}

#[test]
fn no_module_imports_one_that_imports_it_back() {
    for scope in [&[][..], &["--dirs"][..]] {
        let text = import_circles(scope);
        assert!(text.starts_with("no circle among "), "{scope:?}:\n{text}");
    }
}

/// The args stages are declared in `src/args/mod.rs` in the order they run, and none imports a
/// later one.
#[test]
fn no_args_stage_imports_a_later_one() {
    let text = import_circles(&["--stage-order"]);
    assert!(
        text.starts_with("stages in order: locate unquote "),
        "{text}"
    );
    assert!(text.contains("(no stage imports a later one)"), "{text}");
}

/// The top-level modules of both crates import only modules below them in the order
/// docs/architecture.md declares (`LAYERS` in tests/import_circles.py), and none is left out.
#[test]
fn every_import_points_down_the_declared_layers() {
    let text = import_circles(&["--layers"]);
    assert!(text.starts_with("layers in order: "), "{text}");
    assert!(text.contains("(every import points down)"), "{text}");
}
