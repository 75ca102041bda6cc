//! The string values of a JSON object, each with the bytes its literal
//! takes in the text, its decoded value, and the paths that name the
//! channels it joins (`readings.rs`): by the path with `index` members, by
//! keys and array positions, by keys alone; and whether serde_json's
//! reading, which keeps the last of a repeated key, drops it.
//!
//! Hand-written rather than read with serde_json, which the crate has: a
//! channel's string is rewritten in place, so the reader must say where
//! each literal stands, which serde_json's values do not (and its maps
//! keep one of a repeated key), and it must name an object by its `index`
//! member wherever in the object that member comes. The scanner is the
//! JSON grammar and nothing more, iterative (an explicit stack, no
//! recursion) and bounded in depth; the fuzz target `json_spans` holds it
//! to serde_json on what is JSON, on every value it decodes, and on which
//! strings serde_json's reading keeps.

use std::fmt::Write as _;
use std::ops::Range;

/// How deep objects and arrays are named: the strings inside a container
/// nested deeper are read over (the text must still be JSON) and join no
/// channel, while the strings above it still do.
pub(crate) const MAX_DEPTH: usize = 64;

/// One string value of the object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct JsonString {
    /// The literal's bytes in the text, its quotes included.
    pub(crate) raw: Range<usize>,
    /// Its value, decoded.
    pub(crate) value: String,
    /// Where it stands, by `index`: `/key` for an object's member, `/3`
    /// for an array's fourth element, `/#3` for an object whose integer
    /// `index` member is 3 (in place of its position in an array, after
    /// its key in an object, first for the top object). Keys escape `~`,
    /// `/` and `#` as `~0`, `~1` and `~2`.
    pub(crate) path: String,
    /// Where it stands by keys and array positions alone, as a reader that
    /// takes `choices[0]` finds it.
    pub(crate) position: String,
    /// Its keys alone, every array position dropped: every `content` of
    /// every choice, every `text` of a message's parts.
    pub(crate) keys: String,
    /// Whether a later member of one of the objects it stands in has the
    /// same key: serde_json keeps that one, so its reading drops this.
    pub(crate) shadowed: bool,
}

/// Why a text is read as no JSON object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NotAnObject {
    /// Valid or not, it does not start with `{`.
    Other,
    /// It is not JSON.
    Invalid,
}

/// Where a value stands in its container.
#[derive(Clone, Copy, Debug)]
enum Seg {
    Top,
    /// A member's key, by its place among the keys read.
    Key(usize),
    Position(u64),
}

/// An object or an array, once opened, within the depth that is named.
struct Node {
    parent: Option<usize>,
    seg: Seg,
    /// Which member of its parent object it is, if it is one.
    member: Option<usize>,
    object: bool,
    /// The object's integer `index` member, the last one if several.
    index: Option<u64>,
}

/// What the scanner expects next.
#[derive(Clone, Copy, PartialEq, Eq)]
enum Expect {
    /// A value.
    Value,
    /// A key, or `}` (right after `{`).
    KeyOrEnd,
    /// A key (after a `,`).
    Key,
    /// A `:`.
    Colon,
    /// A value, or `]` (right after `[`).
    ValueOrEnd,
    /// A `,` or the end of the container.
    Next,
}

/// A string found within the named depth, before its paths are written.
struct Found {
    raw: Range<usize>,
    value: String,
    parent: Option<usize>,
    seg: Seg,
    member: Option<usize>,
}

/// The string values of `text`, a JSON object, in the order they stand:
/// those nested deeper than [`MAX_DEPTH`] are left out, the rest kept.
pub(crate) fn strings(text: &str) -> Result<Vec<JsonString>, NotAnObject> {
    let bytes = text.as_bytes();
    let mut at = skip_outer_space(text, 0);
    if bytes.get(at) != Some(&b'{') {
        return Err(NotAnObject::Other);
    }
    let mut nodes: Vec<Node> = Vec::new();
    // The open containers within the named depth, innermost last, each
    // with the next position of an array; past it, only whether each is
    // an object, for the grammar.
    let mut stack: Vec<(usize, u64)> = Vec::new();
    let mut deep: Vec<bool> = Vec::new();
    let mut keys: Vec<String> = Vec::new();
    // Each member of a named object: its object and its key.
    let mut members: Vec<(usize, usize)> = Vec::new();
    let mut found: Vec<Found> = Vec::new();
    let mut expect = Expect::Value;
    let mut seg = Seg::Top;
    loop {
        at = skip_space(bytes, at);
        let Some(&byte) = bytes.get(at) else {
            return Err(NotAnObject::Invalid);
        };
        let named = deep.is_empty();
        let parent = stack.last().map(|&(node, _)| node).filter(|_| named);
        match expect {
            Expect::Value | Expect::ValueOrEnd if expect == Expect::ValueOrEnd && byte == b']' => {
                at += 1;
                if deep.pop().is_none() {
                    stack.pop();
                }
                expect = Expect::Next;
            }
            Expect::Value | Expect::ValueOrEnd => {
                if expect == Expect::ValueOrEnd
                    && named
                    && let Some((_, next)) = stack.last_mut()
                {
                    seg = Seg::Position(*next);
                    *next += 1;
                }
                // A member of a named object is counted, whatever its value:
                // a number can stand in for a string serde_json then drops.
                let member = match (seg, parent) {
                    (Seg::Key(key), Some(object)) if named => {
                        members.push((object, key));
                        Some(members.len() - 1)
                    }
                    _ => None,
                };
                match byte {
                    b'{' | b'[' => {
                        at += 1;
                        expect = if byte == b'{' {
                            Expect::KeyOrEnd
                        } else {
                            Expect::ValueOrEnd
                        };
                        if !named || stack.len() >= MAX_DEPTH {
                            deep.push(byte == b'{');
                            continue;
                        }
                        nodes.push(Node {
                            parent,
                            seg: std::mem::replace(&mut seg, Seg::Top),
                            member,
                            object: byte == b'{',
                            index: None,
                        });
                        stack.push((nodes.len() - 1, 0));
                        continue;
                    }
                    b'"' => {
                        let (end, value) = string(text, at)?;
                        if named {
                            found.push(Found {
                                raw: at..end,
                                value,
                                parent,
                                seg: std::mem::replace(&mut seg, Seg::Top),
                                member,
                            });
                        }
                        at = end;
                    }
                    b't' | b'f' | b'n' => {
                        let word: &[u8] = match byte {
                            b't' => b"true",
                            b'f' => b"false",
                            _ => b"null",
                        };
                        if !bytes[at..].starts_with(word) {
                            return Err(NotAnObject::Invalid);
                        }
                        at += word.len();
                    }
                    b'-' | b'0'..=b'9' => {
                        let (end, integer) = number(bytes, at)?;
                        if let (Seg::Key(key), Some(node)) = (seg, parent)
                            && keys[key] == "index"
                            && let Some(index) = integer
                        {
                            nodes[node].index = Some(index);
                        }
                        at = end;
                    }
                    _ => return Err(NotAnObject::Invalid),
                }
                expect = Expect::Next;
            }
            Expect::KeyOrEnd | Expect::Key => match byte {
                b'}' if expect == Expect::KeyOrEnd => {
                    at += 1;
                    if deep.pop().is_none() {
                        stack.pop();
                    }
                    expect = Expect::Next;
                }
                b'"' => {
                    let (end, key) = string(text, at)?;
                    if named {
                        keys.push(key);
                        seg = Seg::Key(keys.len() - 1);
                    }
                    at = end;
                    expect = Expect::Colon;
                }
                _ => return Err(NotAnObject::Invalid),
            },
            Expect::Colon => {
                if byte != b':' {
                    return Err(NotAnObject::Invalid);
                }
                at += 1;
                expect = Expect::Value;
            }
            Expect::Next => {
                let object = match deep.last() {
                    Some(&object) => object,
                    None => {
                        let Some(&(node, _)) = stack.last() else {
                            return Err(NotAnObject::Invalid);
                        };
                        nodes[node].object
                    }
                };
                match byte {
                    b',' => expect = if object { Expect::Key } else { Expect::Value },
                    b'}' if object => {
                        if deep.pop().is_none() {
                            stack.pop();
                        }
                    }
                    b']' if !object => {
                        if deep.pop().is_none() {
                            stack.pop();
                        }
                    }
                    _ => return Err(NotAnObject::Invalid),
                }
                at += 1;
                if expect == Expect::Value
                    && deep.is_empty()
                    && let Some((_, next)) = stack.last_mut()
                {
                    seg = Seg::Position(*next);
                    *next += 1;
                }
            }
        }
        if stack.is_empty() && deep.is_empty() && expect == Expect::Next {
            break;
        }
    }
    if skip_outer_space(text, at) != bytes.len() {
        return Err(NotAnObject::Invalid);
    }
    let dropped = shadowed_members(&members, &keys);
    // Paths, parents first: a node is always pushed after its parent.
    let mut paths: Vec<Paths> = Vec::with_capacity(nodes.len());
    for node in &nodes {
        let mut path = node.parent.map(|p| paths[p].clone()).unwrap_or_default();
        path.shadowed |= node.member.is_some_and(|member| dropped[member]);
        path.push(node.seg, node.index, &keys);
        paths.push(path);
    }
    Ok(found
        .into_iter()
        .map(|found| {
            let mut path = found.parent.map(|p| paths[p].clone()).unwrap_or_default();
            path.shadowed |= found.member.is_some_and(|member| dropped[member]);
            path.push(found.seg, None, &keys);
            JsonString {
                raw: found.raw,
                value: found.value,
                path: path.indexed,
                position: path.position,
                keys: path.keys,
                shadowed: path.shadowed,
            }
        })
        .collect())
}

/// Which members a later member of the same object with the same key
/// replaces, as serde_json's map does.
fn shadowed_members(members: &[(usize, usize)], keys: &[String]) -> Vec<bool> {
    let mut dropped = vec![false; members.len()];
    let mut order: Vec<usize> = (0..members.len()).collect();
    order.sort_by(|&a, &b| {
        let (object_a, key_a) = members[a];
        let (object_b, key_b) = members[b];
        (object_a, &keys[key_a], a).cmp(&(object_b, &keys[key_b], b))
    });
    for pair in order.windows(2) {
        let (earlier, later) = (pair[0], pair[1]);
        let (object_a, key_a) = members[earlier];
        let (object_b, key_b) = members[later];
        if object_a == object_b && keys[key_a] == keys[key_b] {
            dropped[earlier] = true;
        }
    }
    dropped
}

/// The three paths of a value, and whether serde_json's reading drops it.
#[derive(Clone, Default)]
struct Paths {
    indexed: String,
    position: String,
    keys: String,
    shadowed: bool,
}

impl Paths {
    /// The paths of the value at `seg` in this container; `index`, the
    /// value's own `index` member if it is an object with one.
    fn push(&mut self, seg: Seg, index: Option<u64>, keys: &[String]) {
        match seg {
            Seg::Top => {}
            Seg::Position(position) => {
                let _ = write!(self.position, "/{position}");
                if index.is_none() {
                    let _ = write!(self.indexed, "/{position}");
                }
            }
            Seg::Key(key) => {
                for path in [&mut self.indexed, &mut self.position, &mut self.keys] {
                    push_key(path, &keys[key]);
                }
            }
        }
        if let Some(index) = index {
            let _ = write!(self.indexed, "/#{index}");
        }
    }
}

fn push_key(path: &mut String, key: &str) {
    path.push('/');
    for c in key.chars() {
        match c {
            '~' => path.push_str("~0"),
            '/' => path.push_str("~1"),
            '#' => path.push_str("~2"),
            c => path.push(c),
        }
    }
}

/// The JSON string that `text` is whole (spaces around it aside): its
/// literal's bytes and its value; `None` when it is anything else.
pub(crate) fn whole_string(text: &str) -> Option<(Range<usize>, String)> {
    let bytes = text.as_bytes();
    let at = skip_outer_space(text, 0);
    if bytes.get(at) != Some(&b'"') {
        return None;
    }
    let (end, value) = string(text, at).ok()?;
    (skip_outer_space(text, end) == bytes.len()).then_some((at..end, value))
}

/// Where each character of a string literal's value starts, as a pair of
/// offsets: in the value, and in the literal (its opening quote at 0);
/// the last pair is both ends. A range of the value between two of them
/// is a range of the literal that holds whole escapes, so that cutting it
/// out, or writing `[redacted]` there, leaves a literal that is JSON.
pub(crate) fn boundaries(literal: &str) -> Vec<(usize, usize)> {
    let bytes = literal.as_bytes();
    let mut out = Vec::new();
    let mut value = 0;
    let mut at = 1;
    while at + 1 < bytes.len() {
        out.push((value, at));
        if bytes[at] == b'\\' {
            let Ok((next, c)) = escape(bytes, at) else {
                break;
            };
            value += c.len_utf8();
            at = next;
        } else {
            let width = literal
                .get(at..)
                .and_then(|rest| rest.chars().next())
                .map_or(1, char::len_utf8);
            value += width;
            at += width;
        }
    }
    out.push((value, bytes.len().saturating_sub(1).max(1)));
    out
}

/// Whether a character around a whole JSON text is space to a lenient
/// reader: Rust's `trim` drops every Unicode white space (a no-break space,
/// a form feed, U+2028), Python's `strip` the information separators
/// `\x1c`–`\x1f` as well. `json.loads(line.strip())` reads an object
/// behind any of them, so the channels and `next_delta` read one there too.
pub(crate) fn outer_space(c: char) -> bool {
    c.is_whitespace() || ('\u{1c}'..='\u{1f}').contains(&c)
}

/// Where the text from `at` (a character boundary) goes on past
/// [`outer_space`].
fn skip_outer_space(text: &str, at: usize) -> usize {
    let rest = text.get(at..).unwrap_or_default();
    at + (rest.len() - rest.trim_start_matches(outer_space).len())
}

/// The text of a whole JSON string literal (quotes included) decoded as the
/// channels decode it, a lone surrogate as U+FFFD; `None` when it is not
/// one literal.
pub(crate) fn literal_value(literal: &str) -> Option<String> {
    if !literal.starts_with('"') {
        return None;
    }
    let (end, value) = string(literal, 0).ok()?;
    (end == literal.len()).then_some(value)
}

fn skip_space(bytes: &[u8], mut at: usize) -> usize {
    while matches!(bytes.get(at), Some(b' ' | b'\t' | b'\n' | b'\r')) {
        at += 1;
    }
    at
}

/// The string literal at `text[at]` (a `"`): where it ends, past its
/// closing quote, and its value.
fn string(text: &str, at: usize) -> Result<(usize, String), NotAnObject> {
    let bytes = text.as_bytes();
    let mut value = String::new();
    let mut from = at + 1;
    loop {
        let rest = bytes.get(from..).unwrap_or_default();
        let Some(stop) = memchr::memchr2(b'"', b'\\', rest) else {
            return Err(NotAnObject::Invalid);
        };
        let run = &rest[..stop];
        if run.iter().any(|&b| b < 0x20) {
            return Err(NotAnObject::Invalid);
        }
        // `"` and `\` are ASCII: both ends are character boundaries.
        value.push_str(text.get(from..from + stop).unwrap_or_default());
        let at = from + stop;
        if bytes[at] == b'"' {
            return Ok((at + 1, value));
        }
        let (next, c) = escape(bytes, at)?;
        value.push(c);
        from = next;
    }
}

/// The escape at `bytes[at]` (a `\`): where it ends and what it decodes to.
fn escape(bytes: &[u8], at: usize) -> Result<(usize, char), NotAnObject> {
    let c = match bytes.get(at + 1) {
        Some(b'"') => '"',
        Some(b'\\') => '\\',
        Some(b'/') => '/',
        Some(b'b') => '\u{8}',
        Some(b'f') => '\u{c}',
        Some(b'n') => '\n',
        Some(b'r') => '\r',
        Some(b't') => '\t',
        Some(b'u') => {
            let unit = hex4(bytes, at + 2)?;
            // A surrogate without its pair is read as U+FFFD and the
            // escape after it on its own, as serde_json skips it in a
            // member it ignores, and JavaScript and Python keep it: a
            // reader of the engine's choosing reads the strings beside it.
            return match unit {
                0xD800..=0xDBFF => {
                    let low = (bytes.get(at + 6) == Some(&b'\\')
                        && bytes.get(at + 7) == Some(&b'u'))
                    .then(|| hex4(bytes, at + 8).ok())
                    .flatten()
                    .filter(|low| (0xDC00..=0xDFFF).contains(low));
                    let Some(low) = low else {
                        return Ok((at + 6, char::REPLACEMENT_CHARACTER));
                    };
                    let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    char::from_u32(code)
                        .map(|c| (at + 12, c))
                        .ok_or(NotAnObject::Invalid)
                }
                0xDC00..=0xDFFF => Ok((at + 6, char::REPLACEMENT_CHARACTER)),
                unit => char::from_u32(unit)
                    .map(|c| (at + 6, c))
                    .ok_or(NotAnObject::Invalid),
            };
        }
        _ => return Err(NotAnObject::Invalid),
    };
    Ok((at + 2, c))
}

fn hex4(bytes: &[u8], at: usize) -> Result<u32, NotAnObject> {
    let digits = bytes.get(at..at + 4).ok_or(NotAnObject::Invalid)?;
    digits.iter().try_fold(0u32, |unit, &b| {
        let digit = char::from(b).to_digit(16).ok_or(NotAnObject::Invalid)?;
        Ok(unit * 16 + digit)
    })
}

/// The number at `bytes[at]`: where it ends, and its value when it is a
/// non-negative integer that fits.
fn number(bytes: &[u8], at: usize) -> Result<(usize, Option<u64>), NotAnObject> {
    let digits = |from: usize| {
        bytes
            .get(from..)
            .unwrap_or_default()
            .iter()
            .take_while(|b| b.is_ascii_digit())
            .count()
    };
    let mut end = at;
    let negative = bytes.get(end) == Some(&b'-');
    if negative {
        end += 1;
    }
    let whole = digits(end);
    if whole == 0 || (whole > 1 && bytes[end] == b'0') {
        return Err(NotAnObject::Invalid);
    }
    let integer_digits = &bytes[end..end + whole];
    end += whole;
    let mut integer = !negative;
    if bytes.get(end) == Some(&b'.') {
        let fraction = digits(end + 1);
        if fraction == 0 {
            return Err(NotAnObject::Invalid);
        }
        end += 1 + fraction;
        integer = false;
    }
    if matches!(bytes.get(end), Some(b'e' | b'E')) {
        end += 1;
        if matches!(bytes.get(end), Some(b'+' | b'-')) {
            end += 1;
        }
        let exponent = digits(end);
        if exponent == 0 {
            return Err(NotAnObject::Invalid);
        }
        end += exponent;
        integer = false;
    }
    let value = integer
        .then(|| {
            integer_digits.iter().try_fold(0u64, |n, &d| {
                n.checked_mul(10)?.checked_add(u64::from(d - b'0'))
            })
        })
        .flatten();
    Ok((end, value))
}

#[cfg(test)]
mod tests {
    use super::*;

    fn paths(text: &str) -> Vec<(String, String)> {
        strings(text)
            .expect("a JSON object")
            .into_iter()
            .map(|s| {
                assert_eq!(
                    serde_json::from_str::<String>(&text[s.raw.clone()]).ok(),
                    Some(s.value.clone())
                );
                (s.path, s.value)
            })
            .collect()
    }

    #[test]
    fn openai_choices_and_tool_calls_are_named_by_their_index() {
        let chunk = r#"{"id":"c1","choices":[{"delta":{"content":"he\u006c\"lo","tool_calls":[{"index":1,"function":{"arguments":"{\"a\""}}]},"index":2}]}"#;
        assert_eq!(
            paths(chunk),
            [
                ("/id".to_owned(), "c1".to_owned()),
                ("/choices/#2/delta/content".to_owned(), "hel\"lo".to_owned()),
                (
                    "/choices/#2/delta/tool_calls/#1/function/arguments".to_owned(),
                    "{\"a\"".to_owned()
                ),
            ]
        );
    }

    #[test]
    fn every_string_is_named_by_position_and_by_keys_alone_too() {
        let chunk = r#"{"choices":[{"index":1,"delta":{"content":"a"}},{"parts":[{"text":"b"},{"text":"c"}]}]}"#;
        let found = strings(chunk).expect("an object");
        let named: Vec<(&str, &str, &str)> = found
            .iter()
            .map(|s| (s.path.as_str(), s.position.as_str(), s.keys.as_str()))
            .collect();
        assert_eq!(
            named,
            [
                (
                    "/choices/#1/delta/content",
                    "/choices/0/delta/content",
                    "/choices/delta/content"
                ),
                (
                    "/choices/1/parts/0/text",
                    "/choices/1/parts/0/text",
                    "/choices/parts/text"
                ),
                (
                    "/choices/1/parts/1/text",
                    "/choices/1/parts/1/text",
                    "/choices/parts/text"
                ),
            ]
        );
    }

    #[test]
    fn the_top_object_is_named_by_its_index_and_arrays_by_position() {
        let block =
            r#" {"type":"d","index":3,"delta":{"text":"x"},"list":["a",{"k":"b"}],"o/#~":"c"} "#;
        assert_eq!(
            paths(block),
            [
                ("/#3/type".to_owned(), "d".to_owned()),
                ("/#3/delta/text".to_owned(), "x".to_owned()),
                ("/#3/list/0".to_owned(), "a".to_owned()),
                ("/#3/list/1/k".to_owned(), "b".to_owned()),
                ("/#3/o~1~2~0".to_owned(), "c".to_owned()),
            ]
        );
        // An index that is not a non-negative integer names nothing.
        assert_eq!(paths(r#"{"index":-1,"a":"x"}"#)[0].0, "/a");
        assert_eq!(paths(r#"{"index":1.5,"a":"x"}"#)[0].0, "/a");
        assert_eq!(paths(r#"{"index":"1","a":"x"}"#)[1].0, "/a");
    }

    #[test]
    fn a_repeated_key_keeps_each_occurrence_and_says_which_serde_json_drops() {
        let text = r#"{"a":"x","b":{"c":"y"},"a":{"d":"z"},"b":1,"e":["u","u"]}"#;
        let found = strings(text).expect("an object");
        let dropped: Vec<(&str, bool)> = found
            .iter()
            .map(|s| (s.value.as_str(), s.shadowed))
            .collect();
        assert_eq!(
            dropped,
            [
                ("x", true),
                ("y", true),
                ("z", false),
                ("u", false),
                ("u", false)
            ]
        );
        let value: serde_json::Value = serde_json::from_str(text).expect("JSON");
        assert_eq!(value["a"]["d"], "z");
        assert_eq!(value["b"], 1);
    }

    #[test]
    fn strings_above_a_container_nested_past_the_bound_are_still_found() {
        let deep = format!(
            "{{\"before\":\"a\",\"x\":{}{{\"k\":\"hidden\"}}{},\"after\":\"b\"}}",
            "[".repeat(MAX_DEPTH),
            "]".repeat(MAX_DEPTH)
        );
        let found: Vec<String> = strings(&deep)
            .expect("an object, however deep")
            .into_iter()
            .map(|s| s.value)
            .collect();
        assert_eq!(found, ["a", "b"]);
        let fits = format!(
            "{{\"a\":{}\"in\"{}}}",
            "[".repeat(MAX_DEPTH - 1),
            "]".repeat(MAX_DEPTH - 1)
        );
        assert_eq!(strings(&fits).expect("an object")[0].value, "in");
        // Deep or not, the grammar is checked to the end.
        let broken = format!("{{\"a\":{}1}}", "[".repeat(MAX_DEPTH + 4));
        assert_eq!(strings(&broken), Err(NotAnObject::Invalid));
        let mismatched = format!(
            "{{\"a\":{}{{]{}}}",
            "[".repeat(MAX_DEPTH),
            "]".repeat(MAX_DEPTH)
        );
        assert_eq!(strings(&mismatched), Err(NotAnObject::Invalid));
    }

    #[test]
    fn what_is_not_a_json_object_is_told_apart() {
        assert_eq!(strings("[1]"), Err(NotAnObject::Other));
        assert_eq!(strings("hello"), Err(NotAnObject::Other));
        assert_eq!(strings(""), Err(NotAnObject::Other));
        for invalid in [
            "{",
            "{\"a\"}",
            "{\"a\":}",
            "{\"a\":1,}",
            "{\"a\":01}",
            "{\"a\":1.}",
            "{\"a\":\"\\ud800\\u12\"}",
            "\u{a0}{} x",
            "{\"a\":\"\u{1}\"}",
            "{\"a\":\"\\x41\"}",
            "{\"a\":tru}",
            "{} {}",
            "{\"a\":[1 2]}",
            "{\"a\":[1}",
        ] {
            assert_eq!(strings(invalid), Err(NotAnObject::Invalid), "{invalid:?}");
        }
    }

    #[test]
    fn a_lone_surrogate_is_read_as_a_replacement_character_and_the_strings_beside_it_kept() {
        for (text, value) in [
            (r#"{"a":"\ud800"}"#, "\u{fffd}"),
            (r#"{"a":"\udc00x"}"#, "\u{fffd}x"),
            (r#"{"a":"\ud800\u0041"}"#, "\u{fffd}A"),
            (r#"{"a":"\ud800\ud800\udc00"}"#, "\u{fffd}\u{10000}"),
        ] {
            let found = strings(text).expect("an object");
            assert_eq!(found[0].value, value, "{text}");
            assert_eq!(
                literal_value(&text[5..text.len() - 1]).as_deref(),
                Some(value)
            );
        }
        let beside = strings(r#"{"id":"\udc00","choices":[{"delta":{"content":"mw-"}}]}"#)
            .expect("an object");
        assert_eq!(beside[1].value, "mw-");
    }

    #[test]
    fn the_space_a_lenient_reader_drops_around_an_object_is_none_of_it() {
        for space in [
            "\u{a0}", "\u{c}", "\u{b}", "\u{2028}", "\u{3000}", "\u{1c}", " \t",
        ] {
            let text = format!("{space}{{\"a\":\"mw-\"}}{space}");
            let found = strings(&text).expect("an object");
            assert_eq!(&text[found[0].raw.clone()], "\"mw-\"", "{space:?}");
            let whole = whole_string(&format!("{space}\"mw-\"{space}"));
            assert_eq!(whole.map(|(_, value)| value).as_deref(), Some("mw-"));
        }
        assert_eq!(strings("x{}"), Err(NotAnObject::Other));
    }

    #[test]
    fn surrogate_pairs_and_every_escape_decode_as_serde_json_decodes_them() {
        let text =
            r#"{"a":"\ud83d\ude00 \b\f\n\r\t\/\\ é","b":[true,false,null,-1.5e3,{}],"c":""}"#;
        assert_eq!(
            paths(text),
            [
                (
                    "/a".to_owned(),
                    "\u{1F600} \u{8}\u{c}\n\r\t/\\ é".to_owned()
                ),
                ("/c".to_owned(), String::new()),
            ]
        );
    }

    #[test]
    fn a_json_string_that_is_the_whole_text_is_read_as_one() {
        assert_eq!(
            whole_string(" \"sk\\u002d1\" "),
            Some((1..12, "sk-1".to_owned()))
        );
        for not in ["\"a\" \"b\"", "{\"a\":\"b\"}", "\"open", "plain"] {
            assert_eq!(whole_string(not), None, "{not:?}");
        }
    }

    #[test]
    fn a_literals_boundaries_fall_between_its_escapes() {
        let literal = r#""a\u00e9\ud83d\ude00\"é""#;
        assert_eq!(
            boundaries(literal),
            [(0, 1), (1, 2), (3, 8), (7, 20), (8, 22), (10, 24)]
        );
        assert_eq!(boundaries("\"\""), [(0, 1)]);
    }
}
