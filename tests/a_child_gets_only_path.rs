//! A child process is handed `PATH` and nothing else (the README's security properties): run for
//! real, `env` prints exactly one variable, and the token held in the
//! snapshot never reaches it.

use std::process::Output;

use meterwire::{Env, child_command};

const TOKEN: &str = "mw-live-4f9c2a7e1b3d5f60";

fn run(program: &str, snapshot: &Env) -> Output {
    child_command(program, snapshot)
        .output()
        .expect("env runs on this machine")
}

fn full_snapshot() -> Env {
    Env::from_pairs([
        ("PATH", "/usr/bin:/bin"),
        ("CHANT_BEHAVIOUR_TOKEN", TOKEN),
        ("BEHAVIOUR_TOKEN", TOKEN),
        ("CHANT_BEHAVIOUR_ENGINE", "https://engine.example/v1"),
        ("HOME", "/home/predictor"),
        ("HTTP_PROXY", "http://127.0.0.1:3128"),
        ("LD_PRELOAD", "/tmp/not-a-library.so"),
    ])
}

#[test]
fn a_child_sees_exactly_the_path_of_the_snapshot() {
    let output = run("env", &full_snapshot());
    assert!(output.status.success(), "{output:?}");
    assert_eq!(
        String::from_utf8_lossy(&output.stdout),
        "PATH=/usr/bin:/bin\n"
    );
}

#[test]
fn a_child_never_sees_the_token() {
    let output = run("env", &full_snapshot());
    assert!(output.status.success(), "{output:?}");
    for stream in [&output.stdout, &output.stderr] {
        assert!(!String::from_utf8_lossy(stream).contains(TOKEN));
    }
}

#[test]
fn a_child_gets_an_empty_path_when_the_snapshot_has_none() {
    let snapshot = Env::from_pairs([("CHANT_BEHAVIOUR_TOKEN", TOKEN), ("HOME", "/root")]);
    // With PATH empty the child cannot be found by name.
    let output = run("/usr/bin/env", &snapshot);
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "PATH=\n");
}

#[test]
fn a_child_inherits_nothing_from_the_parent_process() {
    // The test process has a PATH of its own; the child's environment is
    // built from the (empty) snapshot alone.
    assert!(std::env::var_os("PATH").is_some_and(|path| !path.is_empty()));
    let output = run("/usr/bin/env", &Env::new());
    assert!(output.status.success(), "{output:?}");
    assert_eq!(String::from_utf8_lossy(&output.stdout), "PATH=\n");
}
