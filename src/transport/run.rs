//! The send loop: the latch, the hold, then as many attempts as the policy
//! and the retry table allow, all within one deadline; metered and traced.
//!
//! Policy is decided where it is named, and only carried out here: what a
//! send meets before it goes and what an outcome starts is `limits`,
//! whether an outcome is tried again is `retry::decide`, and every word of
//! a refusal is `refusal`'s.

use bytes::Bytes;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use tokio::time::Instant;
use tracing::Instrument;

use super::deadline::Deadline;
use super::handle::HttpTransport;
use super::headers::IdempotencyKey;
use super::post::{Head, Post, Read, Reqwest, Whole};
use super::reply::{Missed, Reading};
use crate::answer::Answer;
use crate::clock::{later, millis};
use crate::conceal::Shown;
use crate::config::token::file::{Current, TokenFile};
use crate::config::{Target, TokenSource};
use crate::limits::{Admission, Observed};
use crate::refusal::failure::{Failure, refusal_for_failure};
use crate::refusal::kind::Kind;
use crate::refusal::site::Site;
use crate::refusal::{Refusal, held, history, render};
use crate::retry::{self, Retry};
use crate::stream::{
    AnswerStream, Ended, SendRecord, StreamHead, Timers, WholeAnswer, error_in_answer,
};

/// What one send carries besides its body: the call's own headers, its
/// deadline and its idempotency key, each already checked.
#[derive(Debug, Default)]
pub(crate) struct Options {
    pub(crate) extra: HeaderMap,
    pub(crate) deadline: Option<std::time::Duration>,
    pub(crate) key: Option<IdempotencyKey>,
    /// A stream's own timers, in place of the transport's.
    pub(crate) timers: StreamTimers,
    /// A stream that ends without `[DONE]` is refused.
    pub(crate) expect_done: bool,
}

/// The idle timer and the stream deadline a call sets, if any.
#[derive(Clone, Copy, Debug, Default)]
pub(crate) struct StreamTimers {
    pub(crate) idle: Option<std::time::Duration>,
    pub(crate) stream: Option<std::time::Duration>,
}

/// How far a send got, for the meter.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Reach {
    /// At least one request went to the wire.
    Wire,
    /// Refused by a hold or a latch, nothing sent.
    Held,
    /// Refused before sending for what the configuration or the call is.
    Unsent,
}

impl HttpTransport {
    /// A refusal for a call that could not be sent: the configuration's own
    /// refusal when it has one, else `failure` (nothing sent, no attempt).
    pub(crate) fn refuse_unsent(&self, failure: Failure) -> Refusal {
        let refusal = match &self.inner.target {
            Ok(target) => refusal_for_failure(&target.site, &failure),
            Err(refusal) => refusal.clone(),
        };
        self.inner.meter.sent(Err(refusal.cause()), None, false);
        let span = self.span();
        span.record("attempts", 0);
        span.record("cause", refusal.cause().as_str());
        refused(&span, &refusal);
        refusal
    }

    /// One send, metered and traced.
    pub(super) async fn run(&self, body: Bytes, options: Options) -> Result<Answer, Refusal> {
        let post = Reqwest {
            client: &self.inner.client,
        };
        self.run_with(&post, body, options).await
    }

    /// One send read as a stream.
    pub(super) async fn open(
        &self,
        body: Bytes,
        options: Options,
    ) -> Result<AnswerStream, Refusal> {
        let post = Reqwest {
            client: &self.inner.client,
        };
        self.open_with(&post, body, options).await
    }

    /// One send whose attempts go out through `post`: reqwest, or the fuzz
    /// targets' script.
    pub(crate) async fn run_with(
        &self,
        post: &impl Post,
        body: Bytes,
        options: Options,
    ) -> Result<Answer, Refusal> {
        let started = Instant::now();
        let span = self.span();
        let (outcome, reach) = self
            .attempts(post, &Whole, body, options, started, &span)
            .instrument(span.clone())
            .await;
        // An answer took until its body had been read, when the clock was
        // read already; a refusal, until now.
        let elapsed = match &outcome {
            Ok(got) => got.at.saturating_duration_since(started),
            Err(_) => started.elapsed(),
        };
        match outcome {
            Ok(Got {
                got: received,
                attempts,
                history,
                key,
                ..
            }) => {
                let error = self.inner.target.as_ref().ok().and_then(|target| {
                    let answer = WholeAnswer {
                        status: received.status,
                        text: &received.text,
                        // The door kept every value as UTF-8 text.
                        content_type: received
                            .headers
                            .get(reqwest::header::CONTENT_TYPE)
                            .and_then(|value| std::str::from_utf8(value.as_bytes()).ok()),
                        request_id: received.request_id.as_ref(),
                    };
                    error_in_answer(answer, &target.site, attempts, history, key.as_ref())
                });
                if let Some(refusal) = error {
                    self.refused(&span, &refusal, Reach::Wire, elapsed);
                    return Err(refusal);
                }
                let answer = Answer::received(
                    received.status,
                    received.text,
                    received.request_id.map(Shown::into_string),
                    received.headers,
                )
                .with_attempts(attempts)
                .after(elapsed);
                let ended = Ended {
                    status: answer.status(),
                    attempts,
                    request_id: answer.request_id(),
                    elapsed,
                };
                self.answered(&span, ended);
                self.inner.meter.billed(&span, answer.usage());
                Ok(answer)
            }
            Err(refusal) => {
                self.refused(&span, &refusal, reach, elapsed);
                Err(refusal)
            }
        }
    }

    /// One send whose answer is read as a stream: attempts as for an
    /// answer until a `2xx` head arrives (retries apply only until then),
    /// then the stream, which is never sent again. It is metered and
    /// traced when it ends.
    pub(crate) async fn open_with(
        &self,
        post: &impl Post,
        body: Bytes,
        options: Options,
    ) -> Result<AnswerStream, Refusal> {
        let started = Instant::now();
        let span = self.span();
        let timers = options.timers;
        let expect_done = options.expect_done;
        let (outcome, reach) = self
            .attempts(post, &Head, body, options, started, &span)
            .instrument(span.clone())
            .await;
        match outcome {
            Ok(got) => {
                let site = match &self.inner.target {
                    Ok(target) => target.site.clone(),
                    // A head arrived, so there was a target to send to.
                    Err(refusal) => return Err(refusal.clone()),
                };
                let timers = Timers {
                    first_byte: got.deadline.at(),
                    first_byte_ms: got.deadline.ms(),
                    idle: timers.idle.unwrap_or(self.inner.idle),
                    end: later(started, timers.stream.unwrap_or(self.inner.stream_deadline)),
                    end_ms: millis(timers.stream.unwrap_or(self.inner.stream_deadline)),
                };
                let ledger = SendRecord {
                    transport: Box::new(self.clone()),
                    site,
                    span,
                    started,
                    attempts: got.attempts,
                    history: got.history,
                    key: got.key,
                };
                let opened = got.got;
                let head = StreamHead {
                    status: opened.status,
                    request_id: opened.request_id,
                    content_type: opened.content_type,
                };
                let stream = AnswerStream::opened(head, opened.body, timers, ledger);
                Ok(if expect_done {
                    stream.expecting_done()
                } else {
                    stream
                })
            }
            Err(refusal) => {
                self.refused(&span, &refusal, reach, started.elapsed());
                Err(refusal)
            }
        }
    }

    /// The meter and the span of a send that ended in an answer (a stream
    /// that ended cleanly, or that its reader stopped, counts as one).
    pub(crate) fn answered(&self, span: &tracing::Span, ended: Ended<'_>) {
        let Ended {
            status,
            attempts,
            request_id,
            elapsed,
        } = ended;
        self.inner.meter.sent(Ok(()), Some(elapsed), false);
        // The fields an answer sets, recorded at once: a subscriber is
        // called once for them, and with none nothing is looked up.
        if span.is_disabled() {
            return;
        }
        let Some(fields) = span.metadata().map(tracing::Metadata::fields) else {
            return;
        };
        let elapsed_ms = millis(elapsed);
        let field = |name| fields.field(name);
        if let (Some(a), Some(s), Some(r), Some(e)) = (
            field("attempts"),
            field("status"),
            field("request_id"),
            field("elapsed_ms"),
        ) {
            let request_id = request_id.as_ref().map(|id| id as &dyn tracing::Value);
            span.record_all(&fields.value_set(&[
                (&a, Some(&attempts as &dyn tracing::Value)),
                (&s, Some(&status as &dyn tracing::Value)),
                (&r, request_id),
                (&e, Some(&elapsed_ms as &dyn tracing::Value)),
            ]));
        }
    }

    /// The meter, the span and the refusal event of a send that ended in a
    /// refusal.
    fn refused(
        &self,
        span: &tracing::Span,
        refusal: &Refusal,
        reach: Reach,
        elapsed: std::time::Duration,
    ) {
        let reached = reach == Reach::Wire;
        let held = reach == Reach::Held;
        self.inner
            .meter
            .sent(Err(refusal.cause()), reached.then_some(elapsed), held);
        self.refused_in(span, refusal, elapsed);
    }

    /// The span's fields and the refusal event of a refusal, whatever the
    /// meter counted.
    pub(crate) fn refused_in(
        &self,
        span: &tracing::Span,
        refusal: &Refusal,
        elapsed: std::time::Duration,
    ) {
        span.record("attempts", refusal.attempts());
        span.record("cause", refusal.cause().as_str());
        if let Some(status) = refusal.status() {
            span.record("status", status);
        }
        if let Some(id) = refusal.request_id() {
            span.record("request_id", id);
        }
        if let Some(wait) = refusal.retry_after() {
            span.record("retry_after_s", wait.as_secs_f64());
        }
        refused(span, refusal);
        record_elapsed(span, elapsed);
    }

    /// The `meterwire.send` span, its fields recorded as the send ends.
    fn span(&self) -> tracing::Span {
        let named = &self.inner.named;
        tracing::info_span!(
            "meterwire.send",
            scope = %named.scope,
            engine = %named.engine,
            attempts = tracing::field::Empty,
            status = tracing::field::Empty,
            cause = tracing::field::Empty,
            elapsed_ms = tracing::field::Empty,
            request_id = tracing::field::Empty,
            retry_after_s = tracing::field::Empty,
            idempotency_key = tracing::field::Empty,
            events = tracing::field::Empty,
            bytes = tracing::field::Empty,
            first_byte_ms = tracing::field::Empty,
            gen_ai.usage.input_tokens = tracing::field::Empty,
            gen_ai.usage.output_tokens = tracing::field::Empty,
        )
    }

    /// The attempts of one send. Also says whether any request reached the
    /// wire, for the meter's latency and its count of held sends.
    async fn attempts<R: Read>(
        &self,
        post: &impl Post,
        read: &R,
        body: Bytes,
        options: Options,
        started: Instant,
        span: &tracing::Span,
    ) -> (Result<Got<R::Got>, Refusal>, Reach) {
        let target = match &self.inner.target {
            Ok(target) => target,
            Err(refusal) => return (Err(refusal.clone()), Reach::Unsent),
        };
        let site = &target.site;
        let limits = &self.inner.limits;
        let concealer = &self.inner.concealer;
        // The deadline covers the token file's read too: a read that
        // cannot end in time keeps the last good token.
        let deadline = Deadline::new(started, options.deadline.unwrap_or(self.inner.deadline));
        // The send has just started: its clock reading is now's.
        // A token given once is the one; a file's is read when it may have
        // changed.
        let current = match &target.token {
            TokenSource::Fixed(header) => Ok(Current {
                header: header.clone(),
                generation: 0,
            }),
            TokenSource::File(file) => file.current(started, deadline.at(), concealer).await,
        };
        let mut token = match current {
            Ok(token) => token,
            Err(problem) => {
                let path = target.token.file().map(TokenFile::path).unwrap_or_default();
                let path = concealer.show_all(&path);
                let refusal = render::sent(site, Kind::TokenFile { path, problem });
                return (Err(refusal), Reach::Unsent);
            }
        };
        if let Some(latched) = limits.latched_now(token.generation) {
            // The latch belongs to the token it judged: while it stands,
            // every send looks at the file again (a read, not a request),
            // and a token the file has since replaced goes out.
            let replaced = match target.token.file() {
                Some(file) => {
                    file.replaced(token.generation, Instant::now(), deadline.at(), concealer)
                        .await
                }
                None => None,
            };
            match replaced {
                Some(new) => token = new,
                None => {
                    return (
                        Err(held::latched(site, &latched, Instant::now())),
                        Reach::Held,
                    );
                }
            }
        }
        let policy = &self.inner.retries;
        let key = options
            .key
            .or_else(|| policy.keys().then(IdempotencyKey::fresh));
        let key_text = key.as_ref().map(IdempotencyKey::shown);
        if let Some(key) = key_text {
            span.record("idempotency_key", key.as_str());
        }
        let extra = options.extra;
        // A token a file replaced after the engine rejected it is tried once.
        let mut rotated = false;

        let mut history: Vec<Shown> = Vec::new();
        let mut attempt = 0;
        let mut waited = false;
        // A token given once was had without a wait: the first attempt
        // goes at the send's start, and the clock need not be read again.
        let mut at_start = target.token.file().is_none().then_some(started);
        loop {
            let now = at_start.take().unwrap_or_else(Instant::now);
            let admitted = match limits.admit(policy, deadline.at(), now).await {
                Admission::Open(ticket) => Ok(ticket),
                Admission::Wait(until) => {
                    waited = true;
                    tokio::time::sleep_until(until).await;
                    continue;
                }
                Admission::Held(hold) => Err(held::holding(site, &hold, Instant::now())),
                Admission::Spent(spent) => Err(held::spent(site, &spent, Instant::now())),
            };
            let ticket = match admitted {
                Ok(ticket) => ticket,
                Err(refusal) => {
                    let refusal = refusal.with_attempts(attempt);
                    let reach = if attempt > 0 {
                        Reach::Wire
                    } else {
                        Reach::Held
                    };
                    let refusal = history::after_attempts(site, refusal, &history, key_text);
                    return (Err(refusal), reach);
                }
            };
            if std::mem::take(&mut waited) {
                self.inner.meter.waited();
            }
            attempt += 1;
            self.inner.meter.attempt(body.len());
            let headers = self.request_headers(&extra, key.as_ref(), &token.header);
            let sent = self
                .attempt(post, read, target, body.clone(), headers, deadline)
                .await;
            let now = Instant::now();
            match sent {
                Ok(got) => {
                    tracing::debug!(attempt, status = R::status(&got), "answered");
                    let fields = R::fields(&got);
                    if let Some(hold) = limits.observe(now, Observed::Answer { fields }, &ticket) {
                        limits.share(&hold).await;
                    }
                    let got = Got {
                        got,
                        attempts: attempt,
                        deadline,
                        history,
                        key: key_text.cloned(),
                        at: now,
                    };
                    return (Ok(got), Reach::Wire);
                }
                Err(missed) => {
                    let outcome = missed.outcome();
                    let short = missed.short();
                    let refusal = missed.refusal;
                    tracing::debug!(attempt, status = refusal.status(), what = %short, "refused");
                    history.push(short);
                    let seen = Observed::Refused(&refusal, token.generation);
                    if let Some(hold) = limits.observe(now, seen, &ticket) {
                        limits.share(&hold).await;
                    }
                    drop(ticket);
                    // The engine rejected a token its file has since
                    // replaced: the send goes once more, with the new one
                    // (a rejected token is not billed), whatever the policy.
                    let rejected = matches!(refusal.status(), Some(401 | 403))
                        && refusal.cause() == crate::refusal::Cause::NoEngine;
                    let file = target.token.file();
                    let replaced = match file {
                        Some(file) if rejected && !rotated && deadline.allows(now) => {
                            file.replaced(token.generation, now, deadline.at(), concealer)
                                .await
                        }
                        _ => None,
                    };
                    if let Some(new) = replaced {
                        tracing::debug!(
                            attempt,
                            "the token file holds a new token; once more with it"
                        );
                        rotated = true;
                        token = new;
                        continue;
                    }
                    let wait = match retry::decide(outcome, key.is_some(), policy.waits_for()) {
                        Retry::No => None,
                        Retry::After(hint) => Some(hint),
                        Retry::Backoff => Some(policy.backoff(attempt)),
                    };
                    let refusal = refusal.with_attempts(attempt);
                    match wait {
                        Some(wait)
                            if attempt < policy.attempts()
                                && now
                                    .checked_add(wait)
                                    .is_some_and(|end| deadline.allows(end)) =>
                        {
                            tokio::time::sleep(wait).await;
                        }
                        _ => {
                            let refusal =
                                history::after_attempts(site, refusal, &history, key_text);
                            return (Err(refusal), Reach::Wire);
                        }
                    }
                }
            }
        }
    }

    /// The headers of one attempt: the transport's and the call's own, the
    /// idempotency key, and the token, set last, so nothing a caller gave
    /// can stand in for it. Built whole for each attempt, with room for what
    /// the HTTP stack adds (`user-agent`, `host`, `content-length`), so the
    /// map the request goes out with is allocated once and never grows.
    fn request_headers(
        &self,
        extra: &HeaderMap,
        key: Option<&IdempotencyKey>,
        token: &HeaderValue,
    ) -> HeaderMap {
        const ADDED: usize = 3;
        let room = 3 + usize::from(key.is_some()) + ADDED + self.inner.headers.len() + extra.len();
        let mut headers = HeaderMap::with_capacity(room);
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        for (name, value) in self.inner.headers.iter().chain(extra.iter()) {
            headers.insert(name.clone(), value.clone());
        }
        if let Some(key) = key {
            key.apply(&mut headers);
        }
        headers.insert(AUTHORIZATION, token.clone());
        headers
    }

    /// One request, its reply read (as far as `read` reads it) or refused.
    async fn attempt<R: Read>(
        &self,
        post: &impl Post,
        read: &R,
        target: &Target,
        body: Bytes,
        headers: HeaderMap,
        deadline: Deadline,
    ) -> Result<R::Got, Missed> {
        let site = &target.site;
        match post.post(site, headers, body, deadline).await {
            Ok(reply) => read.read(&self.reading(site, deadline), reply).await,
            Err(failure) => Err(Missed::failed(site, failure)),
        }
    }

    /// Where this transport reads a reply for `site`.
    fn reading<'a>(&'a self, site: &'a Site, deadline: Deadline) -> Reading<'a> {
        Reading {
            site,
            concealer: &self.inner.concealer,
            meter: &self.inner.meter,
            cap: self.inner.max_answer_bytes,
            deadline,
        }
    }
}

/// What a send got: what its last attempt read, how many attempts it
/// made, its deadline, what each attempt before the last came to, and the
/// idempotency key they carried.
pub(crate) struct Got<T> {
    got: T,
    attempts: u32,
    deadline: Deadline,
    history: Vec<Shown>,
    key: Option<Shown>,
    /// When its last attempt's reply had been read.
    at: Instant,
}

fn record_elapsed(span: &tracing::Span, elapsed: std::time::Duration) {
    span.record("elapsed_ms", millis(elapsed));
}

/// The refusal event, at `INFO`, in the send's span. Its strings are the
/// refusal's own, concealed and bounded.
fn refused(span: &tracing::Span, refusal: &Refusal) {
    span.in_scope(|| {
        tracing::info!(
            cause = refusal.cause().as_str(),
            reason = refusal.reason(),
            remedy = refusal.remedy(),
            "refused"
        );
    });
}
