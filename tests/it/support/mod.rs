//! Helpers shared by the integration tests: a snapshot builder, the token and
//! variables every test uses, how long a send may take before a test calls
//! it hung, a transport pointed at a loopback server, and the checks every
//! refusal must pass (what every reason and remedy must say). `engines`
//! holds the wiremock engines most tests send to; `forms`
//! encodes a token every way an engine echoes it; `raw_http` is a server of
//! one's own for what wiremock cannot do; `redis` (with the `redis`
//! feature) starts a real Redis, a silent one and a dead port.

// `tests/it`, `tests/memory.rs`, `tests/no_ambient_proxy.rs` and
// `tests/trace.rs` each compile a copy and use only some of it.
#![allow(dead_code)]

pub mod engines;
pub mod forms;
pub mod raw_http;
#[cfg(feature = "redis")]
#[path = "../../../src/limits/redis/server.rs"]
pub mod redis;

use std::path::{Path, PathBuf};
use std::time::Duration;

use meterwire::{Env, HttpTransport, HttpTransportBuilder, Refusal};

/// The scope the tests send for; its variables end in `_ACME`.
pub const SCOPE: &str = "acme";

/// A token long enough to be concealed, and distinctive enough that finding
/// it anywhere is a leak rather than a coincidence.
pub const TOKEN: &str = "mw-test-Q7vX2kP9zR4tL8wN";

/// How long a test waits for a send that must end by itself: one that
/// takes longer has hung, and the test fails instead of hanging too.
pub const GUARD: Duration = Duration::from_secs(10);

/// The address variable the default naming reads after the scoped one.
pub const ADDRESS_VAR: &str = "CHANT_BEHAVIOUR_ENGINE";

/// The token variable the default naming reads after the scoped one.
pub const TOKEN_VAR: &str = "CHANT_BEHAVIOUR_TOKEN";

/// A snapshot holding exactly these pairs.
pub fn env(pairs: &[(&str, &str)]) -> Env {
    Env::from_pairs(pairs.iter().copied())
}

/// A builder whose snapshot names `address` in [`ADDRESS_VAR`] and
/// [`TOKEN`] in [`TOKEN_VAR`], for tests that set a deadline or a cap.
pub fn builder_for(address: &str, scope: &str) -> HttpTransportBuilder {
    HttpTransport::builder(scope).env(env(&[(ADDRESS_VAR, address), (TOKEN_VAR, TOKEN)]))
}

/// A transport that sends to `address` with [`TOKEN`].
pub fn transport_for(address: &str, scope: &str) -> HttpTransport {
    match builder_for(address, scope).build() {
        Ok(transport) => transport,
        Err(error) => panic!("a transport for {address} should build: {error}"),
    }
}

/// Whether `text` contains a name an operator could set:
/// `[A-Z][A-Z0-9]*(_[A-Z0-9]+)+`.
pub fn names_a_variable(text: &str) -> bool {
    let bytes = text.as_bytes();
    let name_char = |b: u8| b.is_ascii_uppercase() || b.is_ascii_digit();
    (0..bytes.len()).any(|start| {
        if !bytes[start].is_ascii_uppercase() {
            return false;
        }
        // The greedy run is the only one that can be followed by `_`.
        let mut at = start + 1;
        while at < bytes.len() && name_char(bytes[at]) {
            at += 1;
        }
        bytes.get(at) == Some(&b'_') && bytes.get(at + 1).is_some_and(|b| name_char(*b))
    })
}

/// The contract's rules for every refusal, for a refusal in [`SCOPE`].
#[track_caller]
pub fn assert_refusal_shape(refusal: &Refusal) {
    assert_refusal_shape_in(refusal, SCOPE);
}

/// The contract's rules for every refusal: a non-empty reason and remedy,
/// a remedy that names a variable, a reason under 1 000 characters that
/// names the scope.
#[track_caller]
pub fn assert_refusal_shape_in(refusal: &Refusal, scope: &str) {
    let reason = refusal.reason();
    let remedy = refusal.remedy();
    assert!(!reason.trim().is_empty(), "empty reason: {refusal:?}");
    assert!(!remedy.trim().is_empty(), "empty remedy: {refusal:?}");
    assert!(
        names_a_variable(remedy),
        "the remedy names no variable: {remedy:?}"
    );
    let chars = reason.chars().count();
    assert!(chars < 1000, "the reason is {chars} characters long");
    assert!(
        reason.contains(scope),
        "the reason does not name the scope {scope:?}: {reason:?}"
    );
}

/// The built example: `cargo test` builds examples next to `deps/`, where
/// this test binary lives.
pub fn probe_path() -> PathBuf {
    let exe = std::env::current_exe().expect("the test binary knows its own path");
    let profile = exe
        .parent()
        .and_then(Path::parent)
        .expect("the test binary lives in <target>/<profile>/deps");
    let probe = profile
        .join("examples")
        .join(format!("probe{}", std::env::consts::EXE_SUFFIX));
    assert!(
        probe.is_file(),
        "the probe example is not built at {}: run `cargo build --example probe` first \
         (a plain `cargo test` builds it; `cargo test --test it` alone does not)",
        probe.display()
    );
    // `cargo test --test it` alone runs whatever example was built
    // last; a stale one would test old code without saying so.
    let built = modified(&probe);
    let sources = Path::new(env!("CARGO_MANIFEST_DIR")).join("examples/probe");
    for entry in std::fs::read_dir(&sources).expect("examples/probe is readable") {
        let source = entry.expect("a directory entry").path();
        // Its manual (`README.md`) is no source: cargo rebuilds nothing for it.
        if source.extension().is_none_or(|extension| extension != "rs") {
            continue;
        }
        assert!(
            modified(&source) <= built,
            "the probe at {} is older than {}: run `cargo build --example probe` (or a plain `cargo test`)",
            probe.display(),
            source.display()
        );
    }
    probe
}

fn modified(path: &Path) -> std::time::SystemTime {
    std::fs::metadata(path)
        .and_then(|meta| meta.modified())
        .unwrap_or_else(|error| panic!("no modification time for {}: {error}", path.display()))
}
