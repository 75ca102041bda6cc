//! JSON as serde_json's `Value` reads what the channels' reader reads
//! leniently, for the targets that hold the reader (or what takes its
//! word) to serde_json.

/// Whether a character around a whole text is space to a lenient reader
/// (Rust's `trim`, Python's `strip`), as the reader takes it.
pub fn outer_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// `text` as serde_json's `Value` reads what the reader reads leniently,
/// byte for byte the same length so that every range still points where
/// it did: the space around it as plain spaces, and each surrogate
/// escape without its pair as `\ufffd`, which the reader decodes it to.
pub fn strict(text: &str) -> String {
    let lead = text.len() - text.trim_start_matches(outer_space).len();
    let trail = text.len() - text.trim_end_matches(outer_space).len();
    let mut out = text.as_bytes().to_vec();
    if lead == text.len() {
        out.fill(b' ');
    } else {
        out[..lead].fill(b' ');
        let end = out.len();
        out[end - trail..].fill(b' ');
    }
    let unit = |at: usize| -> Option<u32> {
        let digits = out.get(at..at + 4)?;
        u32::from_str_radix(std::str::from_utf8(digits).ok()?, 16).ok()
    };
    let mut at = 0;
    let mut lone = Vec::new();
    while at + 1 < out.len() {
        if out[at] != b'\\' {
            at += 1;
            continue;
        }
        if out[at + 1] != b'u' {
            at += 2;
            continue;
        }
        match unit(at + 2) {
            Some(0xD800..=0xDBFF) => {
                let paired = out.get(at + 6) == Some(&b'\\')
                    && out.get(at + 7) == Some(&b'u')
                    && matches!(unit(at + 8), Some(0xDC00..=0xDFFF));
                if paired {
                    at += 12;
                } else {
                    lone.push(at);
                    at += 6;
                }
            }
            Some(0xDC00..=0xDFFF) => {
                lone.push(at);
                at += 6;
            }
            _ => at += 2,
        }
    }
    for at in lone {
        out[at..at + 6].copy_from_slice(b"\\ufffd");
    }
    String::from_utf8(out).expect("ASCII written over whole characters")
}
