//! What a shared hold adds to a send: the same transport
//! sending to the same in-process loopback engine, without a shared hold
//! and with one in a real `redis-server` on loopback that this bench
//! starts (Debian's package, or the binary `REDIS_SERVER` names) and stops.
//! On the common path, no hold anywhere, a send with one costs one Redis
//! round trip: a pipelined `PTTL` and `GETRANGE`.
//!
//! `cargo bench --features redis --bench fleet` runs criterion's group, then
//! prints the ratio of medians, shared / alone, from interleaved runs of its
//! own (samples of the two alternate, so drift lands on both), and the added
//! time per send.

use std::time::{Duration, Instant};

use criterion::Criterion;
use meterwire::{Env, HttpTransport};
use tokio::io::{AsyncReadExt, AsyncWriteExt};
use tokio::net::{TcpListener, TcpStream};
use tokio::runtime::Runtime;

#[allow(dead_code)]
#[path = "../tests/it/support/redis.rs"]
mod redis_server;

const TOKEN: &str = "mw-bench-Q7vX2kP9zR4tL8wN";
const ANSWER: &[u8] =
    b"HTTP/1.1 200 OK\r\ncontent-type: application/json\r\ncontent-length: 2\r\n\r\n{}";

/// An engine that answers every request on a connection with `{}`: it
/// reads until a request head ends (the body, `{}`, comes in the same
/// packet) and writes the ready answer.
async fn engine() -> String {
    let listener = TcpListener::bind("127.0.0.1:0")
        .await
        .expect("a loopback port");
    let address = format!("http://{}/v1", listener.local_addr().expect("bound"));
    tokio::spawn(async move {
        while let Ok((socket, _)) = listener.accept().await {
            tokio::spawn(answer(socket));
        }
    });
    address
}

async fn answer(mut socket: TcpStream) {
    let mut buffer = vec![0u8; 8192];
    loop {
        match socket.read(&mut buffer).await {
            Ok(0) | Err(_) => return,
            Ok(n) if memchr::memmem::find(&buffer[..n], b"\r\n\r\n").is_some() => {
                if socket.write_all(ANSWER).await.is_err() {
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

fn main() {
    let redis = redis_server::Redis::start();
    let runtime = Runtime::new().expect("a runtime");
    let address = runtime.block_on(engine());
    let alone = transport(&address, None);
    let shared = transport(&address, Some(&redis.url()));
    // Connections made, and the shared hold's first connect done.
    runtime.block_on(async {
        median(&alone, 50).await;
        median(&shared, 50).await;
    });

    let mut criterion = Criterion::default().configure_from_args();
    let mut group = criterion.benchmark_group("send");
    group.bench_function("alone", |b| {
        b.iter(|| runtime.block_on(alone.send("{}")).expect("answered"));
    });
    group.bench_function("shared-hold", |b| {
        b.iter(|| runtime.block_on(shared.send("{}")).expect("answered"));
    });
    group.finish();
    criterion.final_summary();

    // Interleaved: 15 rounds of 200 sends each way.
    let (mut without, mut with) = (Vec::new(), Vec::new());
    runtime.block_on(async {
        for _ in 0..15 {
            without.push(median(&alone, 200).await);
            with.push(median(&shared, 200).await);
        }
    });
    without.sort();
    with.sort();
    let (without, with) = (without[7], with[7]);
    println!(
        "shared hold / alone, median send: {:.2}x ({:?} against {:?}; {:?} added per send)",
        with.as_secs_f64() / without.as_secs_f64(),
        with,
        without,
        with.saturating_sub(without)
    );
    let meter = shared.meter();
    assert_eq!(meter.sends(), meter.answers(), "every send answered");
}
