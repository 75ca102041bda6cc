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
//! torn write) keeps the last good token and says so at `WARN`, naming the
//! path and what was wrong, never the content; only with no good token
//! ever read is a send refused.

use std::path::PathBuf;
use std::sync::Mutex;
use std::time::Duration;

use reqwest::header::HeaderValue;
use tokio::time::Instant;

use super::Token;
use crate::conceal::Concealer;
use crate::origin::Origin;

/// The largest file read as a token: a bearer token is a few hundred
/// characters, and a projected service-account token a few kilobytes.
const MAX_FILE_BYTES: u64 = 64 * 1024;

/// What was wrong with a token file, in words that never quote its
/// content.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum FileProblem {
    /// No file at the path.
    Missing,
    /// The file exists but cannot be read (permissions).
    Unreadable,
    /// The path names no regular file (a directory, a pipe, a device),
    /// which is not read: a pipe can block and a device never end.
    NotAFile,
    /// It holds nothing but whitespace.
    Empty,
    /// It is larger than any token.
    TooLarge,
    /// It is not UTF-8 text.
    NotText,
    /// Its content cannot be a header value (a line break inside, a space).
    NotAHeaderValue(&'static str),
}

impl FileProblem {
    /// `is missing`, `holds a line break`, …
    pub(crate) fn describe(&self) -> String {
        match self {
            FileProblem::Missing => "does not exist".to_owned(),
            FileProblem::Unreadable => "cannot be read (check its permissions)".to_owned(),
            FileProblem::NotAFile => {
                "is not a regular file (a directory, a pipe or a device), so it holds no token"
                    .to_owned()
            }
            FileProblem::Empty => "is empty".to_owned(),
            FileProblem::TooLarge => {
                format!("is larger than {MAX_FILE_BYTES} bytes, so it holds no token")
            }
            FileProblem::NotText => "is not UTF-8 text".to_owned(),
            FileProblem::NotAHeaderValue(problem) => {
                format!("{problem}, so it cannot be sent as a header value")
            }
        }
    }
}

/// A token file, and the token last read from it.
#[derive(Debug)]
pub(crate) struct TokenFile {
    path: PathBuf,
    origin: Origin,
    interval: Duration,
    state: Mutex<State>,
}

#[derive(Debug, Default)]
struct State {
    /// The last good token, its header, and which one it is (each new
    /// token read gets the next number).
    current: Option<(Token, HeaderValue, u64)>,
    read_at: Option<Instant>,
    /// The engine rejected the token: read the file at the next send.
    stale: bool,
    /// What was wrong at the last read, if it failed.
    problem: Option<FileProblem>,
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
            state: Mutex::new(State::default()),
        }
    }

    /// The path, as refusals and warnings name it (it is not a secret).
    pub(crate) fn path(&self) -> String {
        self.path.display().to_string()
    }

    /// The token to send with at `now`: the file is read again when the
    /// interval has passed or the engine rejected the last token. A new
    /// token is taught to `concealer` before it is used, so every token the
    /// transport has held stays concealed. With no good token ever read,
    /// what was wrong with the file.
    pub(crate) fn current(
        &self,
        now: Instant,
        concealer: &Concealer,
    ) -> Result<Current, FileProblem> {
        let mut state = self.lock();
        let due = state.stale
            || state
                .read_at
                .is_none_or(|read_at| now.saturating_duration_since(read_at) >= self.interval);
        if due {
            state.stale = false;
            self.reread(&mut state, now, concealer);
        }
        match &state.current {
            Some((_, header, generation)) => Ok(Current {
                header: header.clone(),
                generation: *generation,
            }),
            None => Err(state.problem.unwrap_or(FileProblem::Empty)),
        }
    }

    /// After the engine rejected the token `judged`: the file is read
    /// again now, and the token it holds returned when it is another one
    /// (the rotation happened between the reads); the next send reads it
    /// again either way.
    pub(crate) fn replaced(
        &self,
        judged: u64,
        now: Instant,
        concealer: &Concealer,
    ) -> Option<Current> {
        let mut state = self.lock();
        self.reread(&mut state, now, concealer);
        match &state.current {
            Some((_, header, generation)) if *generation != judged => Some(Current {
                header: header.clone(),
                generation: *generation,
            }),
            _ => {
                state.stale = true;
                None
            }
        }
    }

    /// Reads the file at `now`: a new token is kept, a failed read is
    /// warned about (naming the path and what was wrong, never the
    /// content) and the last good token kept.
    fn reread(&self, state: &mut State, now: Instant, concealer: &Concealer) {
        state.read_at = Some(now);
        match self.read() {
            Ok(token) => {
                state.problem = None;
                self.adopt(state, token, concealer);
            }
            Err(problem) => {
                tracing::warn!(
                    path = %self.path.display(),
                    problem = %problem.describe(),
                    kept = state.current.is_some(),
                    "the token file could not be read; the last good token (if any) is kept"
                );
                state.problem = Some(problem);
            }
        }
    }

    /// Keeps `token` as the current one when it differs from it.
    fn adopt(&self, state: &mut State, token: Token, concealer: &Concealer) {
        if let Some((current, _, _)) = &state.current
            && current.same_value(&token)
        {
            return;
        }
        token.conceal_in(concealer);
        let generation = state
            .current
            .as_ref()
            .map_or(1, |(_, _, n)| n.saturating_add(1));
        let header = token.header();
        state.current = Some((token, header, generation));
    }

    /// The file's token, read now, through its path: a regular file only,
    /// and no more of it than a token can be, whatever its length says (a
    /// file can grow between the look and the read).
    fn read(&self) -> Result<Token, FileProblem> {
        use std::io::Read as _;
        // A small file on a local disk, read whole: the cost of a syscall,
        // not worth a thread of its own.
        let problem = |error: std::io::Error| match error.kind() {
            std::io::ErrorKind::NotFound => FileProblem::Missing,
            _ => FileProblem::Unreadable,
        };
        let metadata = std::fs::metadata(&self.path).map_err(problem)?;
        if !metadata.is_file() {
            return Err(FileProblem::NotAFile);
        }
        if metadata.len() > MAX_FILE_BYTES {
            return Err(FileProblem::TooLarge);
        }
        let file = std::fs::File::open(&self.path).map_err(problem)?;
        let mut bytes = Vec::new();
        file.take(MAX_FILE_BYTES + 1)
            .read_to_end(&mut bytes)
            .map_err(problem)?;
        parse(&bytes, self.origin.clone())
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, State> {
        self.state
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
    }
}

/// The token a token file's `bytes` hold: trimmed, and checked like any
/// token. What is wrong never quotes the content.
pub(crate) fn parse(bytes: &[u8], origin: Origin) -> Result<Token, FileProblem> {
    if u64::try_from(bytes.len()).unwrap_or(u64::MAX) > MAX_FILE_BYTES {
        return Err(FileProblem::TooLarge);
    }
    let text = std::str::from_utf8(bytes).map_err(|_| FileProblem::NotText)?;
    if text.trim().is_empty() {
        return Err(FileProblem::Empty);
    }
    Token::new(text, origin).map_err(|unusable| FileProblem::NotAHeaderValue(unusable.problem()))
}
