//! The string values of a JSON object, each with the bytes its literal
//! takes in the text, its decoded value, and the path that names its
//! channel (`mod.rs`).
//!
//! Hand-written rather than read with serde_json, which the crate has: a
//! channel's string is rewritten in place, so the reader must say where
//! each literal stands, which serde_json's values do not (and its maps
//! sort their keys), and it must name an object by its `index` member
//! wherever in the object that member comes. The scanner is the JSON
//! grammar and nothing more, iterative (an explicit stack, no recursion)
//! and bounded in depth; the fuzz target `json_spans` holds it to
//! serde_json on what is JSON and on every value it decodes.

use std::fmt::Write as _;
use std::ops::Range;

/// How deep objects and arrays may nest: past it, the text is read as no
/// JSON object (its data is then one plain channel, concealed as a whole).
pub(crate) const MAX_DEPTH: usize = 64;

/// One string value of the object.
#[derive(Clone, Debug, PartialEq, Eq)]
pub(crate) struct JsonString {
    /// The literal's bytes in the text, its quotes included.
    pub(crate) raw: Range<usize>,
    /// Its value, decoded.
    pub(crate) value: String,
    /// Where it stands: `/key` for an object's member, `/3` for an array's
    /// fourth element, `/#3` for an object whose integer `index` member is
    /// 3 (in place of its position in an array, after its key in an object,
    /// first for the top object). Keys escape `~`, `/` and `#` as `~0`,
    /// `~1` and `~2`.
    pub(crate) path: String,
}

/// Why a text is read as no JSON object.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum NotAnObject {
    /// Valid or not, it does not start with `{`.
    Other,
    /// It is not JSON.
    Invalid,
    /// It nests deeper than [`MAX_DEPTH`].
    TooDeep,
}

/// Where a value stands in its container.
#[derive(Clone, Debug)]
enum Seg {
    Top,
    Key(String),
    Position(u64),
}

/// An object or an array, once opened.
struct Node {
    parent: Option<usize>,
    seg: Seg,
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

/// The string values of `text`, a JSON object, in the order they stand.
pub(crate) fn strings(text: &str) -> Result<Vec<JsonString>, NotAnObject> {
    let bytes = text.as_bytes();
    let mut at = skip_space(bytes, 0);
    if bytes.get(at) != Some(&b'{') {
        return Err(NotAnObject::Other);
    }
    let mut nodes: Vec<Node> = Vec::new();
    // The open containers, innermost last, each with the next position of
    // an array.
    let mut stack: Vec<(usize, u64)> = Vec::new();
    let mut found: Vec<(Range<usize>, String, Option<usize>, Seg)> = Vec::new();
    let mut expect = Expect::Value;
    let mut seg = Seg::Top;
    loop {
        at = skip_space(bytes, at);
        let Some(&byte) = bytes.get(at) else {
            return Err(NotAnObject::Invalid);
        };
        let parent = stack.last().map(|&(node, _)| node);
        match expect {
            Expect::Value | Expect::ValueOrEnd if expect == Expect::ValueOrEnd && byte == b']' => {
                at += 1;
                stack.pop();
                expect = Expect::Next;
            }
            Expect::Value | Expect::ValueOrEnd => {
                if expect == Expect::ValueOrEnd
                    && let Some((_, next)) = stack.last_mut()
                {
                    seg = Seg::Position(*next);
                    *next += 1;
                }
                match byte {
                    b'{' | b'[' => {
                        if stack.len() >= MAX_DEPTH {
                            return Err(NotAnObject::TooDeep);
                        }
                        nodes.push(Node {
                            parent,
                            seg: std::mem::replace(&mut seg, Seg::Top),
                            object: byte == b'{',
                            index: None,
                        });
                        stack.push((nodes.len() - 1, 0));
                        at += 1;
                        expect = if byte == b'{' {
                            Expect::KeyOrEnd
                        } else {
                            Expect::ValueOrEnd
                        };
                        continue;
                    }
                    b'"' => {
                        let (end, value) = string(text, at)?;
                        found.push((
                            at..end,
                            value,
                            parent,
                            std::mem::replace(&mut seg, Seg::Top),
                        ));
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
                        if let (Seg::Key(key), Some(node)) = (&seg, parent)
                            && key == "index"
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
                    stack.pop();
                    expect = Expect::Next;
                }
                b'"' => {
                    let (end, key) = string(text, at)?;
                    seg = Seg::Key(key);
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
                let Some(&(node, _)) = stack.last() else {
                    return Err(NotAnObject::Invalid);
                };
                let object = nodes[node].object;
                match byte {
                    b',' => expect = if object { Expect::Key } else { Expect::Value },
                    b'}' if object => {
                        stack.pop();
                    }
                    b']' if !object => {
                        stack.pop();
                    }
                    _ => return Err(NotAnObject::Invalid),
                }
                at += 1;
                if expect == Expect::Value
                    && let Some((_, next)) = stack.last_mut()
                {
                    seg = Seg::Position(*next);
                    *next += 1;
                }
            }
        }
        if stack.is_empty() && expect == Expect::Next {
            break;
        }
    }
    if skip_space(bytes, at) != bytes.len() {
        return Err(NotAnObject::Invalid);
    }
    // Paths, parents first: a node is always pushed after its parent.
    let mut paths: Vec<String> = Vec::with_capacity(nodes.len());
    for node in &nodes {
        let mut path = node.parent.map(|p| paths[p].clone()).unwrap_or_default();
        match (&node.seg, node.index) {
            (Seg::Position(_), Some(index)) => {
                let _ = write!(path, "/#{index}");
            }
            (seg, index) => {
                push_seg(&mut path, seg);
                if let Some(index) = index {
                    let _ = write!(path, "/#{index}");
                }
            }
        }
        paths.push(path);
    }
    Ok(found
        .into_iter()
        .map(|(raw, value, parent, seg)| {
            let mut path = parent.map(|p| paths[p].clone()).unwrap_or_default();
            push_seg(&mut path, &seg);
            JsonString { raw, value, path }
        })
        .collect())
}

fn push_seg(path: &mut String, seg: &Seg) {
    match seg {
        Seg::Top => {}
        Seg::Position(position) => {
            let _ = write!(path, "/{position}");
        }
        Seg::Key(key) => {
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
    }
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
            return match unit {
                0xD800..=0xDBFF => {
                    if bytes.get(at + 6) != Some(&b'\\') || bytes.get(at + 7) != Some(&b'u') {
                        return Err(NotAnObject::Invalid);
                    }
                    let low = hex4(bytes, at + 8)?;
                    if !(0xDC00..=0xDFFF).contains(&low) {
                        return Err(NotAnObject::Invalid);
                    }
                    let code = 0x10000 + ((unit - 0xD800) << 10) + (low - 0xDC00);
                    char::from_u32(code)
                        .map(|c| (at + 12, c))
                        .ok_or(NotAnObject::Invalid)
                }
                0xDC00..=0xDFFF => Err(NotAnObject::Invalid),
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
            "{\"a\":\"\\ud800\"}",
            "{\"a\":\"\\udc00\"}",
            "{\"a\":\"\u{1}\"}",
            "{\"a\":\"\\x41\"}",
            "{\"a\":tru}",
            "{} {}",
            "{\"a\":[1 2]}",
            "{\"a\":[1}",
        ] {
            assert_eq!(strings(invalid), Err(NotAnObject::Invalid), "{invalid:?}");
        }
        let deep = format!(
            "{{\"a\":{}1{}}}",
            "[".repeat(MAX_DEPTH),
            "]".repeat(MAX_DEPTH)
        );
        assert_eq!(strings(&deep), Err(NotAnObject::TooDeep));
        let fits = format!(
            "{{\"a\":{}1{}}}",
            "[".repeat(MAX_DEPTH - 1),
            "]".repeat(MAX_DEPTH - 1)
        );
        assert_eq!(strings(&fits), Ok(Vec::new()));
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
}
