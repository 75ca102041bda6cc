//! How an attempt reaches the engine (reqwest, or a fuzz target's script)
//! and how far it reads the reply (the whole answer, or a stream's head):
//! the two seams the send loop in `run.rs` is generic over.

use std::future::Future;

use bytes::Bytes;
use reqwest::Method;
use reqwest::header::HeaderMap;
use tokio::time::timeout_at;

use super::deadline::Deadline;
use super::incoming::{Incoming, Wire};
use super::reply::{Missed, Opened, Reading, Received};
use crate::limits::dialects::RateFields;
use crate::refusal::failure::{Failure, classify};
use crate::refusal::site::Site;

/// How far an attempt reads a reply whose head said `2xx`: the whole
/// answer, or (for a stream) the head alone, the body to come. A reply
/// that is not `2xx` is a refusal either way.
pub(crate) trait Read: Sync {
    /// What the attempt yields.
    type Got: Send;

    /// Reads `reply` as far as this reader does.
    fn read<I: Incoming + 'static>(
        &self,
        reading: &Reading<'_>,
        reply: I,
    ) -> impl Future<Output = Result<Self::Got, Missed>> + Send;

    /// What its rate-limit fields said.
    fn fields(got: &Self::Got) -> &RateFields;

    /// The status it answered.
    fn status(got: &Self::Got) -> u16;
}

/// The whole answer.
pub(super) struct Whole;

impl Read for Whole {
    type Got = Received;

    async fn read<I: Incoming + 'static>(
        &self,
        reading: &Reading<'_>,
        reply: I,
    ) -> Result<Received, Missed> {
        reading.reply(reply).await
    }

    fn fields(got: &Received) -> &RateFields {
        &got.fields
    }

    fn status(got: &Received) -> u16 {
        got.status
    }
}

/// The head of a stream.
pub(super) struct Head;

impl Read for Head {
    type Got = Opened;

    async fn read<I: Incoming + 'static>(
        &self,
        reading: &Reading<'_>,
        reply: I,
    ) -> Result<Opened, Missed> {
        reading.open(reply).await
    }

    fn fields(got: &Opened) -> &RateFields {
        &got.fields
    }

    fn status(got: &Opened) -> u16 {
        got.status
    }
}

/// How an attempt reaches the engine and gets the head of its answer:
/// reqwest for every real send, a script for the fuzz targets, which run
/// the rest of the send loop unchanged.
pub(crate) trait Post: Sync {
    /// The answer whose head arrived.
    type Reply: Incoming + 'static;

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
pub(super) struct Reqwest<'a> {
    pub(super) client: &'a reqwest::Client,
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
        // The request is built whole rather than through a builder, which
        // would copy every header into a map of its own.
        let mut request = reqwest::Request::new(Method::POST, site.address().url().clone());
        *request.headers_mut() = headers;
        *request.body_mut() = Some(body.into());
        let ms = deadline.ms();
        match timeout_at(deadline.at(), self.client.execute(request)).await {
            Err(_) => Err(Failure::Deadline { ms }),
            Ok(Err(error)) => Err(classify(&error, ms, site.proxy().is_some())),
            Ok(Ok(response)) => Ok(Wire { response, ms }),
        }
    }
}
