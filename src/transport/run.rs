//! The send loop: the latch, the hold, then as many attempts as the policy
//! and the retry table allow, all within one deadline; metered and traced.
//!
//! Policy is decided where it is named, and only carried out here: what a
//! send meets before it goes and what an outcome starts is `limits`,
//! whether an outcome is tried again is `retry::decide`, and every word of
//! a refusal is `refusal`'s.

use std::future::Future;

use bytes::Bytes;
use reqwest::header::{ACCEPT, AUTHORIZATION, CONTENT_TYPE, HeaderMap, HeaderValue};
use tokio::time::{Instant, timeout_at};
use tracing::Instrument;

use super::deadline::Deadline;
use super::handle::HttpTransport;
use super::headers::IdempotencyKey;
use super::incoming::{Incoming, Wire};
use super::reply::{Missed, Reading, Received};
use crate::answer::Answer;
use crate::config::Target;
use crate::limits::{Gate, Seen};
use crate::refusal::Refusal;
use crate::refusal::failure::{Failure, classify, refusal_for_failure};
use crate::refusal::site::Site;
use crate::refusal::{held, history};
use crate::retry::{self, Retry};

/// What one send carries besides its body: the call's own headers, its
/// deadline and its idempotency key, each already checked.
#[derive(Debug, Default)]
pub(crate) struct Options {
    pub(crate) extra: HeaderMap,
    pub(crate) deadline: Option<std::time::Duration>,
    pub(crate) key: Option<IdempotencyKey>,
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
            .attempts(post, body, options, started, &span)
            .instrument(span.clone())
            .await;
        let elapsed = started.elapsed();
        let meter = &self.inner.meter;
        let reached = reach == Reach::Wire;
        match &outcome {
            Ok(answer) => {
                meter.sent(Ok(()), Some(elapsed), false);
                span.record("attempts", answer.attempts());
                span.record("status", answer.status());
                if let Some(id) = answer.request_id() {
                    span.record("request_id", id);
                }
            }
            Err(refusal) => {
                let held = reach == Reach::Held;
                meter.sent(Err(refusal.cause()), reached.then_some(elapsed), held);
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
                refused(&span, refusal);
            }
        }
        span.record(
            "elapsed_ms",
            u64::try_from(elapsed.as_millis()).unwrap_or(u64::MAX),
        );
        outcome
    }

    /// The `meterwire.send` span, its fields recorded as the send ends.
    fn span(&self) -> tracing::Span {
        let shown = &self.inner.shown;
        tracing::info_span!(
            "meterwire.send",
            scope = %shown.scope,
            engine = %shown.engine,
            attempts = tracing::field::Empty,
            status = tracing::field::Empty,
            cause = tracing::field::Empty,
            elapsed_ms = tracing::field::Empty,
            request_id = tracing::field::Empty,
            retry_after_s = tracing::field::Empty,
            idempotency_key = tracing::field::Empty,
        )
    }

    /// The attempts of one send. Also says whether any request reached the
    /// wire, for the meter's latency and its count of held sends.
    async fn attempts(
        &self,
        post: &impl Post,
        body: Bytes,
        options: Options,
        started: Instant,
        span: &tracing::Span,
    ) -> (Result<Answer, Refusal>, Reach) {
        let target = match &self.inner.target {
            Ok(target) => target,
            Err(refusal) => return (Err(refusal.clone()), Reach::Unsent),
        };
        let site = &target.site;
        let limits = &self.inner.limits;
        if let Some(latched) = limits.latched(Instant::now()) {
            return (
                Err(held::latched(site, &latched, Instant::now())),
                Reach::Held,
            );
        }
        let deadline = Deadline::new(started, options.deadline.unwrap_or(self.inner.deadline));
        let policy = &self.inner.retries;
        let key = options
            .key
            .or_else(|| policy.keys().then(IdempotencyKey::fresh));
        let key_text = key.as_ref().map(IdempotencyKey::as_str);
        if let Some(key) = key_text {
            span.record("idempotency_key", key);
        }
        let headers = self.request_headers(target, options.extra, key.as_ref());

        let mut history: Vec<String> = Vec::new();
        let mut attempt = 0;
        loop {
            match limits.gate(Instant::now(), policy, deadline.at()) {
                Gate::Open => {}
                Gate::Wait(until) => {
                    tokio::time::sleep_until(until).await;
                    continue;
                }
                Gate::Held(hold) => {
                    let refusal = held::holding(site, &hold, Instant::now()).with_attempts(attempt);
                    let reach = if attempt > 0 {
                        Reach::Wire
                    } else {
                        Reach::Held
                    };
                    let refusal = history::after_attempts(site, refusal, &history, key_text);
                    return (Err(refusal), reach);
                }
            }
            attempt += 1;
            self.inner.meter.attempt(body.len());
            let sent = self
                .attempt(post, target, body.clone(), headers.clone(), deadline)
                .await;
            let now = Instant::now();
            match sent {
                Ok(answer) => {
                    tracing::debug!(attempt, status = answer.status, "answered");
                    limits.observe(
                        now,
                        Seen::Answer {
                            exhausted: answer.exhausted,
                        },
                    );
                    let answer = Answer::received(
                        answer.status,
                        answer.text,
                        answer.request_id,
                        answer.headers,
                    )
                    .with_attempts(attempt)
                    .after(started.elapsed());
                    return (Ok(answer), Reach::Wire);
                }
                Err(missed) => {
                    let Missed {
                        refusal,
                        outcome,
                        short,
                    } = missed;
                    tracing::debug!(attempt, status = refusal.status(), what = %short, "refused");
                    history.push(short);
                    limits.observe(now, Seen::Refused(&refusal));
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

    /// The headers of every attempt of one send: the transport's and the
    /// call's own, the idempotency key, and the token last, so nothing a
    /// caller gave can stand in for it.
    fn request_headers(
        &self,
        target: &Target,
        extra: HeaderMap,
        key: Option<&IdempotencyKey>,
    ) -> HeaderMap {
        let mut headers = HeaderMap::with_capacity(5 + self.inner.headers.len() + extra.len());
        headers.insert(CONTENT_TYPE, HeaderValue::from_static("application/json"));
        headers.insert(ACCEPT, HeaderValue::from_static("application/json"));
        for (name, value) in self.inner.headers.iter().chain(extra.iter()) {
            headers.insert(name.clone(), value.clone());
        }
        if let Some(key) = key {
            key.apply(&mut headers);
        }
        headers.insert(AUTHORIZATION, target.authorization.clone());
        headers
    }

    /// One request, its answer read or refused.
    async fn attempt(
        &self,
        post: &impl Post,
        target: &Target,
        body: Bytes,
        headers: HeaderMap,
        deadline: Deadline,
    ) -> Result<Received, Missed> {
        let site = &target.site;
        match post.post(site, headers, body, deadline).await {
            Ok(reply) => self.reading(site, deadline).reply(reply).await,
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

/// How an attempt reaches the engine and gets the head of its answer:
/// reqwest for every real send, a script for the fuzz targets, which run
/// the rest of the send loop unchanged.
pub(crate) trait Post: Sync {
    /// The answer whose head arrived.
    type Reply: Incoming;

    /// Sends one request to `site`, or says why no answer's head came by
    /// the deadline.
    fn post(
        &self,
        site: &Site,
        headers: HeaderMap,
        body: Bytes,
        deadline: Deadline,
    ) -> impl Future<Output = Result<Self::Reply, Failure>> + Send;
}

/// The transport's own client.
struct Reqwest<'a> {
    client: &'a reqwest::Client,
}

impl Post for Reqwest<'_> {
    type Reply = Wire;

    async fn post(
        &self,
        site: &Site,
        headers: HeaderMap,
        body: Bytes,
        deadline: Deadline,
    ) -> Result<Wire, Failure> {
        let request = self
            .client
            .post(site.address().url().clone())
            .headers(headers)
            .body(body);
        let ms = deadline.ms();
        match timeout_at(deadline.at(), request.send()).await {
            Err(_) => Err(Failure::Deadline { ms }),
            Ok(Err(error)) => Err(classify(&error, ms, site.proxy().is_some())),
            Ok(Ok(response)) => Ok(Wire { response, ms }),
        }
    }
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
