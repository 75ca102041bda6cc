//! What a token file holds: a token, trimmed and checked like any other,
//! or what is wrong with it, in words that never quote the content. A leaf
//! of its own, read by the file's reader (`read.rs`) and its keeper
//! (`file.rs`) alike.

use super::Token;
use crate::conceal::{Shown, shown};
use crate::config::origin::Origin;

/// The largest file read as a token: a bearer token is a few hundred
/// characters, and a projected service-account token a few kilobytes.
pub(crate) const MAX_FILE_BYTES: u64 = 64 * 1024;

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
    /// It was still being written: it changed while it was read, or did
    /// not stand still for long enough within the time a read may take.
    Changing,
    /// Its read did not end within the send's deadline.
    TooSlow,
}

impl FileProblem {
    /// `is missing`, `holds a line break`, …
    pub(crate) fn describe(&self) -> Shown {
        match self {
            FileProblem::Missing => Shown::from("does not exist"),
            FileProblem::Unreadable => Shown::from("cannot be read (check its permissions)"),
            FileProblem::NotAFile => Shown::from(
                "is not a regular file (a directory, a pipe or a device), so it holds no token",
            ),
            FileProblem::Empty => Shown::from("is empty"),
            FileProblem::TooLarge => {
                shown!("is larger than {MAX_FILE_BYTES} bytes, so it holds no token")
            }
            FileProblem::NotText => Shown::from("is not UTF-8 text"),
            FileProblem::NotAHeaderValue(problem) => {
                shown!("{}, so it cannot be sent as a header value", *problem)
            }
            FileProblem::Changing => Shown::from(
                "was still being written (it changed while it was read), \
                 so what it held is not yet a token; write it to another file and rename that \
                 over it",
            ),
            FileProblem::TooSlow => Shown::from(
                "could not be read within the send's deadline (is its file system responding?)",
            ),
        }
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
