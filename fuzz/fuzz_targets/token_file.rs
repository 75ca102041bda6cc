//! Arbitrary token-file content: the reader must not panic; what it sends
//! is `Bearer ` and the content trimmed, all of it visible ASCII; and what
//! it says is wrong never quotes the content.

#![no_main]

use libfuzzer_sys::fuzz_target;
use meterwire::fuzzing::token_file;

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
            // Content long enough to be a secret is never repeated back.
            if let Ok(text) = std::str::from_utf8(data) {
                let text = text.trim();
                if text.len() >= 8 {
                    assert!(!said.contains(text), "{said:?}");
                }
            }
        }
    }
});
