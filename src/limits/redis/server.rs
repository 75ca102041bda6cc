//! Redis for the shared hold's tests, none of it mocked: a
//! real `redis-server` on a free loopback port in a directory of its own,
//! persisting nothing, stopped and its directory removed when dropped; a
//! listener that accepts connections and never answers (a Redis that hangs);
//! and a port where nothing listens (a Redis that is down).
//!
//! The unit tests of the shared hold compile it as a module of the crate;
//! the integration tests (`tests/it/support`) and the fleet bench include
//! this file by `#[path]`, so it uses nothing but std and the `redis` crate.
//! `redis-server` is Debian's package; `.ci/run` installs it when missing,
//! and `REDIS_SERVER` names another binary.

use std::io::Read;
use std::net::{Shutdown, TcpListener, TcpStream};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How long a `redis-server` may take to answer its first `PING`.
const READY: Duration = Duration::from_secs(10);

/// A `redis-server` of the test's own on `127.0.0.1`.
pub struct Redis {
    child: Child,
    port: u16,
    dir: PathBuf,
    password: Option<String>,
}

impl Redis {
    /// A server on a free port, no password.
    pub fn start() -> Redis {
        Redis::launch(None, None)
    }

    /// A server on a free port that requires `password` (`requirepass`).
    pub fn with_password(password: &str) -> Redis {
        Redis::launch(None, Some(password))
    }

    /// A server on `port`: for a Redis that comes back where it was.
    pub fn on_port(port: u16) -> Redis {
        Redis::launch(Some(port), None)
    }

    fn launch(port: Option<u16>, password: Option<&str>) -> Redis {
        let binary = std::env::var_os("REDIS_SERVER").unwrap_or_else(|| "redis-server".into());
        // A free port can be taken by someone else before the server binds
        // it: try a few.
        let mut last = String::new();
        for _ in 0..5 {
            let port = port.unwrap_or_else(free_port);
            let dir = fresh_dir(port);
            let mut command = Command::new(&binary);
            command
                .args(["--port", &port.to_string()])
                .args(["--bind", "127.0.0.1"])
                .args(["--protected-mode", "yes"])
                .args(["--save", ""])
                .args(["--appendonly", "no"])
                .args(["--daemonize", "no"])
                .args(["--databases", "1"])
                .args(["--rdbcompression", "no"])
                .arg("--dir")
                .arg(&dir)
                .arg("--logfile")
                .arg(dir.join("redis.log"))
                .stdin(Stdio::null())
                .stdout(Stdio::null())
                .stderr(Stdio::null());
            if let Some(password) = password {
                command.args(["--requirepass", password]);
            }
            let child = match command.spawn() {
                Ok(child) => child,
                Err(error) => {
                    let _ = std::fs::remove_dir_all(&dir);
                    panic!(
                        "redis-server could not be started ({error}): install Debian's \
                         redis-server package (.ci/run does when it is missing), or name \
                         the binary in REDIS_SERVER"
                    );
                }
            };
            let mut redis = Redis {
                child,
                port,
                dir,
                password: password.map(str::to_owned),
            };
            match redis.wait_ready() {
                Ok(()) => return redis,
                Err(why) => last = format!("{why}; its log: {}", redis.log()),
            }
        }
        panic!("redis-server did not come up on loopback: {last}");
    }

    /// Waits until the server answers `PING`, or says why it did not.
    fn wait_ready(&mut self) -> Result<(), String> {
        let started = Instant::now();
        let client = self.client();
        while started.elapsed() < READY {
            if let Ok(Some(status)) = self.child.try_wait() {
                return Err(format!("it exited with {status}"));
            }
            if let Ok(mut connection) = client.get_connection_with_timeout(READY / 20)
                && redis::cmd("PING").query::<String>(&mut connection).is_ok()
            {
                return Ok(());
            }
            std::thread::sleep(Duration::from_millis(20));
        }
        Err(format!("no PONG within {READY:?}"))
    }

    /// The server's port on `127.0.0.1`.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// Its URL, with the password when it has one.
    pub fn url(&self) -> String {
        match &self.password {
            Some(password) => format!("redis://:{password}@127.0.0.1:{}/", self.port),
            None => format!("redis://127.0.0.1:{}/", self.port),
        }
    }

    /// A client of its own, to look at what the code under test stored.
    pub fn client(&self) -> redis::Client {
        match redis::Client::open(self.url()) {
            Ok(client) => client,
            Err(error) => panic!("the test's own Redis URL should parse: {error}"),
        }
    }

    /// A connection of the test's own, to look at what the code under
    /// test stored.
    pub fn connection(&self) -> redis::Connection {
        match self.client().get_connection_with_timeout(READY) {
            Ok(connection) => connection,
            Err(error) => panic!("the test's Redis should take a connection: {error}"),
        }
    }

    /// Every key and its value, read with `SCAN` and `GET` (`DUMP`, kept
    /// uncompressed, for a key that is not a string), for tests that prove
    /// what was never stored.
    pub fn everything(&self) -> Vec<(Vec<u8>, Vec<u8>)> {
        let mut connection = self.connection();
        let keys: Vec<Vec<u8>> = match redis::cmd("SCAN")
            .cursor_arg(0)
            .clone()
            .iter::<Vec<u8>>(&mut connection)
        {
            Ok(keys) => keys.filter_map(Result::ok).collect(),
            Err(error) => panic!("SCAN should answer: {error}"),
        };
        keys.into_iter()
            .map(|key| {
                let kind: String = redis::cmd("TYPE")
                    .arg(&key)
                    .query(&mut connection)
                    .unwrap_or_default();
                let read = if kind == "string" { "GET" } else { "DUMP" };
                let value: Option<Vec<u8>> = redis::cmd(read)
                    .arg(&key)
                    .query(&mut connection)
                    .unwrap_or(None);
                (key, value.unwrap_or_default())
            })
            .collect()
    }

    /// The server's log, for a failure's message.
    fn log(&self) -> String {
        std::fs::read_to_string(self.dir.join("redis.log")).unwrap_or_default()
    }
}

impl Drop for Redis {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}

/// A listener on `127.0.0.1` that accepts every connection, reads what
/// comes and never answers: a Redis that hangs.
pub struct Silent {
    port: u16,
    stop: Arc<AtomicBool>,
    accepted: Arc<AtomicUsize>,
    thread: Option<JoinHandle<()>>,
}

impl Silent {
    /// Starts listening on a free port.
    pub fn start() -> Silent {
        let listener = match TcpListener::bind("127.0.0.1:0") {
            Ok(listener) => listener,
            Err(error) => panic!("a loopback listener should bind: {error}"),
        };
        let port = listener.local_addr().map(|a| a.port()).unwrap_or(0);
        let stop = Arc::new(AtomicBool::new(false));
        let accepted = Arc::new(AtomicUsize::new(0));
        let thread = {
            let (stop, accepted) = (stop.clone(), accepted.clone());
            std::thread::spawn(move || {
                for stream in listener.incoming() {
                    if stop.load(Ordering::SeqCst) {
                        break;
                    }
                    let Ok(stream) = stream else { continue };
                    accepted.fetch_add(1, Ordering::SeqCst);
                    std::thread::spawn(move || swallow(stream));
                }
            })
        };
        Silent {
            port,
            stop,
            accepted,
            thread: Some(thread),
        }
    }

    /// Its port on `127.0.0.1`.
    pub fn port(&self) -> u16 {
        self.port
    }

    /// A `redis://` URL to it.
    pub fn url(&self) -> String {
        format!("redis://127.0.0.1:{}/", self.port)
    }

    /// How many connections it has accepted.
    pub fn accepted(&self) -> usize {
        self.accepted.load(Ordering::SeqCst)
    }
}

impl Drop for Silent {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::SeqCst);
        // Wakes the accept loop so that it sees `stop`.
        let _ = TcpStream::connect(("127.0.0.1", self.port));
        if let Some(thread) = self.thread.take() {
            let _ = thread.join();
        }
    }
}

/// Reads and drops whatever the peer sends until it goes away, or a minute
/// passes, so no thread outlives a test by much.
fn swallow(mut stream: TcpStream) {
    let _ = stream.set_read_timeout(Some(Duration::from_secs(60)));
    let mut buffer = [0u8; 1024];
    while let Ok(read) = stream.read(&mut buffer) {
        if read == 0 {
            break;
        }
    }
    let _ = stream.shutdown(Shutdown::Both);
}

/// A loopback port where nothing listens: a Redis that is down.
pub fn dead_port() -> u16 {
    free_port()
}

/// A port the kernel just handed out and that nothing holds any more.
fn free_port() -> u16 {
    match TcpListener::bind("127.0.0.1:0").and_then(|listener| listener.local_addr()) {
        Ok(address) => address.port(),
        Err(error) => panic!("a loopback port should be free: {error}"),
    }
}

/// A new, empty directory for one server.
fn fresh_dir(port: u16) -> PathBuf {
    static NEXT: AtomicUsize = AtomicUsize::new(0);
    let dir = std::env::temp_dir().join(format!(
        "meterwire-redis-{}-{port}-{}",
        std::process::id(),
        NEXT.fetch_add(1, Ordering::SeqCst)
    ));
    let _ = std::fs::remove_dir_all(&dir);
    if let Err(error) = std::fs::create_dir_all(&dir) {
        panic!("a directory for redis-server should be made in {dir:?}: {error}");
    }
    dir
}
