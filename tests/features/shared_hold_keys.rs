//! The shared hold's key is written to Redis in the clear and named in
//! every command the hold sends (`PTTL`, `GETRANGE`, `EVAL`), where no
//! concealer reaches. A key, or a scope the default key is made from, that
//! holds a secret fails the build naming the setting and never its value;
//! and a real `redis-server`, watched with `MONITOR`, receives nothing of
//! the token in any command of a hold's ordinary life.

use std::io::{BufRead, BufReader, Write};
use std::net::TcpStream;
use std::time::{Duration, Instant};

use meterwire::{BuildError, Cause, HttpTransport, HttpTransportBuilder};
use wiremock::ResponseTemplate;

use crate::support::engines::{any_request, engine_with};
use crate::support::forms::forms;
use crate::support::redis::Redis;
use crate::support::{ADDRESS_VAR, SCOPE, TOKEN, TOKEN_VAR, builder_for, env};

/// A Redis where nothing listens: a build-time refusal contacts nothing.
const NOWHERE: &str = "redis://127.0.0.1:1/";

/// A builder for `scope` that could send, with a shared hold at `url`.
fn with_hold(scope: &str, url: &str) -> HttpTransportBuilder {
    HttpTransport::builder(scope)
        .env(env(&[
            (ADDRESS_VAR, "https://127.0.0.1:9/v1"),
            (TOKEN_VAR, TOKEN),
        ]))
        .shared_hold(url)
}

/// The build's `BuildError::SharedHold` message, checked to name `setting`
/// and to hold none of `secrets`.
#[track_caller]
fn refused(builder: HttpTransportBuilder, setting: &str, secrets: &[&str]) -> String {
    let error = builder.build().expect_err("a key that holds a secret");
    let BuildError::SharedHold(message) = &error else {
        panic!("not a shared hold error: {error:?}");
    };
    assert!(
        message.contains(setting),
        "{setting} is not named: {message}"
    );
    for text in [error.to_string(), format!("{error:?}")] {
        for secret in secrets {
            assert!(!text.contains(secret), "{secret:?} is shown: {text}");
        }
    }
    message.clone()
}

#[test]
fn a_key_that_holds_the_token_in_any_form_fails_the_build_naming_the_setting() {
    for (name, form) in forms(TOKEN) {
        let message = refused(
            with_hold(SCOPE, NOWHERE).shared_hold_key(format!("acct:{form}:hold")),
            "shared_hold_key",
            &[TOKEN, &form],
        );
        assert!(message.contains("holds a secret"), "{name}: {message}");
    }
}

#[test]
fn a_key_that_holds_the_redis_password_fails_the_build() {
    let password = "redis-pass-Zq81Lm0Xv4";
    refused(
        with_hold(SCOPE, &format!("redis://:{password}@127.0.0.1:1/"))
            .shared_hold_key(format!("acct-{password}")),
        "shared_hold_key",
        &[password],
    );
}

#[test]
fn a_scope_that_holds_the_token_fails_the_build_unless_a_key_is_named() {
    let scope = format!("acme-{TOKEN}");
    let message = refused(with_hold(&scope, NOWHERE), "scope", &[TOKEN]);
    assert!(message.contains("shared_hold_key"), "{message}");
    // The scope is not in a key the caller names: that builds, and its
    // refusals show the scope concealed, as without a shared hold.
    let transport = with_hold(&scope, NOWHERE)
        .shared_hold_key("acct-7")
        .build()
        .expect("a named key keeps the scope out of Redis");
    assert!(!format!("{transport:?}").contains(TOKEN));
}

/// A URL that is not Redis's is refused quoting its scheme, concealed:
/// a password pasted where the scheme goes is a secret like any other.
#[test]
fn a_url_whose_scheme_holds_a_secret_is_refused_without_showing_it() {
    let secret = "mw-scheme-secret";
    let error = HttpTransport::builder(SCOPE)
        .env(env(&[
            (ADDRESS_VAR, "https://127.0.0.1:9/v1"),
            (TOKEN_VAR, TOKEN),
            ("REDIS_PASSWORD", secret),
        ]))
        .shared_hold(format!("{secret}://127.0.0.1:1/"))
        .build()
        .expect_err("not a Redis URL");
    let BuildError::SharedHold(message) = &error else {
        panic!("not a shared hold error: {error:?}");
    };
    assert!(
        message.contains("give a redis:// or rediss:// URL"),
        "{message}"
    );
    assert!(!message.contains(secret), "{message}");
    assert!(message.contains("[redacted]://"), "{message}");
}

#[test]
fn a_key_or_scope_with_no_secret_builds() {
    with_hold(SCOPE, NOWHERE)
        .shared_hold_key("meterwire:hold:account-7")
        .build()
        .expect("a plain key");
    with_hold("acme-predictor", NOWHERE)
        .build()
        .expect("a plain scope");
}

/// Every command a `redis-server` receives, read through `MONITOR` on a
/// connection of its own, with each argument unquoted.
struct Monitor {
    lines: BufReader<TcpStream>,
}

impl Monitor {
    fn start(redis: &Redis) -> Monitor {
        let mut stream =
            TcpStream::connect(("127.0.0.1", redis.port())).expect("connects to redis-server");
        stream
            .set_read_timeout(Some(Duration::from_secs(10)))
            .expect("a read timeout");
        stream.write_all(b"MONITOR\r\n").expect("MONITOR sent");
        let mut lines = BufReader::new(stream);
        let mut ok = String::new();
        lines.read_line(&mut ok).expect("MONITOR answered");
        assert_eq!(ok.trim_end(), "+OK");
        Monitor { lines }
    }

    /// Every command's arguments up to an `ECHO` of `end`, sent on another
    /// connection once the test's own commands are done, so that nothing
    /// before it can be missed; within 10 s and 10,000 lines.
    fn until(mut self, redis: &Redis, end: &str) -> Vec<Vec<u8>> {
        let _: String = redis::cmd("ECHO")
            .arg(end)
            .query(&mut redis.connection())
            .expect("ECHO");
        let started = Instant::now();
        let mut arguments = Vec::new();
        for _ in 0..10_000 {
            assert!(started.elapsed() < Duration::from_secs(10), "no end seen");
            let mut line = Vec::new();
            self.lines
                .read_until(b'\n', &mut line)
                .expect("MONITOR keeps reporting");
            let said = unquote(&line);
            if said.iter().any(|argument| argument == end.as_bytes()) {
                return arguments;
            }
            arguments.extend(said);
        }
        panic!("no end within 10,000 lines");
    }
}

/// The quoted arguments of one `MONITOR` line (`+1700000000.1 [0
/// 127.0.0.1:5] "PTTL" "key"`), undoing Redis's escapes (`\"`, `\\`, `\n`,
/// `\r`, `\t`, `\a`, `\b`, `\xHH`), so a form of the token with a quote or
/// a backslash in it is compared as Redis received it.
fn unquote(line: &[u8]) -> Vec<Vec<u8>> {
    let mut arguments = Vec::new();
    let mut bytes = line.iter().copied();
    while let Some(byte) = bytes.next() {
        if byte != b'"' {
            continue;
        }
        let mut argument = Vec::new();
        while let Some(byte) = bytes.next() {
            match byte {
                b'"' => break,
                b'\\' => match bytes.next() {
                    Some(b'n') => argument.push(b'\n'),
                    Some(b'r') => argument.push(b'\r'),
                    Some(b't') => argument.push(b'\t'),
                    Some(b'a') => argument.push(7),
                    Some(b'b') => argument.push(8),
                    Some(b'x') => {
                        let hex: Vec<u8> = bytes.by_ref().take(2).collect();
                        let hex = std::str::from_utf8(&hex).expect("hex digits");
                        argument.push(u8::from_str_radix(hex, 16).expect("a byte in hex"));
                    }
                    Some(other) => argument.push(other),
                    None => break,
                },
                other => argument.push(other),
            }
        }
        arguments.push(argument);
    }
    arguments
}

#[tokio::test]
async fn redis_receives_nothing_of_the_token_in_any_command_whatever_the_scope() {
    let redis = Redis::start();
    let monitor = Monitor::start(&redis);
    let server = engine_with([any_request()
        .respond_with(
            ResponseTemplate::new(429)
                .insert_header("retry-after", "30")
                .set_body_string(format!("token {TOKEN} is over its quota")),
        )
        .expect(1)])
    .await;
    let build = || {
        builder_for(&server.uri(), SCOPE)
            .shared_hold(redis.url())
            .build()
            .expect("builds")
    };
    // A scope that holds the token: whatever the build makes of it, no
    // command names it (it fails, so nothing is sent).
    if let Ok(careless) = builder_for(&server.uri(), &format!("acme-{TOKEN}"))
        .shared_hold(redis.url())
        .build()
    {
        let _ = careless.send("{}").await;
    }
    let (first, second) = (build(), build());
    let refused = first.send("{}").await.expect_err("over quota");
    assert_eq!(refused.attempts(), 1);
    let held = second.send("{}").await.expect_err("held by the fleet");
    assert_eq!((held.cause(), held.attempts()), (Cause::EngineOverQuota, 0));
    let received = monitor.until(&redis, "meterwire-test-end");
    // The watch saw the hold's commands: it would have seen the token.
    for command in ["PTTL", "GETRANGE", "EVAL"] {
        assert!(
            received
                .iter()
                .any(|argument| argument.eq_ignore_ascii_case(command.as_bytes())),
            "no {command} was seen"
        );
    }
    for argument in &received {
        let text = String::from_utf8_lossy(argument);
        for (name, form) in forms(TOKEN) {
            assert!(!text.contains(&form), "the token, {name}, in {text:?}");
        }
        // The default key folds the scope to lower case.
        assert!(
            !text.to_lowercase().contains(&TOKEN.to_lowercase()),
            "the token, folded, in {text:?}"
        );
    }
}
