//! What one attempt's reply becomes: an answer, or the refusal of its
//! status, or of what failed while its body was read.
//!
//! Everything the engine sent enters through the door first (its headers
//! concealed), then the status decides: a `2xx` body is read to its cap and
//! concealed; anything else has its head read for the engine's words and
//! becomes the wire table's refusal. Once the engine has answered, a
//! failure keeps the status and says how far the answer got.

use std::time::SystemTime;

use reqwest::header::HeaderMap;

use super::body::{Bounds, read_head};
use super::deadline::Deadline;
use super::door::at_the_door;
use super::incoming::Incoming;
use super::short::read_text;
use crate::conceal::{Concealer, Shown};
use crate::limits::dialects::RateFields;
use crate::meter::Meter;
use crate::refusal::Refusal;
use crate::refusal::evidence::request_id::shown_request_id;
use crate::refusal::failure::{Answered, Failure, refusal_after_head, refusal_for_failure};
use crate::refusal::site::Site;
use crate::refusal::status::refusal_for_concealed_status;
use crate::retry::Outcome;
use crate::stream::Pieces;

/// An answer as one attempt read it.
pub(crate) struct Received {
    pub(crate) status: u16,
    pub(crate) text: String,
    pub(crate) request_id: Option<Shown>,
    /// Its headers, as the door kept them.
    pub(crate) headers: HeaderMap,
    /// What the answer's rate-limit fields said.
    pub(crate) fields: RateFields,
}

/// One attempt that did not end in an answer: its refusal, whose value
/// says what it means for a retry and how the list of attempts names it.
pub(crate) struct Missed {
    pub(crate) refusal: Refusal,
}

impl Missed {
    /// A failure before any answer arrived.
    pub(crate) fn failed(site: &Site, failure: Failure) -> Missed {
        Missed {
            refusal: refusal_for_failure(site, &failure),
        }
    }

    /// What the attempt came to, for the retry table.
    pub(crate) fn outcome(&self) -> Outcome {
        self.refusal
            .kind()
            .map_or(Outcome::Final, crate::refusal::kind::Kind::outcome)
    }

    /// A few words for the list of attempts in a reason.
    pub(crate) fn short(&self) -> Shown {
        self.refusal
            .kind()
            .map_or_else(|| Shown::from("refused"), crate::refusal::render::short)
    }
}

/// A stream's reply whose head said `2xx`: what the head said, and its body
/// to come, piece by piece.
pub(crate) struct Opened {
    pub(crate) status: u16,
    pub(crate) request_id: Option<Shown>,
    /// Its `content-type`, concealed, as the door kept it.
    pub(crate) content_type: Option<String>,
    pub(crate) fields: RateFields,
    pub(crate) body: Pieces,
}

/// Where a reply is read: the site it answers for, and the transport's
/// concealer, meter, cap and the send's deadline.
pub(crate) struct Reading<'a> {
    pub(crate) site: &'a Site,
    pub(crate) concealer: &'a Concealer,
    pub(crate) meter: &'a Meter,
    pub(crate) cap: u64,
    pub(crate) deadline: Deadline,
}

impl Reading<'_> {
    /// A reply whose head is not `2xx`: its head read for the engine's
    /// words, and the wire table's refusal.
    async fn refuse(&self, incoming: &mut impl Incoming, headers: &HeaderMap) -> Missed {
        let site = self.site;
        let status = incoming.status();
        let (head, arrived) = read_head(incoming, self.deadline, self.concealer).await;
        self.meter.received(arrived);
        let refusal = refusal_for_concealed_status(site, status, headers, &head, SystemTime::now())
            .unwrap_or_else(|| Missed::failed(site, Failure::Other).refusal);
        Missed { refusal }
    }

    /// The head of a stream's reply: a refusal for a status that is not
    /// `2xx`, as for any answer, else the head, and the body to come.
    pub(crate) async fn open(
        &self,
        mut incoming: impl Incoming + 'static,
    ) -> Result<Opened, Missed> {
        let status = incoming.status();
        let headers = at_the_door(incoming.take_headers(), self.concealer);
        if !(200..300).contains(&status) {
            return Err(self.refuse(&mut incoming, &headers).await);
        }
        let content_type = headers
            .get(reqwest::header::CONTENT_TYPE)
            .map(|value| String::from_utf8_lossy(value.as_bytes()).into_owned());
        let body = futures_util::stream::unfold(incoming, |mut incoming| async move {
            match incoming.chunk().await {
                Ok(Some(piece)) => Some((Ok(piece), incoming)),
                Ok(None) => None,
                Err(failure) => Some((Err(failure), incoming)),
            }
        });
        Ok(Opened {
            status,
            request_id: shown_request_id(&headers, self.concealer),
            content_type,
            fields: RateFields::read_now(&headers),
            body: Box::pin(body),
        })
    }

    /// The reply of one attempt, read or refused.
    pub(crate) async fn reply(&self, mut incoming: impl Incoming) -> Result<Received, Missed> {
        let site = self.site;
        let status = incoming.status();
        let headers = at_the_door(incoming.take_headers(), self.concealer);
        if !(200..300).contains(&status) {
            return Err(self.refuse(&mut incoming, &headers).await);
        }

        // The engine has answered: a failure from here on keeps the status
        // and says how much of the answer arrived.
        let after_head = |failure: Failure, bytes: u64| {
            let answered = Answered {
                status,
                bytes,
                events: None,
            };
            Missed {
                refusal: refusal_after_head(site, &failure, answered),
            }
        };
        let cap = self.cap;
        if let Some(declared) = incoming.content_length().filter(|len| *len > cap) {
            let failure = Failure::AnswerTooLarge {
                cap,
                declared: Some(declared),
            };
            return Err(after_head(failure, 0));
        }
        let request_id = shown_request_id(&headers, self.concealer);
        let fields = RateFields::read_now(&headers);
        let bounds = Bounds {
            cap,
            deadline: self.deadline,
            meter: self.meter,
            concealer: self.concealer,
        };
        let text = read_text(&mut incoming, bounds)
            .await
            .map_err(|(failure, bytes)| after_head(failure, bytes))?;
        Ok(Received {
            status,
            text,
            request_id,
            headers,
            fields,
        })
    }
}
