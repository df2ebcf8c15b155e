//! The calls fixtures: every record, and repair offsets from the reply.

use super::*;

#[test]
fn fixtures() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/calls");
    let bless = std::env::var_os("BLESS").is_some();
    let stdout = check(&dir, bless);
    if bless {
        return;
    }
    let passed: usize = stdout
        .trim_end()
        .strip_suffix(" passed, 0 failed")
        .unwrap_or_else(|| panic!("no summary line: {stdout}"))
        .parse()
        .unwrap();
    assert!(passed > 100, "only {passed} fixture cases found");
}

/// `check` compares the fields a case has: blessing a copy must change nothing, so every case
/// records its whole record (the value, the repairs, the whole error with its message).
#[test]
fn fixtures_record_their_whole_outcome() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/calls");
    let copy = Path::new(env!("CARGO_TARGET_TMPDIR")).join("calls-bless-copy");
    let _ = fs::remove_dir_all(&copy);
    fs::create_dir_all(&copy).unwrap();
    let mut files = Vec::new();
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        // tools.json too: the cases name it.
        if path
            .extension()
            .is_some_and(|e| e == "jsonl" || e == "json")
        {
            fs::copy(&path, copy.join(path.file_name().unwrap())).unwrap();
            files.push(path);
        }
    }
    check(&copy, true);
    for path in files {
        assert_eq!(
            fs::read_to_string(copy.join(path.file_name().unwrap())).unwrap(),
            fs::read_to_string(&path).unwrap(),
            "--bless would change {}",
            path.display()
        );
    }
}

/// A repair's `offset` counts from the reply, whatever the format (JSON arguments in Harmony,
/// Functionary, DSML, Mistral, Hunyuan, Kimi... are mended apart from the reply, and their
/// offsets counted from the arguments once): in every calls fixture whose input is text (not
/// an API response, whose `arguments` strings are JSON inside JSON), a call's `trailing_comma`
/// points at a `,` of the reply, and a `single_quotes` at a `'`. (A repair inside one
/// XML-style parameter's value counts from that value, which entities may have changed: such
/// calls are left out.)
#[test]
fn repair_offsets_count_from_the_reply_in_every_format() {
    let dir = Path::new(env!("CARGO_MANIFEST_DIR")).join("fixtures/calls");
    let mut seen = 0;
    for entry in fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|e| e != "jsonl") {
            continue;
        }
        for line in fs::read_to_string(&path).unwrap().lines() {
            let case: Value = serde_json::from_str(line).unwrap();
            let Some(input) = case["input"].as_str() else {
                continue;
            };
            if serde_json::from_str::<Value>(input).is_ok_and(|v| !v.is_string())
                || ["<parameter", "parameter>", "<arg_value>", "<arg_key>"]
                    .iter()
                    .any(|tag| input.contains(tag))
            {
                continue;
            }
            let calls = case["expect"]["calls"].as_array().into_iter().flatten();
            for repair in calls.flat_map(|c| c["repairs"].as_array().into_iter().flatten()) {
                let byte = match repair["kind"].as_str() {
                    Some("trailing_comma") => b',',
                    Some("single_quotes") => b'\'',
                    _ => continue,
                };
                let Some(offset) = repair["offset"].as_u64() else {
                    continue;
                };
                assert_eq!(
                    input.as_bytes().get(offset as usize),
                    Some(&byte),
                    "{}: {}: {repair} does not point at {:?} in the reply",
                    path.display(),
                    case["name"],
                    byte as char
                );
                seen += 1;
            }
        }
    }
    assert!(seen > 20, "only {seen} repairs checked");
}
