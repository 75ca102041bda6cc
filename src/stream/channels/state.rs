//! The channels of one stream: the names that share them, what each holds
//! back, and when a hold settles.
//!
//! Every reading names a channel for each string, with and without the
//! event's type: a dozen names for an OpenAI delta. Most name the same
//! text (`choices[0]` is the choice of `index` 0; a stream of one event
//! type reads the same with types or without), so names share a channel
//! for as long as they receive the same strings, and a channel is copied
//! the first time two of its names receive different ones. A stream costs
//! as many channels as it has different joined texts.

use std::collections::{BTreeMap, HashMap};
use std::ops::Range;

use super::channel::Channel;
use super::readings::{Parsed, READINGS};
use super::{Exceeded, MAX_CHANNELS, MAX_NAME_BYTES, MAX_NAMES, SETTLE_AFTER};
use crate::conceal::joined::Beginnings;
use crate::conceal::{Concealer, Known};

/// No channel yet: a name first met in this item; or no name yet.
const NEW: usize = usize::MAX;

/// The names one path takes: for each reading, with no type, and with
/// each type met.
struct PathNames {
    untyped: [usize; READINGS.len()],
    typed: Vec<(Box<str>, [usize; READINGS.len()])>,
}

/// The least the held items' data may take before the oldest hold
/// settles, whatever the secrets (the bound is four times the concealer's
/// reach, when that is more).
const MIN_HELD_BYTES: usize = 1 << 20;

pub(super) struct State {
    /// The transport's concealer itself, not a copy: a token that rotates
    /// while the stream is open is concealed from the next item on.
    pub(super) concealer: Concealer,
    /// The secrets `beginnings` and the limits were derived from.
    known: Known,
    /// `None` while the concealer holds no secret: nothing is joined.
    pub(super) beginnings: Option<Beginnings>,
    /// The names (a reading, a type or none, and a path) of each path.
    names: HashMap<String, PathNames>,
    /// The bytes the paths and types of `names` take.
    name_bytes: usize,
    /// The channel of each name.
    channel_of: Vec<usize>,
    pub(super) channels: Vec<Channel>,
    /// The first held item of each channel that holds one, counted.
    pub(super) blocks: BTreeMap<u64, usize>,
    /// The channels that hold an item back.
    pub(super) holding: Vec<usize>,
    /// Released text a channel keeps before what it holds: enough for the
    /// concealer to see a form whose start was released.
    pub(super) context: usize,
    /// The most text a channel holds at its end: what lies further back is
    /// settled whatever follows, the concealer being local.
    tail_limit: usize,
    /// The most bytes of data the held items may take: past it, the oldest
    /// hold settles and its items are released.
    pub(super) held_limit: usize,
}

impl State {
    pub(super) fn new(concealer: Concealer) -> State {
        let mut state = State {
            known: concealer.known(),
            beginnings: concealer.beginnings(),
            concealer,
            names: HashMap::new(),
            name_bytes: 0,
            channel_of: Vec::new(),
            channels: Vec::new(),
            blocks: BTreeMap::new(),
            holding: Vec::new(),
            context: 0,
            tail_limit: 0,
            held_limit: 0,
        };
        state.bound();
        state
    }

    /// The context and the limits, from the secrets' beginnings and reach.
    fn bound(&mut self) {
        let reach = self.concealer.reach();
        self.context = self.beginnings.as_ref().map_or(0, Beginnings::window);
        self.tail_limit = reach.max(self.context);
        self.held_limit = reach.saturating_mul(4).max(MIN_HELD_BYTES);
    }

    /// Derives the beginnings and limits anew when the concealer learned or
    /// dropped a secret (a token file that rotated) since they were, and
    /// walks every channel's end again with them.
    pub(super) fn refresh(&mut self) {
        let known = self.concealer.known();
        if known == self.known {
            return;
        }
        self.known = known;
        self.beginnings = self.concealer.beginnings();
        self.bound();
        if let Some(beginnings) = &self.beginnings {
            for channel in &mut self.channels {
                channel.back = channel.back.max(self.context);
                channel.rewalk(beginnings);
            }
        }
    }

    /// The names of the channels each string of `parsed` joins, by every
    /// reading, with and without `kind`: one (name, slot) pair each.
    pub(super) fn joins(
        &mut self,
        parsed: &Parsed,
        data: &str,
        kind: &str,
    ) -> Result<Vec<(usize, usize)>, Exceeded> {
        let mut joins = Vec::new();
        let mut exceeded = None;
        for (reading_at, reading) in READINGS.into_iter().enumerate() {
            reading.each(parsed, kind, data, |slot, path| {
                if exceeded.is_some() {
                    return;
                }
                if !self.names.contains_key(path) {
                    self.name_bytes += path.len();
                    if self.name_bytes > MAX_NAME_BYTES {
                        exceeded = Some(Exceeded::Names);
                        return;
                    }
                    self.names.insert(
                        path.to_owned(),
                        PathNames {
                            untyped: [NEW; READINGS.len()],
                            typed: Vec::new(),
                        },
                    );
                }
                let Some(names) = self.names.get_mut(path) else {
                    return;
                };
                let typed = match names.typed.iter().position(|(k, _)| **k == *kind) {
                    Some(at) => at,
                    None => {
                        self.name_bytes += kind.len();
                        if self.name_bytes > MAX_NAME_BYTES {
                            exceeded = Some(Exceeded::Names);
                            return;
                        }
                        names.typed.push((kind.into(), [NEW; READINGS.len()]));
                        names.typed.len() - 1
                    }
                };
                for id in [
                    &mut names.untyped[reading_at],
                    &mut names.typed[typed].1[reading_at],
                ] {
                    if *id == NEW {
                        if self.channel_of.len() >= MAX_NAMES {
                            exceeded = Some(Exceeded::Names);
                            return;
                        }
                        self.channel_of.push(NEW);
                        *id = self.channel_of.len() - 1;
                    }
                    joins.push((*id, slot));
                }
            });
        }
        match exceeded {
            Some(exceeded) => Err(exceeded),
            None => Ok(joins),
        }
    }

    /// Which channel gets which strings of this item: names that share a
    /// channel and receive the same strings keep sharing it; names that
    /// receive other strings than the rest of their channel's get a copy
    /// of it (those that receive none keep the channel as it is); new
    /// names receiving the same strings share a new channel. `copied` is
    /// told of each copy (the held items' strings the original holds are
    /// the copy's too). Each channel comes with the range of `joins`
    /// (sorted here by name and slot) whose slots it gets.
    pub(super) fn assign(
        &mut self,
        joins: &mut [(usize, usize)],
        mut copied: impl FnMut(usize, usize),
    ) -> Result<Vec<(usize, Range<usize>)>, Exceeded> {
        joins.sort_unstable();
        // Each name with its channel and the range of the slots it
        // receives, in order.
        let mut received: Vec<(usize, usize, Range<usize>)> = Vec::new();
        for (at, &(name, _)) in joins.iter().enumerate() {
            match received.last_mut() {
                Some((last, _, slots)) if *last == name => slots.end = at + 1,
                _ => received.push((name, self.channel_of[name], at..at + 1)),
            }
        }
        let slots_of = |range: &Range<usize>| joins[range.clone()].iter().map(|&(_, slot)| slot);
        received.sort_by(|a, b| {
            a.1.cmp(&b.1)
                .then_with(|| slots_of(&a.2).cmp(slots_of(&b.2)))
        });
        let mut out: Vec<(usize, Range<usize>)> = Vec::new();
        let mut at = 0;
        while at < received.len() {
            let channel = received[at].1;
            let end = at
                + received[at..]
                    .iter()
                    .take_while(|(_, c, _)| *c == channel)
                    .count();
            let group = &received[at..end];
            // Runs of names receiving the same slots (the group is sorted
            // by them).
            let mut runs: Vec<Range<usize>> = Vec::new();
            for (i, (_, _, slots)) in group.iter().enumerate() {
                match runs.last_mut() {
                    Some(run) if slots_of(&group[run.start].2).eq(slots_of(slots)) => {
                        run.end = i + 1;
                    }
                    _ => runs.push(i..i + 1),
                }
            }
            let untouched = if channel == NEW {
                0
            } else {
                self.channels[channel].names - group.len()
            };
            for (n, run) in runs.into_iter().enumerate() {
                let target = if channel != NEW && untouched == 0 && n == 0 {
                    channel
                } else {
                    if self.channels.len() >= MAX_CHANNELS {
                        return Err(Exceeded::Channels);
                    }
                    let mut fresh = if channel == NEW {
                        Channel::default()
                    } else {
                        self.channels[channel].clone()
                    };
                    fresh.names = 0;
                    fresh.back = fresh.back.max(self.context);
                    self.channels.push(fresh);
                    let copy = self.channels.len() - 1;
                    if channel != NEW {
                        copied(channel, copy);
                        if let Some(seq) = self.channels[copy].blocking {
                            *self.blocks.entry(seq).or_insert(0) += 1;
                            self.holding.push(copy);
                        }
                    }
                    copy
                };
                for (name, _, _) in &group[run.clone()] {
                    if channel != NEW {
                        self.channels[channel].names -= 1;
                    }
                    self.channel_of[*name] = target;
                    self.channels[target].names += 1;
                }
                out.push((target, group[run.start].2.clone()));
            }
            at = end;
        }
        Ok(out)
    }

    /// Conceals what of a channel's text is settled now (all of it when
    /// `end`: the stream ended, the engine closed it, or its hold settled),
    /// records what forms took of its pieces, and says which item, if any,
    /// the channel still holds back.
    pub(super) fn settle(&mut self, at: usize, end: bool) {
        let Some(beginnings) = &self.beginnings else {
            // No secret left to conceal: nothing holds.
            self.block(at, None);
            return;
        };
        let channel = &mut self.channels[at];
        let len = channel.text().len();
        let hold = if end {
            None
        } else {
            channel.hold_point(beginnings, self.tail_limit)
        };
        let mut to = hold.unwrap_or(len);
        if to > channel.settled {
            let from = channel.window_start();
            let settled = channel.settled;
            let spans: Vec<(usize, usize)> = self
                .concealer
                .spans_of(channel.text().get(from..).unwrap_or_default())
                .into_iter()
                .map(|(start, end)| (start + from, end + from))
                .filter(|&(_, end)| end > settled)
                .collect();
            if !spans.is_empty() {
                channel.record(&spans, beginnings);
                if !end {
                    to = channel
                        .hold_point(beginnings, self.tail_limit)
                        .unwrap_or(len);
                }
            }
            channel.settled = channel.settled.max(to);
        }
        channel.open = channel.could_continue(beginnings);
        let blocking = if end {
            None
        } else {
            channel
                .hold_point(beginnings, self.tail_limit)
                .and_then(|hold| channel.first_from(hold))
        };
        self.block(at, blocking);
    }

    /// Channel `at` now holds back `blocking` (and every item after it).
    fn block(&mut self, at: usize, blocking: Option<u64>) {
        let channel = &mut self.channels[at];
        if blocking == channel.blocking {
            return;
        }
        if let Some(old) = channel.blocking
            && let Some(count) = self.blocks.get_mut(&old)
        {
            *count -= 1;
            if *count == 0 {
                self.blocks.remove(&old);
            }
        }
        match blocking {
            Some(new) => {
                *self.blocks.entry(new).or_insert(0) += 1;
                if channel.blocking.is_none() {
                    self.holding.push(at);
                }
            }
            None => self.holding.retain(|&held| held != at),
        }
        self.channels[at].blocking = blocking;
    }

    /// The holds that settle with item `seq`: of each channel whose last
    /// string stood in a scope the item closes, and of each channel the
    /// last [`SETTLE_AFTER`] items did not continue. Their held items go;
    /// what comes after is concealed from where it resumes.
    pub(super) fn settle_holds(&mut self, seq: u64, closed: &[&str]) {
        let holding = self.holding.clone();
        for at in holding {
            let channel = &self.channels[at];
            let quiet = seq.saturating_sub(channel.continued) >= SETTLE_AFTER;
            let shut = closed.iter().any(|scope| {
                channel
                    .scope
                    .strip_prefix(scope)
                    .is_some_and(|rest| rest.starts_with('/'))
            });
            if quiet || shut {
                self.settle(at, true);
            }
        }
    }

    /// Settles the holds of the channels that hold item `seq` back; false
    /// when none does.
    pub(super) fn settle_item(&mut self, seq: u64) -> bool {
        let holding: Vec<usize> = self
            .holding
            .iter()
            .copied()
            .filter(|&at| self.channels[at].blocking == Some(seq))
            .collect();
        for &at in &holding {
            self.settle(at, true);
        }
        !holding.is_empty()
    }

    /// Every channel concealed to its end: the stream ended.
    pub(super) fn settle_all(&mut self) {
        for at in 0..self.channels.len() {
            if self.channels[at].has_pieces() {
                self.settle(at, true);
            }
        }
    }

    /// How many channels the stream opened.
    #[cfg(test)]
    pub(super) fn channel_count(&self) -> usize {
        self.channels.len()
    }
}
