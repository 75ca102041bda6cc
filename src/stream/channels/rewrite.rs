//! An item rewritten where forms took its strings: each cut is a range of
//! a string's value, found by one reading or another; the cuts of all its
//! strings are mapped to the item's data (a JSON string's between whole
//! escapes, so that the literal stays JSON), merged, and replaced from the
//! right: by `[redacted]` where a form began, by nothing where it went on.
//! Every other byte of the data is kept as it came.

use std::ops::Range;

use super::Carrier;
use super::channel::Cut;
use super::json_spans::boundaries;
use super::readings::{Form, Slot};
use crate::conceal::REDACTED;

/// A string of a held item: where it stands in the data, how its value
/// maps to those bytes, and what forms took of it.
pub(super) struct HeldSlot {
    raw: Range<usize>,
    mapping: Mapping,
    pub(super) cuts: Vec<Cut>,
}

/// How a slot's value stands in the data.
enum Mapping {
    /// A JSON string literal: its value decoded from its escapes.
    Literal,
    /// The data as it is; `within` a literal when the data is one JSON
    /// string, whose quotes and escapes a cut must keep whole.
    Text { within: Option<Range<usize>> },
}

impl HeldSlot {
    pub(super) fn of(slot: &Slot) -> HeldSlot {
        let mapping = match &slot.form {
            Form::Member(_) | Form::Whole(_) => Mapping::Literal,
            Form::Text { within } => Mapping::Text {
                within: within.clone(),
            },
        };
        HeldSlot {
            raw: slot.raw.clone(),
            mapping,
            cuts: Vec::new(),
        }
    }

    /// Its cuts as ranges of the data, each with whether the marker goes
    /// there.
    fn in_data(&self, data: &str, out: &mut Vec<(Range<usize>, bool)>) {
        if self.cuts.is_empty() {
            return;
        }
        let literal = |raw: &Range<usize>| data.get(raw.clone()).map(boundaries);
        match &self.mapping {
            Mapping::Literal => {
                let Some(bounds) = literal(&self.raw) else {
                    return;
                };
                for cut in &self.cuts {
                    let start = raw_at(&bounds, cut.range.start, false);
                    let end = raw_at(&bounds, cut.range.end, true);
                    if start < end {
                        let at = self.raw.start;
                        out.push((at + start..at + end, cut.marker));
                    }
                }
            }
            Mapping::Text { within } => {
                let bounds = within.as_ref().and_then(literal);
                for cut in &self.cuts {
                    let mut start = self.raw.start + cut.range.start;
                    let mut end = self.raw.start + cut.range.end;
                    if let (Some(bounds), Some(within)) = (&bounds, within) {
                        // Inside the literal, out to whole escapes.
                        start =
                            within.start + widen(bounds, start.saturating_sub(within.start), false);
                        end = within.start + widen(bounds, end.saturating_sub(within.start), true);
                    }
                    let start = floor_char(data, start);
                    let end = ceil_char(data, end);
                    if start < end {
                        out.push((start..end, cut.marker));
                    }
                }
            }
        }
    }
}

/// The offset in a literal where the value's byte `at` falls: the start of
/// the character it is in (`up`: the end of it).
fn raw_at(bounds: &[(usize, usize)], at: usize, up: bool) -> usize {
    boundary(bounds, at, up, |&(value, _)| value)
}

/// A literal's offset `at` moved out to the nearest boundary between its
/// escapes (`up`: forward), and kept inside its quotes.
fn widen(bounds: &[(usize, usize)], at: usize, up: bool) -> usize {
    boundary(bounds, at, up, |&(_, raw)| raw)
}

/// The literal's offset of the boundary at or before `at` (`up`: at or
/// after it, the last at most), `at` measured as `side` reads a boundary.
fn boundary(
    bounds: &[(usize, usize)],
    at: usize,
    up: bool,
    side: fn(&(usize, usize)) -> usize,
) -> usize {
    let found = bounds.partition_point(|bound| side(bound) <= at);
    let index = match (up, found) {
        (_, 0) => 0,
        (true, found) if side(&bounds[found - 1]) < at => found.min(bounds.len() - 1),
        (_, found) => found - 1,
    };
    bounds.get(index).map_or(0, |&(_, raw)| raw)
}

fn floor_char(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at -= 1;
    }
    at
}

fn ceil_char(text: &str, mut at: usize) -> usize {
    at = at.min(text.len());
    while !text.is_char_boundary(at) {
        at += 1;
    }
    at
}

/// The item with what forms took of its strings replaced: a merged run of
/// cuts becomes `[redacted]` if a form began in it, else nothing.
pub(super) fn rewritten<T: Carrier>(mut item: T, slots: &[HeldSlot]) -> T {
    let mut cuts: Vec<(Range<usize>, bool)> = Vec::new();
    for slot in slots {
        slot.in_data(item.data(), &mut cuts);
    }
    if cuts.is_empty() {
        return item;
    }
    cuts.sort_by_key(|(range, _)| (range.start, range.end));
    let mut merged: Vec<(Range<usize>, bool)> = Vec::new();
    for (range, marker) in cuts {
        match merged.last_mut() {
            Some((last, last_marker)) if range.start <= last.end => {
                last.end = last.end.max(range.end);
                *last_marker |= marker;
            }
            _ => merged.push((range, marker)),
        }
    }
    let mut data = item.data().to_owned();
    for (range, marker) in merged.into_iter().rev() {
        if data.get(range.clone()).is_some() {
            data.replace_range(range, if marker { REDACTED } else { "" });
        }
    }
    item.set_data(data);
    item
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_cut_of_a_literals_value_falls_between_its_escapes() {
        let bounds = boundaries(r#""a\u00e9b\"c""#);
        // Values: a(0) é(1..3) b(3) "(4) c(5); end 6.
        assert_eq!(raw_at(&bounds, 1, false), 2);
        assert_eq!(raw_at(&bounds, 2, false), 2, "inside é: its start");
        assert_eq!(raw_at(&bounds, 2, true), 8, "inside é: its end");
        assert_eq!(raw_at(&bounds, 6, true), 12, "the end, before the quote");
        assert_eq!(widen(&bounds, 5, false), 2);
        assert_eq!(widen(&bounds, 5, true), 8);
        assert_eq!(widen(&bounds, 0, false), 1, "inside the quotes");
        assert_eq!(widen(&bounds, 13, true), 12);
    }

    #[test]
    fn cuts_of_several_strings_are_merged_and_replaced_from_the_right() {
        let data = r#"{"a":"x sk-\u0041","b":"BC y"}"#.to_owned();
        let slot = |raw: Range<usize>, cuts: Vec<Cut>| HeldSlot {
            raw,
            mapping: Mapping::Literal,
            cuts,
        };
        let slots = [
            slot(
                5..18,
                vec![Cut {
                    range: 2..5,
                    marker: true,
                }],
            ),
            slot(
                23..29,
                vec![
                    Cut {
                        range: 0..1,
                        marker: false,
                    },
                    Cut {
                        range: 1..2,
                        marker: false,
                    },
                ],
            ),
        ];
        assert_eq!(
            rewritten(data, &slots),
            r#"{"a":"x [redacted]\u0041","b":" y"}"#
        );
    }
}
