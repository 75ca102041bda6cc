//! What a predictor joins, concealed as joined: a stream's *channels*.
//!
//! A predictor joins what an engine streams (OpenAI's
//! `choices[i].delta.content`, a tool call's `function.arguments`,
//! Anthropic's `delta.text`, Ollama's `message.content`), and a model that
//! repeats a key it was shown splits it across those payloads, each
//! fragment too short to be a form. So the parsed readers conceal what is
//! joined:
//!
//! - **Channels.** Each string value of an event's data (or of an NDJSON
//!   line) that is a JSON object belongs to the channel named by the
//!   event's type and the value's path (`json_spans.rs`: keys and array
//!   positions, an object with an integer `index` member named by it, as
//!   OpenAI's one choice or tool call per chunk and Anthropic's content
//!   blocks need). Data that is not a JSON object is one channel per event
//!   type, joined with nothing between. A channel's text is its strings,
//!   decoded, joined in stream order, and it is concealed by the one
//!   concealer as one text.
//! - **Rewriting.** Where a form spans events, only the strings that
//!   carried it are rewritten (and re-escaped): the first holding the
//!   marker, the others losing their part of the form. Every other byte,
//!   and the number, order, types and ids of the events, stay; data that
//!   was JSON stays JSON. A stream whose channels hold no form is yielded
//!   byte for byte.
//! - **Holding.** An event is held only while one of its channels ends in
//!   text that could still begin or be inside a form
//!   ([`Beginnings`](crate::conceal::joined::Beginnings): the end is a
//!   prefix, at least [`MIN_HELD`] bytes long, of one of the concealer's
//!   patterns, or an escape is at work since the last separator). It is
//!   released as soon as later events settle that channel, or at the end
//!   of the stream (a refusal that ends it comes after the held events);
//!   never on a timer. The hold, the text a channel keeps and the number
//!   of channels are bounded (`DESIGN.md`, "Channels"); past a bound the
//!   stream is refused rather than yielded unconcealed.

mod channel;
pub(crate) mod json_spans;

use std::collections::{BTreeMap, HashMap, VecDeque};
use std::ops::Range;

use self::channel::{Channel, floor_boundary};
use self::json_spans::strings;
use super::ending::scripted_refusal;
use super::{AnswerStream, Event, Source};
use crate::conceal::joined::Beginnings;
use crate::conceal::{Concealer, Known, REDACTED};
use crate::refusal::status::{Fix, unreachable_remedy};
use crate::refusal::{Cause, Refusal};

/// How many bytes of a pattern an end of a channel must match to hold its
/// event. One byte would hold every event whose text ends in a pattern's
/// first character: 228 of the 2,000 chunks of the bench's English chat
/// stream for a token that starts with `s`, where two bytes hold none.
/// What this gives up: a form's first byte, alone at the end of an event
/// released before the next arrives, stays in that event; the rest of the
/// form is concealed, and the joined text holds no form.
pub(crate) const MIN_HELD: usize = 2;

/// The most channels a stream may open.
pub(crate) const MAX_CHANNELS: usize = 4096;

/// The most events held at once.
pub(crate) const MAX_HELD_EVENTS: usize = 4096;

/// The least the held events' data may take before the stream is refused,
/// whatever the secrets (the bound is four times the concealer's reach,
/// when that is more).
const MIN_HELD_BYTES: usize = 1 << 20;

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
}

impl Exceeded {
    fn describe(self) -> String {
        match self {
            Exceeded::Channels => {
                format!("it opened more than {MAX_CHANNELS} channels (string paths per event type)")
            }
        }
    }
}

/// The readers' joiners, each made when its reader is first called.
#[derive(Default)]
pub(crate) struct Joining {
    events: Option<Box<Joined<Event>>>,
    lines: Option<Box<Joined<String>>>,
}

/// The events (or lines) of one stream on their way out: those held, those
/// ready, and the channels they fill.
pub(crate) struct Joined<T> {
    /// `None` when nothing is concealed: every item is yielded as it came.
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

struct State {
    /// The transport's concealer itself, not a copy: a token that rotates
    /// while the stream is open is concealed from the next item on.
    concealer: Concealer,
    /// The secrets `beginnings` and the limits were derived from.
    known: Known,
    beginnings: Beginnings,
    names: HashMap<String, usize>,
    channels: Vec<Channel>,
    /// The first held item of each channel that holds one, counted.
    blocks: BTreeMap<u64, usize>,
    /// Released text a channel keeps before what it holds: enough for the
    /// concealer to see a form whose start was released.
    context: usize,
    /// The most text a channel holds at its end: what lies further back is
    /// settled whatever follows, the concealer being local.
    tail_limit: usize,
    /// The most bytes of data the held items may take: past it, the oldest
    /// hold settles and its items are released.
    held_limit: usize,
}

impl State {
    /// The context and the limits, from the secrets' beginnings and reach.
    fn bound(&mut self) {
        let reach = self.concealer.reach();
        self.context = 3 * self.beginnings.longest() + 8;
        self.tail_limit = reach.max(self.context);
        self.held_limit = reach.saturating_mul(4).max(MIN_HELD_BYTES);
    }

    /// Derives the beginnings and limits anew when the concealer learned or
    /// dropped a secret (a token file that rotated) since they were.
    fn refresh(&mut self) {
        let known = self.concealer.known();
        if known == self.known {
            return;
        }
        self.known = known;
        if let Some(beginnings) = self.concealer.beginnings() {
            self.beginnings = beginnings;
            self.bound();
        }
    }
}

/// An item held, with where its strings stand and what they became.
struct Held<T> {
    seq: u64,
    item: T,
    slots: Vec<Slot>,
}

/// One string of an item (or its whole data, when not a JSON object).
struct Slot {
    raw: Range<usize>,
    json: bool,
    channel: usize,
    /// Its new value, once a form was concealed in it.
    value: Option<String>,
}

impl<T: Carrier> Joined<T> {
    /// A joiner for a stream concealed by `concealer` (`None` for a fake's,
    /// which conceals nothing).
    pub(crate) fn new(concealer: Option<&Concealer>) -> Joined<T> {
        let state = concealer.and_then(|concealer| {
            let concealer = concealer.clone();
            let known = concealer.known();
            let beginnings = concealer.beginnings()?;
            let mut state = State {
                concealer,
                known,
                beginnings,
                names: HashMap::new(),
                channels: Vec::new(),
                blocks: BTreeMap::new(),
                context: 0,
                tail_limit: 0,
                held_limit: 0,
            };
            state.bound();
            Some(Box::new(state))
        });
        Joined {
            state,
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
        let seq = self.next_seq;
        self.next_seq += 1;
        let kind = item.kind();
        let data = item.data();
        let parts: Vec<(Range<usize>, bool, String, String)> = match strings(data) {
            Ok(found) => found
                .into_iter()
                .map(|s| (s.raw, true, s.value, format!("{kind}\0{}", s.path)))
                .collect(),
            Err(_) => vec![(0..data.len(), false, data.to_owned(), format!("{kind}\0"))],
        };
        let mut slots = Vec::with_capacity(parts.len());
        let mut touched: Vec<usize> = Vec::new();
        for (at, (raw, json, value, name)) in parts.into_iter().enumerate() {
            let channel = state.channel(name)?;
            slots.push(Slot {
                raw,
                json,
                channel,
                value: None,
            });
            if value.is_empty() {
                continue;
            }
            state.channels[channel].append(seq, at, &value, &state.beginnings);
            if !touched.contains(&channel) {
                touched.push(channel);
            }
        }
        self.held_bytes += item.data().len();
        self.held.push_back(Held { seq, item, slots });
        for channel in touched {
            state.settle(channel, false);
        }
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
            let seq = front.seq;
            let mut settled = false;
            for channel in 0..state.channels.len() {
                if state.channels[channel].blocking == Some(seq) {
                    state.settle(channel, true);
                    settled = true;
                }
            }
            if !settled {
                return;
            }
            self.release();
        }
    }

    /// The stream ended: every channel is concealed to its end, and every
    /// held item released.
    fn finish(&mut self) {
        if let Some(state) = self.state.as_deref_mut() {
            for channel in 0..state.channels.len() {
                if !state.channels[channel].pieces.is_empty() {
                    state.settle(channel, true);
                }
            }
        }
        self.release();
    }

    /// Moves every item no channel holds back, in order, to `ready`.
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
            for (at, slot) in held.slots.iter_mut().enumerate() {
                let context = state.context;
                let channel = &mut state.channels[slot.channel];
                if let Some(value) = channel.release(held.seq, at, context) {
                    slot.value = Some(value);
                }
            }
            self.ready.push_back(rewritten(held));
        }
    }
}

/// The item with each of its strings that a form passed through rewritten:
/// re-escaped where its data is JSON, every other byte kept.
fn rewritten<T: Carrier>(held: Held<T>) -> T {
    let Held {
        mut item,
        mut slots,
        ..
    } = held;
    if slots.iter().all(|slot| slot.value.is_none()) {
        return item;
    }
    slots.sort_by_key(|slot| std::cmp::Reverse(slot.raw.start));
    let mut data = item.data().to_owned();
    for slot in slots {
        let Some(value) = slot.value else { continue };
        let replacement = if slot.json {
            serde_json::to_string(&value).unwrap_or_else(|_| format!("\"{REDACTED}\""))
        } else {
            value
        };
        if data.get(slot.raw.clone()).is_some() {
            data.replace_range(slot.raw, &replacement);
        }
    }
    item.set_data(data);
    item
}

impl State {
    /// The channel of this name, opened if new.
    fn channel(&mut self, name: String) -> Result<usize, Exceeded> {
        if let Some(&channel) = self.names.get(&name) {
            return Ok(channel);
        }
        if self.channels.len() >= MAX_CHANNELS {
            return Err(Exceeded::Channels);
        }
        self.channels.push(Channel::default());
        self.names.insert(name, self.channels.len() - 1);
        Ok(self.channels.len() - 1)
    }

    /// Conceals what of a channel's text is settled now (all of it at the
    /// stream's `end`), rewriting the pieces a form passed through, and
    /// says which item, if any, the channel still holds back.
    fn settle(&mut self, at: usize, end: bool) {
        let channel = &mut self.channels[at];
        let hold = if end {
            None
        } else {
            channel.hold_point(&self.beginnings, self.tail_limit)
        };
        let to = hold.unwrap_or(channel.text.len());
        if to > channel.settled {
            let from = floor_boundary(&channel.text, channel.settled.saturating_sub(self.context));
            let past = channel.settled.max(channel.pending);
            let spans: Vec<(usize, usize)> = self
                .concealer
                .spans_of(channel.text.get(from..).unwrap_or_default())
                .into_iter()
                .map(|(start, end)| (start + from, end + from))
                .filter(|&(_, end)| end > past)
                .collect();
            let mut to = to;
            if !spans.is_empty() {
                channel.rewrite(&spans);
                channel.rescan_run(&self.beginnings);
                to = if end {
                    channel.text.len()
                } else {
                    channel
                        .hold_point(&self.beginnings, self.tail_limit)
                        .unwrap_or(channel.text.len())
                };
            }
            channel.settled = channel.settled.max(to);
        }
        let hold = if end {
            None
        } else {
            channel.hold_point(&self.beginnings, self.tail_limit)
        };
        let blocking = hold.and_then(|hold| {
            channel
                .pieces
                .iter()
                .find(|piece| piece.range.end > hold)
                .map(|piece| piece.seq)
        });
        if blocking != channel.blocking {
            if let Some(old) = channel.blocking
                && let Some(count) = self.blocks.get_mut(&old)
            {
                *count -= 1;
                if *count == 0 {
                    self.blocks.remove(&old);
                }
            }
            if let Some(new) = blocking {
                *self.blocks.entry(new).or_insert(0) += 1;
            }
            channel.blocking = blocking;
        }
    }
}

impl AnswerStream {
    /// The concealer a stream's channels are concealed with: a fake's
    /// stream has none.
    fn joining_concealer(source: &Source) -> Option<&Concealer> {
        match source {
            Source::Wire(wire) => Some(&wire.concealer),
            Source::Chunks(_) => None,
        }
    }

    /// The next server-sent event, concealed; `None` at the end, or at an
    /// event whose data is `[DONE]`, which ends the stream cleanly and is
    /// not yielded. An event the end of the body cuts off is not yielded
    /// either, as the standard says; [`ending`](Self::ending) counts it.
    ///
    /// What a predictor joins is concealed as joined: each string of an
    /// event's JSON data belongs to a *channel*, named by the event's type
    /// and the string's path (an object with an integer `index` member is
    /// named by it, as OpenAI's choices and tool calls and Anthropic's
    /// content blocks need); data that is not a JSON object is one channel
    /// per type. A form of a secret that a channel's strings spell across
    /// events becomes one `[redacted]` in the first string it touched, the
    /// others losing their part (re-escaped, still JSON); every other byte,
    /// and each event's type and id, stay. An event is held back only
    /// while one of its channels ends in what could still begin such a
    /// form, until later bytes settle it or the stream ends (a refusal that
    /// ends it comes after), never on a timer.
    ///
    /// ```
    /// # #[tokio::main(flavor = "current_thread")]
    /// # async fn main() {
    /// let mut stream = meterwire::AnswerStream::from_chunks(200, [
    ///     "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"Hel\"}}]}\n\n",
    ///     "data: {\"choices\":[{\"index\":0,\"delta\":{\"content\":\"lo\"}}]}\n\ndata: [DONE]\n\n",
    /// ]);
    /// let mut text = String::new();
    /// while let Some(event) = stream.next_event().await {
    ///     let data: serde_json::Value = serde_json::from_str(event.expect("not a refusal").data()).expect("JSON");
    ///     text.push_str(data["choices"][0]["delta"]["content"].as_str().unwrap_or_default());
    /// }
    /// assert_eq!(text, "Hello");
    /// # }
    /// ```
    pub async fn next_event(&mut self) -> Option<Result<Event, Refusal>> {
        loop {
            let source = &self.source;
            let joined = self
                .joining
                .events
                .get_or_insert_with(|| Box::new(Joined::new(Self::joining_concealer(source))));
            if let Some(out) = joined.out() {
                return out;
            }
            let read = self.read_event().await;
            let joined = self.joining.events.as_deref_mut()?;
            if let Err(exceeded) = joined.take(read) {
                let refusal = self.joining_refusal(exceeded);
                if let Some(joined) = self.joining.events.as_deref_mut() {
                    joined.refused(refusal);
                }
            }
        }
    }

    /// The next NDJSON line, concealed (blank lines skipped); `None` at the
    /// end. A last line with no line break after it is complete at the end
    /// of the body. A line `[DONE]` ends the stream cleanly and is not
    /// yielded, as SSE's does. A line that is a JSON object with a
    /// top-level `error` member
    /// ends the stream with a refusal, as an SSE error does. What a
    /// predictor joins across lines is concealed as joined, as
    /// [`next_event`](Self::next_event) says (every line is of one type).
    pub async fn next_line(&mut self) -> Option<Result<String, Refusal>> {
        loop {
            let source = &self.source;
            let joined = self
                .joining
                .lines
                .get_or_insert_with(|| Box::new(Joined::new(Self::joining_concealer(source))));
            if let Some(out) = joined.out() {
                return out;
            }
            let read = self.read_line().await;
            let joined = self.joining.lines.as_deref_mut()?;
            if let Err(exceeded) = joined.take(read) {
                let refusal = self.joining_refusal(exceeded);
                if let Some(joined) = self.joining.lines.as_deref_mut() {
                    joined.refused(refusal);
                }
            }
        }
    }

    /// The refusal of a stream past a bound of its channels, and the stream
    /// finished.
    fn joining_refusal(&mut self, exceeded: Exceeded) -> Refusal {
        let answered = self.answered();
        let refusal = match self.sent.as_ref().map(|sent| &sent.site) {
            Some(site) => site.seal(
                Refusal::new(
                    Cause::EngineUnreachable,
                    format!(
                        "{} answered HTTP {}, then streamed {} whose joined text could not be concealed: {}",
                        site.subject(),
                        answered.status,
                        answered.so_far(),
                        exceeded.describe()
                    ),
                    unreachable_remedy(
                        site,
                        Fix::Health,
                        "streamed more than a stream holds back to conceal what a predictor joins",
                        None,
                    ),
                    site.address_variable(),
                )
                .with_status(answered.status),
            ),
            None => scripted_refusal(),
        };
        let refusal = self.carried(refusal, "a stream whose joined text could not be concealed");
        self.finish(Some(&refusal));
        refusal
    }
}

#[cfg(test)]
mod tests;
