//! A token from a file that rotates.
//!
//! Kubernetes projected tokens, Vault agent sinks and Docker secrets put
//! the token in a file that is replaced while the predictor runs: the
//! kubelet swaps a `..data` symlink to a new directory, Vault writes a
//! temporary file and renames it over the old one, and some writers
//! truncate and rewrite in place, so the file is empty for a moment. The
//! file is therefore read through its path every time (a rename or a
//! symlink swap is seen; no handle or resolved path is kept), at most once
//! an interval (a minute by default), and at once after the engine rejects
//! the token, since a rejection is what a rotation looks like from here.
//!
//! A read that fails (missing, unreadable, empty, not a header value, a
//! torn write, a file that does not stand still in time) keeps the last
//! good token and says so at `WARN`, naming the path and what was wrong,
//! never the content; only with no good token ever read is a send refused.
//!
//! A read runs on a blocking thread (`read.rs` says how it reads), one at a
//! time, and no send waits for it past its deadline: a file system that
//! hangs, or a file rewritten without pause, holds up no other send, which
//! goes with the last good token meanwhile. A token is learned as a secret
//! only once it is adopted, and the concealer holds the current token and
//! the eight before it, no more (`DESIGN.md`, "Tokens that rotate").

use std::collections::VecDeque;
use std::path::PathBuf;
use std::sync::{Arc, Mutex};
use std::time::Duration;

use reqwest::header::HeaderValue;
use tokio::time::{Instant, timeout_at};

use super::Token;
use super::content::FileProblem;
use super::read::{self, Clock, MOST_WAIT};
use crate::conceal::Concealer;
use crate::config::origin::Origin;
use crate::lock::Unpoisoned;

/// How many tokens stay concealed: the current one and the eight it
/// replaced, however often the file rotates (`DESIGN.md`, "Tokens that
/// rotate", says why that many is enough).
pub(crate) const HELD_TOKENS: usize = 9;

/// A token file, and the token last read from it.
#[derive(Debug)]
pub(crate) struct TokenFile {
    path: PathBuf,
    origin: Origin,
    interval: Duration,
    shared: Arc<Shared>,
}

/// What a read on its blocking thread shares with the sends.
#[derive(Debug, Default)]
struct Shared {
    /// Locked only to look and to change, never across a read.
    state: Mutex<State>,
    /// Held by the one read under way, until it ends, however long the
    /// send that began it waited.
    reader: Arc<tokio::sync::Mutex<()>>,
}

#[derive(Debug, Default)]
struct State {
    /// The last good token, its header, and which one it is (each new
    /// token read gets the next number).
    current: Option<(Token, HeaderValue, u64)>,
    /// The tokens held last, the current one first: what the concealer
    /// conceals of them.
    held: VecDeque<Token>,
    read_at: Option<Instant>,
    /// The engine rejected the token: read the file at the next send.
    stale: bool,
    /// What was wrong at the last read, if it failed.
    problem: Option<FileProblem>,
}

impl State {
    fn current(&self) -> Option<Current> {
        self.current
            .as_ref()
            .map(|(_, header, generation)| Current {
                header: header.clone(),
                generation: *generation,
            })
    }
}

/// The token a send goes out with: its header, and which token it is.
#[derive(Clone, Debug)]
pub(crate) struct Current {
    pub(crate) header: HeaderValue,
    pub(crate) generation: u64,
}

impl TokenFile {
    /// A token file at `path`, named by `origin`, read at most once an
    /// `interval`.
    pub(crate) fn new(path: PathBuf, origin: Origin, interval: Duration) -> TokenFile {
        TokenFile {
            path,
            origin,
            interval,
            shared: Arc::default(),
        }
    }

    /// The path, as refusals and warnings name it (it is not a secret).
    pub(crate) fn path(&self) -> String {
        self.path.display().to_string()
    }

    /// The token to send with at `now`: the file is read again when the
    /// interval has passed or the engine rejected the last token. A new
    /// token is taught to `concealer` before it is used. A read under way
    /// (this send's, or another's) is waited for at most a quarter of what
    /// is left before `deadline` while a good token is held, which then
    /// goes; with none, until `deadline`, and then what was wrong with the
    /// file.
    pub(crate) async fn current(
        &self,
        now: Instant,
        deadline: Instant,
        concealer: &Concealer,
    ) -> Result<Current, FileProblem> {
        let (due, none_held) = {
            let state = self.lock();
            let due = state.stale
                || state
                    .read_at
                    .is_none_or(|read_at| now.saturating_duration_since(read_at) >= self.interval);
            if !due && let Some(current) = state.current() {
                return Ok(current);
            }
            (due, state.current.is_none())
        };
        let wait_until = if none_held {
            deadline
        } else {
            now + deadline.saturating_duration_since(now) / 4
        };
        let reading = if due {
            Arc::clone(&self.shared.reader).try_lock_owned().ok()
        } else {
            None
        };
        let ended = match reading {
            Some(reading) => {
                {
                    let mut state = self.lock();
                    state.stale = false;
                    state.read_at = Some(now);
                }
                self.read(reading, deadline, wait_until, concealer).await
            }
            // Another send is reading (or none is, and the last read
            // failed): with no token held, that read is waited for; with
            // one, it goes.
            None if none_held => timeout_at(wait_until, self.shared.reader.lock())
                .await
                .is_ok(),
            None => true,
        };
        let state = self.lock();
        match state.current() {
            Some(current) => Ok(current),
            None if !ended => Err(FileProblem::TooSlow),
            None => Err(state.problem.unwrap_or(FileProblem::Empty)),
        }
    }

    /// After the engine rejected the token `judged`: the file is read
    /// again now (after any read under way, and within `deadline`), and
    /// the token it holds returned when it is another one (the rotation
    /// happened between the reads); the next send reads it again either
    /// way.
    pub(crate) async fn replaced(
        &self,
        judged: u64,
        now: Instant,
        deadline: Instant,
        concealer: &Concealer,
    ) -> Option<Current> {
        if let Ok(reading) =
            timeout_at(deadline, Arc::clone(&self.shared.reader).lock_owned()).await
        {
            self.lock().read_at = Some(now);
            self.read(reading, deadline, deadline, concealer).await;
        }
        let mut state = self.lock();
        match state.current() {
            Some(current) if current.generation != judged => Some(current),
            _ => {
                state.stale = true;
                None
            }
        }
    }

    /// Reads the file on a blocking thread, holding `reading` until the
    /// read ends, within `deadline` (and [`MOST_WAIT`]); waits for it until
    /// `wait_until`, and says whether it ended by then. The read's outcome
    /// is kept whenever it ends.
    async fn read(
        &self,
        reading: tokio::sync::OwnedMutexGuard<()>,
        deadline: Instant,
        wait_until: Instant,
        concealer: &Concealer,
    ) -> bool {
        let shared = Arc::clone(&self.shared);
        let (path, origin, concealer) = (self.path.clone(), self.origin.clone(), concealer.clone());
        let budget = MOST_WAIT.min(deadline.saturating_duration_since(Instant::now()));
        // The warning of a failed read belongs to the send that began it.
        let span = tracing::Span::current();
        let read = tokio::task::spawn_blocking(move || {
            let _reading = reading;
            let _span = span.enter();
            let read = read::read(&path, origin, budget, &mut Clock::new());
            shared.keep(read, &path, &concealer);
        });
        matches!(timeout_at(wait_until, read).await, Ok(Ok(())))
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.shared.lock()
    }
}

impl Shared {
    /// Keeps what a read found: a new token is adopted, a failed read is
    /// warned about (naming the path and what was wrong, never the
    /// content) and the last good token kept.
    fn keep(
        &self,
        read: Result<Token, FileProblem>,
        path: &std::path::Path,
        concealer: &Concealer,
    ) {
        match read {
            Ok(token) => {
                self.lock().problem = None;
                self.adopt(token, concealer);
            }
            Err(problem) => {
                let mut state = self.lock();
                tracing::warn!(
                    path = %concealer.show_all(&path.display().to_string()),
                    problem = %problem.describe(),
                    kept = state.current.is_some(),
                    "the token file could not be read; the last good token (if any) is kept"
                );
                state.problem = Some(problem);
            }
        }
    }

    /// Keeps `token` as the current one when it differs from it: the
    /// concealer holds it (with the tokens held before it) first, then it
    /// is sent. The concealer is rebuilt outside the lock, so no send waits
    /// on it; only the one read under way adopts.
    fn adopt(&self, token: Token, concealer: &Concealer) {
        let held: Vec<Token> = {
            let mut state = self.lock();
            if let Some((current, _, _)) = &state.current
                && current.same_value(&token)
            {
                return;
            }
            state.held.retain(|old| !old.same_value(&token));
            state.held.push_front(token.clone());
            state.held.truncate(HELD_TOKENS);
            state.held.iter().cloned().collect()
        };
        Token::hold_in(&held, concealer);
        let mut state = self.lock();
        let generation = state
            .current
            .as_ref()
            .map_or(1, |(_, _, n)| n.saturating_add(1));
        let header = token.header();
        state.current = Some((token, header, generation));
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state.lock_unpoisoned()
    }
}
