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

/// The stream learns formats from the one table: no code of the stream (calls/stream*,
/// calls/partial*, their folders' files included; their unit tests aside) names a format of
/// `calls/formats/mod.rs`'s table or writes a call marker of its own (a string literal
/// starting with `<`, `[` or `>>>`), so a format added to the table needs nothing there.
#[test]
fn the_stream_names_no_format_and_writes_no_marker() {
    let root = std::path::Path::new(env!("CARGO_MANIFEST_DIR")).join("crates/toolmend-core/src");
    let table = std::fs::read_to_string(root.join("calls/formats/mod.rs")).unwrap();
    let names: Vec<&str> = table
        .split("name: \"")
        .skip(1)
        .filter_map(|rest| rest.split('"').next())
        .collect();
    assert!(names.len() > 30, "{names:?}");
    let calls = root.join("calls");
    let mut files: Vec<std::path::PathBuf> = std::fs::read_dir(&calls)
        .unwrap()
        .map(|e| e.unwrap().path())
        .filter(|p| {
            let name = p.file_name().unwrap().to_string_lossy();
            name.starts_with("stream") || name.starts_with("partial")
        })
        .collect();
    // The stream and the partial reader split into folders: every file in them.
    for dir in files.clone().iter().filter(|p| p.is_dir()) {
        files.retain(|p| p != dir);
        files.extend(std::fs::read_dir(dir).unwrap().map(|e| e.unwrap().path()));
    }
    assert!(!files.is_empty());
    for file in files {
        let text = std::fs::read_to_string(&file).unwrap();
        let code = text.split("#[cfg(test)]").next().unwrap();
        for (n, line) in code.lines().enumerate() {
            let line = line.trim_start();
            if line.starts_with("//") {
                continue;
            }
            for literal in line.split('"').skip(1).step_by(2) {
                assert!(
                    !names.contains(&literal)
                        && !literal.starts_with('<')
                        && !literal.starts_with('[')
                        && !literal.starts_with(">>>"),
                    "{}:{}: {literal:?} is a format's name or marker: take it from the table",
                    file.display(),
                    n + 1
                );
            }
        }
    }
}
