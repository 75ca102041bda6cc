//! What a shared hold and the fleet's budget add to a send: the same
//! transport sending to an in-process loopback engine, without a shared
//! hold; with one in a real `redis-server` on loopback that this bench
//! starts (Debian's package, or the binary `REDIS_SERVER` names) and stops,
//! to an engine that sends no rate-limit fields (the hold alone); and with
//! one to an engine that says on every answer what is left (the budget,
//! kept in Redis too). On the common path, no hold anywhere, a send costs
//! one Redis round trip either way: one `EVAL` that reads the hold, takes
//! one from the budget and writes the figure the last answer gave.
//!
//! `cargo bench --features redis --bench fleet` runs criterion's group, then
//! prints the median send of each from interleaved runs of its own (samples
//! alternate, so drift lands on all), the time each adds per send, and the
//! commands Redis ran per send (`INFO commandstats`, reset before), which
//! the bench asserts: one `EVAL` per send, nothing else.

use std::time::{Duration, Instant};

use criterion::Criterion;
use meterwire::{Env, HttpTransport};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

#[allow(dead_code)]
#[path = "../src/limits/redis/server.rs"]
mod redis_server;

const TOKEN: &str = "mw-bench-Q7vX2kP9zR4tL8wN";
const ANSWER: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";
/// The same answer, saying a window of a million requests a minute is far
/// from spent.
const ANSWER_WITH_FIELDS: &[u8] = b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\n\
ratelimit: \"default\";r=999999;t=60\r\nratelimit-policy: \"default\";q=1000000;w=60\r\n\
content-length: 2\r\n\r\n{}";

/// An engine that answers every request on a connection with `{}`: it
/// reads until a request head ends (the body, `{}`, comes in the same
/// packet) and writes the ready answer.
async fn engine(answer_with: &'static [u8]) -> String {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let address = format!("http://{}/v1", listener.local_addr().expect("bound"));
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(answer(socket, answer_with));
        }
    });
    address
}

async fn answer(mut socket: TcpStream, answer_with: &'static [u8]) {
    let mut buffer = vec![0u8; 8192];
    loop {
        match socket.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) if memchr::memmem::find(&buffer[..n], b"\r\n\r\n").is_some() => {
                if socket.write_all(answer_with).await.is_err() {
                    return;
                }
            }
            Ok(_) => {}
        }
    }
}

fn transport(address: &str, redis: Option<&str>) -> HttpTransport {
    let mut builder = HttpTransport::builder("bench").env(Env::from_pairs([
        ("CHANT_BEHAVIOUR_ENGINE", address),
        ("CHANT_BEHAVIOUR_TOKEN", TOKEN),
    ]));
    if let Some(url) = redis {
        builder = builder.shared_hold(url);
    }
    builder.build().expect("builds")
}

/// The median of `sends` sends through `transport`, each timed alone.
async fn median(transport: &HttpTransport, sends: usize) -> Duration {
    let mut took = Vec::with_capacity(sends);
    for _ in 0..sends {
        let started = Instant::now();
        transport.send("{}").await.expect("answered");
        took.push(started.elapsed());
    }
    took.sort();
    took[sends / 2]
}

/// What Redis ran since its stats were reset: `(command, calls)`.
fn commands(redis: &redis_server::Redis) -> Vec<(String, u64)> {
    let info: String = redis::cmd("INFO")
        .arg("commandstats")
        .query(&mut redis.connection())
        .expect("INFO");
    info.lines()
        .filter_map(|line| {
            let (name, rest) = line.strip_prefix("cmdstat_")?.split_once(":calls=")?;
            let calls = rest.split(',').next()?.parse().ok()?;
            Some((name.to_owned(), calls))
        })
        // The bench's own connection's INFO and RESETSTAT.
        .filter(|(name, _)| !name.starts_with("info") && !name.starts_with("config"))
        .collect()
}

/// The commands Redis ran for `sends` sends through `transport`.
fn commands_per_send(
    runtime: &Runtime,
    redis: &redis_server::Redis,
    transport: &HttpTransport,
    sends: u64,
) -> Vec<(String, f64)> {
    let _: () = redis::cmd("CONFIG")
        .arg("RESETSTAT")
        .query(&mut redis.connection())
        .expect("CONFIG RESETSTAT");
    runtime.block_on(async {
        for _ in 0..sends {
            transport.send("{}").await.expect("answered");
        }
    });
    commands(redis)
        .into_iter()
        .map(|(name, calls)| (name, calls as f64 / sends as f64))
        .collect()
}

fn main() {
    let redis = redis_server::Redis::start();
    let runtime = Runtime::new().expect("a runtime");
    let quiet = runtime.block_on(engine(ANSWER));
    let told = runtime.block_on(engine(ANSWER_WITH_FIELDS));
    let alone = transport(&quiet, None);
    let hold = transport(&quiet, Some(&redis.url()));
    let budget = transport(&told, Some(&redis.url()));
    // Connections made, and the shared hold's first connect done.
    runtime.block_on(async {
        for transport in [&alone, &hold, &budget] {
            median(transport, 50).await;
        }
    });

    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("send");
    for (name, transport) in [
        ("alone", &alone),
        ("shared-hold", &hold),
        ("shared-budget", &budget),
    ] {
        group.bench_function(name, |b| {
            b.iter(|| runtime.block_on(transport.send("{}")).expect("answered"));
        });
    }
    group.finish();
    criterion.final_summary();

    // Interleaved: 15 rounds of 200 sends each way.
    let mut medians = [Vec::new(), Vec::new(), Vec::new()];
    runtime.block_on(async {
        for _ in 0..15 {
            for (i, transport) in [&alone, &hold, &budget].into_iter().enumerate() {
                medians[i].push(median(transport, 200).await);
            }
        }
    });
    let [without, with_hold, with_budget] = medians.map(|mut runs| {
        runs.sort();
        runs[7]
    });
    println!(
        "median send: alone {without:?}; shared hold {with_hold:?} ({:?} added); \
         shared hold and budget {with_budget:?} ({:?} added, {:?} beyond the hold's)",
        with_hold.saturating_sub(without),
        with_budget.saturating_sub(without),
        with_budget.saturating_sub(with_hold),
    );

    // Redis counts the commands a script runs as well as the `EVAL`: every
    // request the transport makes is an `EVAL`, so the `EVAL`s are its
    // round trips, and nothing outside the ask's script may appear.
    let in_the_script = [
        "pttl", "getrange", "time", "hmget", "hset", "del", "pexpire", "get", "set",
    ];
    for (name, transport) in [("shared hold", &hold), ("shared hold and budget", &budget)] {
        let per_send = commands_per_send(&runtime, &redis, transport, 500);
        println!("Redis commands per send, {name}: {per_send:?}");
        let evals = per_send
            .iter()
            .find(|(command, _)| command == "eval")
            .map_or(0.0, |(_, calls)| *calls);
        assert_eq!(evals, 1.0, "{name}: one round trip per send");
        for (command, _) in &per_send {
            assert!(
                command == "eval" || in_the_script.contains(&command.as_str()),
                "{name}: {command} is a request of its own"
            );
        }
    }
    for transport in [&alone, &hold, &budget] {
        let meter = transport.meter();
        assert_eq!(meter.sends(), meter.answers(), "every send answered");
    }
}
