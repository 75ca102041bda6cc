//! What a predictor joins, concealed as joined: a stream's *channels*.
//!
//! A predictor joins what an engine streams (OpenAI's
//! `choices[i].delta.content`, a tool call's `function.arguments`,
//! Anthropic's `delta.text`, Gemini's `parts`, Ollama's
//! `message.content`), and a model that repeats a key it was shown splits
//! it across those payloads, each fragment too short to be a form. So the
//! parsed readers conceal what is joined:
//!
//! - **Readings.** Each string value of an event's data (or of an NDJSON
//!   line) that is a JSON object, and data that is not one, joins a
//!   channel in each of the ways predictors join them (`readings.rs`: by
//!   path with `index` members, by array positions, by keys alone, as
//!   serde_json reads a repeated key, a JSON string as its value, data as
//!   text), each with and without the event's type. A channel's text is
//!   its strings, decoded, joined in stream order, and it is concealed by
//!   the one concealer as one text. Names that join the same strings share
//!   one channel (`state.rs`).
//! - **Rewriting.** Where a form spans events, only the strings that
//!   carried it are rewritten: the first holding the marker, the others
//!   losing their part of the form, every other byte kept
//!   (`rewrite.rs`). The number, order, types and ids of the events stay;
//!   data that was JSON stays JSON. A stream whose channels hold no form
//!   is yielded byte for byte.
//! - **Holding.** An event is held only while one of its channels ends in
//!   text that could still begin or be inside a form
//!   ([`Beginnings`](crate::conceal::joined::Beginnings): the end is a
//!   prefix of one of the concealer's patterns, at least [`MIN_HELD`]
//!   bytes long or one byte after a separator, or an escape is at work
//!   since the last separator). It is released as soon as later events
//!   settle that channel, or the channel's hold settles: the engine closes
//!   it, or the next [`SETTLE_AFTER`] events do not continue it; or at the
//!   end of the stream (a refusal that ends it comes after the held
//!   events). Never on a timer. The hold and the text a channel keeps are
//!   bounded, and past the most held at once the oldest hold settles
//!   (`DESIGN.md`, "Channels"); past the most channels, the stream is
//!   refused rather than yielded unconcealed.

mod channel;
pub(crate) mod json_spans;
mod readings;
mod rewrite;
mod state;

use std::collections::VecDeque;

use self::readings::{Parsed, closed};
use self::rewrite::{HeldSlot, rewritten};
use self::state::State;
use super::Event;
use crate::conceal::Concealer;
use crate::refusal::Refusal;

/// How many bytes of a pattern an end of a channel must match to hold its
/// event, unless it stands after a separator or at the channel's start.
/// One byte inside a word would hold every event whose text ends in a
/// pattern's first letter: 228 of the 2,000 chunks of the bench's English
/// chat stream for a token that starts with `s`, where two bytes hold none.
/// What this gives up: a form's first byte, inside a word at the end of an
/// event released before the next arrives, stays in that event; the rest
/// of the form is concealed, and the joined text holds no form.
pub(crate) const MIN_HELD: usize = 2;

/// How many events may pass without continuing a channel before its hold
/// settles: a beginning no later string continues (a reasoning text that
/// ends in `…the task`, an id that ends in `sk`) holds no more than this.
pub(crate) const SETTLE_AFTER: u64 = 64;

/// The most channels a stream may open.
pub(crate) const MAX_CHANNELS: usize = 4096;

/// The most names (a reading, a type and a path) a stream's strings may
/// take; names that join the same strings share a channel.
pub(crate) const MAX_NAMES: usize = 16 * MAX_CHANNELS;

/// The most bytes the paths and event types that name a stream's channels
/// may take: a key or a type is as long as the engine makes it.
pub(crate) const MAX_NAME_BYTES: usize = 4 << 20;

/// The most events held at once: past it, the oldest hold settles.
pub(crate) const MAX_HELD_EVENTS: usize = 4096;

/// What an event or a line is to its channels: its type, and its data.
pub(crate) trait Carrier {
    fn kind(&self) -> &str;
    fn data(&self) -> &str;
    fn set_data(&mut self, data: String);
}

impl Carrier for Event {
    /// An event with no type, or an empty one, is a `message`.
    fn kind(&self) -> &str {
        self.event
            .as_deref()
            .filter(|kind| !kind.is_empty())
            .unwrap_or("message")
    }

    fn data(&self) -> &str {
        &self.data
    }

    fn set_data(&mut self, data: String) {
        self.data = data;
    }
}

/// An NDJSON line: every line is of one type.
impl Carrier for String {
    fn kind(&self) -> &str {
        ""
    }

    fn data(&self) -> &str {
        self
    }

    fn set_data(&mut self, data: String) {
        *self = data;
    }
}

/// Which bound a stream passed.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Exceeded {
    /// More channels than [`MAX_CHANNELS`].
    Channels,
    /// More names than [`MAX_NAMES`], or their paths and types more bytes
    /// than [`MAX_NAME_BYTES`].
    Names,
}

impl Exceeded {
    pub(crate) fn describe(self) -> String {
        match self {
            Exceeded::Channels => {
                format!("it opened more than {MAX_CHANNELS} channels (string paths per event type)")
            }
            Exceeded::Names => format!(
                "its strings took more than {MAX_NAMES} names, or {MAX_NAME_BYTES} bytes of string paths and event types"
            ),
        }
    }
}

/// The events (or lines) of one stream on their way out: those held, those
/// ready, and the channels they fill.
pub(crate) struct Joined<T> {
    /// `None` when nothing is concealed (a fake's stream): every item is
    /// yielded as it came.
    state: Option<Box<State>>,
    held: VecDeque<Held<T>>,
    held_bytes: usize,
    ready: VecDeque<T>,
    /// How the stream ended, once it has: yielded after the ready items.
    end: Option<Option<Refusal>>,
    /// Nothing more will be yielded.
    over: bool,
    next_seq: u64,
    /// How many items were held past the read that brought them.
    pub(crate) ever_held: u64,
}

/// An item held, with where its strings stand and what they became.
struct Held<T> {
    seq: u64,
    item: T,
    slots: Vec<HeldSlot>,
    /// Each string joined to a channel, as (slot, channel), by slot: a
    /// channel holds the strings of one item in this order.
    joined: Vec<(usize, usize)>,
}

impl<T: Carrier> Joined<T> {
    /// A joiner for a stream concealed by `concealer` (`None` for a fake's,
    /// which conceals nothing).
    pub(crate) fn new(concealer: Option<&Concealer>) -> Joined<T> {
        Joined {
            state: concealer.map(|concealer| Box::new(State::new(concealer.clone()))),
            held: VecDeque::new(),
            held_bytes: 0,
            ready: VecDeque::new(),
            end: None,
            over: false,
            next_seq: 0,
            ever_held: 0,
        }
    }

    /// What the reader yields next, when it needs no more reading:
    /// `Some(None)` once the stream is over.
    pub(crate) fn out(&mut self) -> Option<Option<Result<T, Refusal>>> {
        if let Some(item) = self.ready.pop_front() {
            return Some(Some(Ok(item)));
        }
        if self.over {
            return Some(None);
        }
        let end = self.end.take()?;
        self.over = true;
        Some(end.map(Err))
    }

    /// Takes what one read came to: an item, the end, or a refusal.
    pub(crate) fn take(&mut self, read: Option<Result<T, Refusal>>) -> Result<(), Exceeded> {
        match read {
            Some(Ok(item)) => self.push(item),
            Some(Err(refusal)) => {
                self.finish();
                self.end = Some(Some(refusal));
                Ok(())
            }
            None => {
                self.finish();
                self.end = Some(None);
                Ok(())
            }
        }
    }

    /// The stream is refused past a bound: what is held is dropped, never
    /// yielded, and the refusal is next.
    pub(crate) fn refused(&mut self, refusal: Refusal) {
        self.held.clear();
        self.held_bytes = 0;
        self.state = None;
        self.end = Some(Some(refusal));
    }

    fn push(&mut self, item: T) -> Result<(), Exceeded> {
        let Some(state) = self.state.as_deref_mut() else {
            self.ready.push_back(item);
            return Ok(());
        };
        state.refresh();
        if state.beginnings.is_none() {
            // No secret to conceal: what is held goes first, then this.
            self.finish();
            self.ready.push_back(item);
            return Ok(());
        }
        let seq = self.next_seq;
        self.next_seq += 1;
        let data = item.data();
        let parsed = Parsed::of(data);
        let mut joins = state.joins(&parsed, data, item.kind())?;
        let held = &mut self.held;
        let assigned = state.assign(&mut joins, |original, copy| {
            for held in held.iter_mut() {
                let copies: Vec<(usize, usize)> = held
                    .joined
                    .iter()
                    .filter(|&&(_, channel)| channel == original)
                    .map(|&(slot, _)| (slot, copy))
                    .collect();
                held.joined.extend(copies);
                held.joined.sort_unstable();
            }
        })?;
        let slots: Vec<HeldSlot> = parsed.slots.iter().map(HeldSlot::of).collect();
        let mut joined: Vec<(usize, usize)> = Vec::with_capacity(assigned.len());
        if let Some(beginnings) = &state.beginnings {
            for (channel, range) in &assigned {
                for &(_, slot) in &joins[range.clone()] {
                    let (value, scope) =
                        (parsed.slots[slot].value(data), parsed.slots[slot].scope());
                    state.channels[*channel].append(seq, slot, value, scope, beginnings);
                    joined.push((slot, *channel));
                }
            }
        }
        joined.sort_unstable();
        let closes = closed(&parsed);
        self.held_bytes += data.len();
        self.held.push_back(Held {
            seq,
            item,
            slots,
            joined,
        });
        for (channel, _) in assigned {
            state.settle(channel, false);
        }
        state.settle_holds(seq, &closes);
        self.release();
        self.within_bounds();
        if self.held.back().is_some_and(|held| held.seq == seq) {
            self.ever_held += 1;
        }
        Ok(())
    }

    /// Past the most items, or bytes of them, held at once, the holds of
    /// the oldest held item settle and it is released: a large event, one
    /// past the held bytes alone, is yielded at once, its open end kept as
    /// context, never refused.
    fn within_bounds(&mut self) {
        while let (Some(state), Some(front)) = (self.state.as_deref_mut(), self.held.front()) {
            if self.held.len() <= MAX_HELD_EVENTS && self.held_bytes <= state.held_limit {
                return;
            }
            if !state.settle_item(front.seq) {
                return;
            }
            self.release();
        }
    }

    /// The stream ended: every channel is concealed to its end, and every
    /// held item released.
    fn finish(&mut self) {
        if let Some(state) = self.state.as_deref_mut() {
            state.settle_all();
        }
        self.release();
    }

    /// Moves every item no channel holds back, in order, to `ready`, each
    /// with what forms took of its strings cut out.
    fn release(&mut self) {
        let Some(state) = self.state.as_deref_mut() else {
            self.ready.extend(self.held.drain(..).map(|held| held.item));
            return;
        };
        let first_blocked = state.blocks.keys().next().copied();
        while let Some(front) = self.held.front() {
            if first_blocked.is_some_and(|blocked| front.seq >= blocked) {
                break;
            }
            let Some(mut held) = self.held.pop_front() else {
                break;
            };
            self.held_bytes = self.held_bytes.saturating_sub(held.item.data().len());
            for &(slot, channel) in &held.joined {
                let cuts = state.channels[channel].release(held.seq, slot);
                if let Some(slot) = held.slots.get_mut(slot) {
                    slot.cuts.extend(cuts);
                }
            }
            self.ready.push_back(rewritten(held.item, &held.slots));
        }
    }
}

#[cfg(test)]
mod tests;
