//! What an answer is to the transport once its head has arrived: a status,
//! its headers, and a body read piece by piece.
//!
//! The real one is reqwest's `Response`, read under the send's deadline. The
//! fuzz targets feed a scripted one (any status, any headers, any body in
//! any pieces at any times) through the same reader, so everything from the
//! door on (the evidence, the refusal, the limits) is what they test.

use std::future::Future;

use bytes::Bytes;
use reqwest::header::HeaderMap;

use crate::refusal::failure::{Failure, classify};

/// An answer whose head has arrived.
pub(crate) trait Incoming: Send {
    /// The status the engine answered.
    fn status(&self) -> u16;
    /// Its headers, raw, handed over once (a second call has none): the
    /// door conceals what the crate keeps of them.
    fn take_headers(&mut self) -> HeaderMap;
    /// The length the engine declared, if it declared one.
    fn content_length(&self) -> Option<u64>;
    /// The next piece of the body; `Ok(None)` at its end.
    fn chunk(&mut self) -> impl Future<Output = Result<Option<Bytes>, Failure>> + Send;
}

/// reqwest's answer, its read errors named as failures.
pub(crate) struct Wire {
    pub(crate) response: reqwest::Response,
    /// The send's deadline in milliseconds, for a failure that names it.
    pub(crate) ms: u64,
}

impl Incoming for Wire {
    fn status(&self) -> u16 {
        self.response.status().as_u16()
    }

    fn take_headers(&mut self) -> HeaderMap {
        std::mem::take(self.response.headers_mut())
    }

    fn content_length(&self) -> Option<u64> {
        self.response.content_length()
    }

    async fn chunk(&mut self) -> Result<Option<Bytes>, Failure> {
        // A failure once the head has arrived is never the proxy's.
        self.response
            .chunk()
            .await
            .map_err(|error| classify(&error, self.ms, false))
    }
}
