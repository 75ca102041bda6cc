//! One pass over the text's triggers and line breaks, before any view is
//! decoded: whether any escape can matter, where views must be decoded, and
//! which breaks the text's joined views drop.
//!
//! When no escape decodes to a relevant byte, no view can add a hit: a hit
//! in a view is all pattern bytes, so it holds no decoded byte and is a
//! copy of the text, which the raw scan has searched; and a second layer
//! finds only triggers the text itself holds, starting escapes that are the
//! text's own or that would need a relevant decoded byte to go on. Every
//! view parses its escapes at trigger positions with the same decoders, so
//! reading every trigger once covers them all. Text whose escapes are
//! newlines and quotes (`\n`, `\"`) then costs this one pass.
//!
//! Otherwise views are decoded around the seeds ([`windows`](super::windows)):
//! every escape that decodes to a relevant byte, every escape other than
//! JSON's `\n` and `\r` that decodes to a line break (`%0A`, `&#10;`,
//! `\u000A`: a view joins the lines around it, which the text's own joined
//! views, reading only raw and JSON breaks, do not), a break written half
//! raw and half escaped (`\r\\n`, `\\r\n`: only a decoded view reads it as
//! one), and every raw break the text's joined view drops (a view joins it
//! together with JSON breaks it decodes, which no joined view of the text
//! does). Views are needed wherever there is a seed, even when no escape
//! decodes to a relevant byte: a token broken by `\u000a` is all literal
//! but for its break.

use super::arch::{VIEW_BYTES, find_break, find_trigger};
use super::breaks::{LoneBreaks, mixed_break};
use super::patterns::Search;
use super::positions::Positions;

/// What the pass finds.
#[derive(Default)]
pub(super) struct Survey {
    /// The escapes views must be decoded around, as source spans in order
    /// (those close together merged): none means no view can add a hit.
    pub(super) seeds: Vec<(usize, usize)>,
    /// Where the joined views of the text drop breaks, as source spans in
    /// order (those close together merged): raw ones, and JSON-escaped
    /// ones.
    pub(super) raw_joins: Vec<(usize, usize)>,
    pub(super) escaped_joins: Vec<(usize, usize)>,
}

/// Reads every trigger and raw line break of `text` once.
pub(super) fn survey(search: &Search, text: &[u8]) -> Survey {
    let mut survey = Survey::default();
    let adjacent = |a, b| search.adjacent(a, b);
    let (mut raw, mut escaped) = (LoneBreaks::new(false), LoneBreaks::new(true));
    // Plain JSON holds none of these bytes: two of memchr's passes, at the
    // speed of memory, find that sooner than the masks of five bytes, which
    // then start at the first one found.
    let first = [find_trigger(text), find_break(text)]
        .into_iter()
        .flatten()
        .min();
    let Some(first) = first else {
        return survey;
    };
    let mut positions = Positions::of(text, &VIEW_BYTES);
    // `\"` is left out of the masks when it means nothing (no secret
    // holds a `"`).
    if search.quiet_backslash(b"\\\"", 0) {
        positions = positions.without_pair(b'\\', b'"');
    }
    positions.skip_to(first);
    positions.for_each(|p| {
        let Some(&byte) = text.get(p) else {
            return;
        };
        match byte {
            b'\\' if search.quiet_backslash(text, p) => {
                return;
            }
            // A `%` or `&` that starts no escape (`%%%`, `a & b`): no
            // decoder need look.
            b'%' if !text.get(p + 1).is_some_and(u8::is_ascii_hexdigit) => {
                return;
            }
            b'&' if !text
                .get(p + 1)
                .is_some_and(|&b| b.is_ascii_alphanumeric() || b == b'#') =>
            {
                return;
            }
            b'\r' | b'\n' => {
                if let Some(join) = raw.visit(text, p, adjacent) {
                    push_merged(&mut survey.raw_joins, join, text, &search.separator);
                }
                if let Some(seed) = mixed_break(text, p) {
                    push_merged(&mut survey.seeds, seed, text, &search.separator);
                }
                return;
            }
            b'\\' => {
                if let Some(join) = escaped.visit(text, p, adjacent) {
                    push_merged(&mut survey.escaped_joins, join, text, &search.separator);
                }
            }
            _ => {}
        }
        let seed = search.seed_at(text, p);
        if seed.relevant || seed.line_break {
            push_merged(&mut survey.seeds, (p, seed.end), text, &search.separator);
        }
    });
    survey
}

/// The longest gap [`push_merged`] reads for a separator pair.
const MERGE_GAP: usize = 64;

/// Pushes `span` (starting at or after every span before it), or widens
/// the last span over it when no separator pair lies between the two
/// (looked for only in a gap of at most [`MERGE_GAP`] bytes): both are
/// then in one window whatever else is seeded. Text dense with escapes (a
/// run of backslashes) so keeps a few spans, not one per escape.
fn push_merged(
    spans: &mut Vec<(usize, usize)>,
    (start, end): (usize, usize),
    text: &[u8],
    separator: &[bool; 256],
) {
    if let Some(last) = spans.last_mut()
        && start <= last.1 + MERGE_GAP
    {
        // The pair may straddle either end of the gap.
        let gap = text
            .get(last.1.saturating_sub(1)..(start + 1).min(text.len()))
            .unwrap_or_default();
        let apart = gap
            .windows(2)
            .any(|pair| pair.iter().all(|&b| separator[usize::from(b)]));
        if start <= last.1 || !apart {
            last.1 = last.1.max(end);
            return;
        }
    }
    spans.push((start, end));
}
