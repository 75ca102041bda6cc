//! Arbitrary token-file content: the reader must not panic; what it sends
//! is `Bearer ` and the content trimmed, all of it visible ASCII; and what
//! it says is wrong never quotes the content: it is the same for content
//! with every letter and digit changed (which is as usable or unusable),
//! so no part of the content shows in it, even where the content happens
//! to be words of the message itself.
//!
//! The same bytes are then a script for a writer that acts on a real
//! token file between the read's system calls and during its waits: a pipe
//! renamed over the path between the look and the open, whole files
//! renamed over it, in-place rewrites in small pieces (torn writes), a
//! removal, a directory, whole-second file times. The read must end (an
//! open that waited on the pipe would hang the run), send only a content
//! the file held whole, and say what is wrong without quoting any content.

#![no_main]

use libfuzzer_sys::fuzz_target;
use meterwire::fuzzing::{token_file, token_file_raced};

fuzz_target!(|data: &[u8]| {
    match token_file(data) {
        Ok(header) => {
            let token = header.strip_prefix(b"Bearer ").expect("a bearer header");
            assert!(!token.is_empty());
            assert!(token.iter().all(|b| b.is_ascii_graphic()), "{header:?}");
            let text = std::str::from_utf8(data).expect("only text is sent");
            assert_eq!(text.trim().as_bytes(), token);
        }
        Err(said) => {
            let changed: Vec<u8> = data.iter().map(|&b| rotated(b)).collect();
            let said_of_changed = token_file(&changed).expect_err("as unusable");
            assert_eq!(said, said_of_changed, "what is said depends on the content");
        }
    }

    let raced = token_file_raced(data);
    match &raced.read {
        Ok(header) => {
            let token = header.strip_prefix("Bearer ").expect("a bearer header");
            assert!(
                raced.whole.iter().any(|whole| whole.trim() == token),
                "sent {token:?}, which the file never held whole: {:?}",
                raced.whole
            );
        }
        Err(said) => {
            for part in ["mw-fuzz", "mw fuzz", "Q7vX2kP9"] {
                assert!(!said.contains(part), "{said:?} quotes the content");
            }
        }
    }
});

/// A letter or a digit moved on by 13 letters or 5 digits; any other byte
/// as it is.
fn rotated(b: u8) -> u8 {
    match b {
        b'a'..=b'z' => b'a' + (b - b'a' + 13) % 26,
        b'A'..=b'Z' => b'A' + (b - b'A' + 13) % 26,
        b'0'..=b'9' => b'0' + (b - b'0' + 5) % 10,
        _ => b,
    }
}
