//! One stretch of a text concealed: its own scan, and its views (and their
//! views, one layer deep), each with its joined views, decoded whole for a
//! short stretch and in windows around the escapes that can matter for a
//! long one.

use super::alike::alike;
use super::arch::{find_break, find_trigger};
use super::listed::{lenient_differs_listed, list};
use super::maps::{Nested, Raw, SourceMap, Window};
use super::patterns::Search;
use super::scan::{Spans, scan};
use super::survey::survey;
use super::views::{Families, Holds, Runs, View, lenient_differs};
use super::windows::windows;

/// Stretches up to this long are decoded whole: what the survey and its
/// windows would save is less than they cost.
const SHORT_STRETCH: usize = 512;

/// Records every hit in `hay`, the text's bytes from `offset` on: a
/// stretch the gate found, or the whole text. Decoding it reads exactly
/// the escapes decoding the whole text reads there (it starts after a
/// separator, and ends with one), so it finds exactly the hits the whole
/// text's views find in it.
pub(super) fn conceal_stretch(
    search: &Search,
    hay: &[u8],
    offset: usize,
    spans: &mut Spans,
    buffers: &mut Buffers,
) {
    // The byte that ends a stretch the gate found is a separator, which no
    // pattern holds, nor a base64 core's neighbours or padding: the text's
    // own scan needs only the run before it, which spares a stretch around
    // an echo the lookup of its last piece.
    let run = match hay.split_last() {
        Some((&last, run)) if search.separator[usize::from(last)] => run,
        _ => hay,
    };
    scan(search, run, &Raw(offset), spans);
    if hay.len() <= SHORT_STRETCH {
        let holds = list(hay, &mut buffers.listed);
        // Without a trigger or a line break, every view is the text itself.
        if holds.nothing() {
            return;
        }
        scan_joins(search, hay, holds, &Window(offset), spans);
        views_of(search, hay, holds, offset, spans, buffers, true);
        return;
    }
    if find_trigger(hay).is_none() && find_break(hay).is_none() {
        return;
    }
    let survey = survey(search, hay);
    for (escaped, joins) in [(false, &survey.raw_joins), (true, &survey.escaped_joins)] {
        for (start, end) in windows(hay, joins, &search.separator) {
            let window = hay.get(start..end).unwrap_or_default();
            scan_joined(search, window, escaped, &Window(offset + start), spans);
        }
    }
    // A raw break a joined view drops is a seed too: a view that decodes a
    // JSON break beside it joins the two (`/-\nF\\r,`).
    if survey.seeds.is_empty() && survey.raw_joins.is_empty() {
        return;
    }
    let mut seeds = survey.seeds;
    seeds.extend(survey.raw_joins);
    seeds.sort_unstable();
    for (start, end) in windows(hay, &seeds, &search.separator) {
        let window = hay.get(start..end).unwrap_or_default();
        views_of(
            search,
            window,
            Holds::of(window),
            offset + start,
            spans,
            buffers,
            false,
        );
    }
}

/// The views [`views_of`] decodes into, one per layer and the combined
/// one, and the list of a short stretch's triggers and breaks
/// ([`list`]), kept from one stretch to the next.
pub(super) struct Buffers {
    view: View,
    nested: View,
    combined: View,
    listed: Vec<(usize, u8)>,
}

impl Buffers {
    pub(super) fn new() -> Buffers {
        Buffers {
            view: View::empty(),
            nested: View::empty(),
            combined: View::empty(),
            listed: Vec::new(),
        }
    }
}

/// Scans every decoded view of `hay` (and every view of those views, one
/// layer deep), each with its joined views, recording what each hit
/// conceals; `hay` is the text's bytes from `offset` on, and `is_listed`
/// says that the buffers' list is its list ([`list`]).
pub(super) fn views_of(
    search: &Search,
    hay: &[u8],
    holds: Holds,
    offset: usize,
    spans: &mut Spans,
    buffers: &mut Buffers,
    is_listed: bool,
) {
    let present = holds.families;
    // A long run is of backslashes.
    let long = present.has_escapes() && search.long_run.find(hay).is_some();
    let Buffers {
        view,
        nested,
        combined,
        listed,
    } = buffers;
    // A long run is read two ways, which the list does not know of.
    let listed = (is_listed && !long).then_some(&listed[..]);
    let lenient = present.has_escapes()
        && (long
            || listed.map_or_else(|| lenient_differs(hay), |l| lenient_differs_listed(hay, l)));
    let decode = |into: &mut View, families: Families, runs: Runs| match listed {
        Some(listed) => into.decode_listed(hay, listed, families),
        None => into.decode_into(hay, families, runs),
    };
    // The combined view first, when it is read one way: a view of another
    // view that decodes to it byte for byte and span for span (the `%2B`
    // of `%2B\/` in the JSON view, the `\/` in the percent one) finds
    // what it found, and is skipped ([`alike`]). The spans found do not
    // depend on the order the views are scanned in.
    let first = present.combined().filter(|_| !long);
    if let Some(families) = first {
        for runs in search.readings(families, long) {
            decode(combined, families, runs);
            if combined.decoded() > 0 {
                scan_view(search, combined, offset, None, spans, nested);
            }
        }
    }
    let done = first.filter(|_| combined.decoded() > 0).map(|_| &*combined);
    for families in present.each_view(lenient) {
        if first == Some(families) {
            continue;
        }
        for runs in search.readings(families, long) {
            decode(view, families, runs);
            // Triggers that start no escape (`%%%%`, `&&&&`) leave the
            // text as it is: its scan and its own views are the ones
            // above.
            if view.decoded() == 0 {
                continue;
            }
            scan_view(search, view, offset, done, spans, nested);
        }
    }
}

/// Scans `view`, a decoded view of the text's bytes from `offset` on, with
/// its joined views, and its own views the same way, but for one that is
/// `done` already.
fn scan_view(
    search: &Search,
    view: &View,
    offset: usize,
    done: Option<&View>,
    spans: &mut Spans,
    nested: &mut View,
) {
    let outer = Nested {
        outer: &Window(offset),
        inner: view,
    };
    scan(search, &view.bytes, &outer, spans);
    let holds = view.holds();
    scan_joins(search, &view.bytes, holds, &outer, spans);
    // One layer more, the same way, for what was encoded twice: an error
    // quoting upstream JSON as a JSON string (`\\u002B`), a
    // percent-encoded JSON body (`%5Cu002B`).
    let present = holds.families;
    let long = present.has_escapes() && search.long_run.find(&view.bytes).is_some();
    let listed = (view.is_listed && !long).then_some(&view.listed[..]);
    let lenient = present.has_escapes()
        && (long
            || listed.map_or_else(
                || lenient_differs(&view.bytes),
                |l| lenient_differs_listed(&view.bytes, l),
            ));
    for inner in present.each_view(lenient) {
        for runs in search.readings(inner, long) {
            match listed {
                Some(listed) => nested.decode_listed(&view.bytes, listed, inner),
                None => nested.decode_into(&view.bytes, inner, runs),
            }
            if nested.decoded() == 0 || done.is_some_and(|done| alike(done, view, nested)) {
                continue;
            }
            let map = Nested {
                outer: &outer,
                inner: &*nested,
            };
            scan(search, &nested.bytes, &map, spans);
            let holds = nested.holds();
            scan_joins(search, &nested.bytes, holds, &map, spans);
        }
    }
}

/// Scans the joined views of `hay` ([`scan_joined`]) of the kinds of line
/// break it `holds`.
fn scan_joins(search: &Search, hay: &[u8], holds: Holds, map: &dyn SourceMap, spans: &mut Spans) {
    for (escaped, held) in [(false, holds.raw_break), (true, holds.escaped_break)] {
        if held {
            scan_joined(search, hay, escaped, map, spans);
        }
    }
}

/// Scans the joined view of `hay` of one kind of line break (raw, or
/// JSON-escaped), if it has one: its lines joined where an occurrence could
/// be broken across them. `map` takes `hay` back to the text.
pub(super) fn scan_joined(
    search: &Search,
    hay: &[u8],
    escaped: bool,
    map: &dyn SourceMap,
    spans: &mut Spans,
) {
    if let Some(joined) = View::join(hay, escaped, |a, b| search.adjacent(a, b)) {
        let map = Nested {
            outer: map,
            inner: &joined,
        };
        scan(search, &joined.bytes, &map, spans);
    }
}
