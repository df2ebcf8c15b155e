//! The `args` and `repair` commands end to end: framing, output streams, records, exit status.

use std::io::{BufRead, BufReader, Write};
use std::process::{Command, Stdio};
use std::sync::mpsc;
use std::time::Duration;

use assert_cmd::Command as Cmd;
use predicates::prelude::*;
use serde_json::{Value, json};

#[path = "../common/mod.rs"]
mod common;
use common::{TempDir, repair_kinds, toolmend};

fn records(stdout: &[u8]) -> Vec<Value> {
    String::from_utf8(stdout.to_vec())
        .unwrap()
        .lines()
        .map(|l| serde_json::from_str(l).unwrap_or_else(|e| panic!("{e}: {l}")))
        .collect()
}

fn run_records(args: &[&str], stdin: impl Into<Vec<u8>>) -> (Vec<Value>, i32) {
    let out = toolmend().args(args).write_stdin(stdin).output().unwrap();
    (records(&out.stdout), out.status.code().unwrap())
}

mod output;
mod records;
mod threads;
