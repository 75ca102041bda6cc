//! The refusal: one of four causes, a reason and a remedy.
//!
//! The four causes are four remedies an operator can apply: set a variable
//! (`no-engine`), check an address (`engine-unreachable`), fund an account
//! (`engine-out-of-credit`), wait for a window (`engine-over-quota`). A
//! refusal is written to be pasted: into a log, a terminal, or a public
//! merge-request comment. So every string in it is a `Shown`, text the
//! concealer has shown (`conceal/shown.rs`), and the report shape is versioned
//! (`"behaviour": "v1"`) and additive: consumers read `refusal.reason` and
//! `refusal.remedy` and ignore fields they do not know.
//!
//! A refusal is a value before it is words: [`kind`] holds what happened
//! and its evidence, and the cause, the status and the retry table's
//! outcome are read from it; [`render`] writes every reason and remedy
//! from it, in one place. What decides the value lives beside this file:
//! [`status`] (what an answer's status and evidence become), [`failure`]
//! (what a failed request becomes, read from reqwest's errors), [`held`]
//! (a send held by the engine's window or latched after a rejection),
//! [`stream`] (an error or a timer inside a stream) and [`evidence`] (retry
//! hints and rate-limit fields, request ids, challenges, the engine's
//! words, its codes and phrases, and the protocol on the wire). Where a
//! send was going is the configuration's `Site`.

pub(crate) mod evidence;
pub(crate) mod failure;
pub(crate) mod held;
pub(crate) mod kind;
pub(crate) mod render;
pub(crate) mod status;
pub(crate) mod stream;

pub(crate) use crate::config::site;

/// What a refusal says about the attempts of its send: "after 3 attempts
/// (HTTP 503, HTTP 503, connection reset)" tells an operator the engine was
/// asked three times and billed for whatever it billed, and the
/// idempotency key lets its support desk find them.
pub(crate) mod history {
    pub(crate) use super::render::after_attempts;
}

use std::fmt;
use std::str::FromStr;
use std::time::Duration;

use serde::{Deserialize, Serialize};

use crate::conceal::Shown;

/// Why a call did not end in an answer.
///
/// Ordered as [`Cause::ALL`] lists them (`no-engine`, `engine-unreachable`,
/// `engine-out-of-credit`, `engine-over-quota`), so a set or map of causes
/// reads in that order.
///
/// ```
/// use std::collections::BTreeSet;
/// use meterwire::Cause;
///
/// let seen: BTreeSet<Cause> = [Cause::EngineOverQuota, Cause::NoEngine].into();
/// assert_eq!(seen.first(), Some(&Cause::NoEngine));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, PartialOrd, Ord, Hash, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum Cause {
    /// No engine to ask: no address, no usable token, or a token the engine
    /// rejected (`401`, `403`, or an error code or words that name the
    /// token). The remedy is to set a variable.
    NoEngine,
    /// The engine did not answer the question: the request failed, or it
    /// answered with a status that is not an answer (or an error that names
    /// its own trouble, or a gateway's upstream that refused the gateway).
    /// The remedy is to check the address, the request, or the engine's
    /// health.
    EngineUnreachable,
    /// The account is empty: the engine answered `402`, or an error whose
    /// code or words name the account's credit rather than a window. The
    /// remedy is to fund it (or, for an engine that asks for an x402
    /// payment with each request, to pay it).
    EngineOutOfCredit,
    /// A limit is spent: the engine answered `429` (or a ban that ends, or
    /// an error that names a limit), or the send was held, not sent,
    /// because the engine had asked to wait. The remedy is to wait for the
    /// window.
    EngineOverQuota,
}

impl Cause {
    /// The kebab-case name, as in the report: `"engine-over-quota"`.
    ///
    /// ```
    /// assert_eq!(meterwire::Cause::EngineOutOfCredit.as_str(), "engine-out-of-credit");
    /// ```
    pub fn as_str(self) -> &'static str {
        match self {
            Cause::NoEngine => "no-engine",
            Cause::EngineUnreachable => "engine-unreachable",
            Cause::EngineOutOfCredit => "engine-out-of-credit",
            Cause::EngineOverQuota => "engine-over-quota",
        }
    }

    /// All four, in the order of their remedies: set a variable, check an
    /// address, fund an account, wait for a window.
    pub const ALL: [Cause; 4] = [
        Cause::NoEngine,
        Cause::EngineUnreachable,
        Cause::EngineOutOfCredit,
        Cause::EngineOverQuota,
    ];
}

impl fmt::Display for Cause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.as_str())
    }
}

/// A name that is not one of the four causes: the error of
/// [`Cause`]'s `FromStr`.
///
/// ```
/// use meterwire::{Cause, UnknownCause};
///
/// let parsed: Result<Cause, UnknownCause> = "over-quota".parse();
/// assert!(parsed.unwrap_err().to_string().contains("engine-over-quota"));
/// ```
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct UnknownCause(());

impl fmt::Display for UnknownCause {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("not a cause: expected no-engine, engine-unreachable, engine-out-of-credit or engine-over-quota")
    }
}

impl std::error::Error for UnknownCause {}

/// The kebab-case names, as in the report.
///
/// ```
/// use meterwire::Cause;
///
/// assert_eq!("engine-over-quota".parse(), Ok(Cause::EngineOverQuota));
/// assert!("over-quota".parse::<Cause>().is_err());
/// ```
impl FromStr for Cause {
    type Err = UnknownCause;

    fn from_str(name: &str) -> Result<Cause, UnknownCause> {
        Cause::ALL
            .into_iter()
            .find(|cause| cause.as_str() == name)
            .ok_or(UnknownCause(()))
    }
}

/// A call that did not end in an answer: its cause, what happened, and what
/// to do about it.
///
/// ```
/// use meterwire::{Cause, Refusal};
///
/// let refusal = Refusal::new(
///     Cause::EngineOverQuota,
///     "scope \"acme\": engine at https://engine.example/v1 (from CHANT_BEHAVIOUR_ENGINE) answered HTTP 429",
///     "wait for the engine's quota window to reset, or set CHANT_BEHAVIOUR_TOKEN to a token with its own limit",
///     Some("CHANT_BEHAVIOUR_ENGINE".to_owned()),
/// );
/// let json = refusal.report().to_json();
/// assert!(json.starts_with(r#"{"behaviour":"v1","refusal":{"cause":"engine-over-quota""#));
/// let back: meterwire::Report = serde_json::from_str(&json)?;
/// assert_eq!(back.refusal(), &refusal);
/// assert_eq!(refusal.variable(), Some("CHANT_BEHAVIOUR_ENGINE"));
/// # Ok::<(), serde_json::Error>(())
/// ```
#[derive(Clone, PartialEq, Eq, Serialize, Deserialize)]
#[serde(transparent)]
pub struct Refusal(Box<Fields>);

/// A refusal's fields, boxed: a `Result<Answer, Refusal>` stays as small as
/// its answer, however much a refusal carries.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
struct Fields {
    /// The value the crate wrote the refusal from; none for one built from
    /// its parts or read from a report.
    #[serde(skip)]
    kind: Kept,
    cause: Cause,
    reason: Shown,
    remedy: Shown,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    source: Option<Shown>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    status: Option<u16>,
    #[serde(
        default,
        rename = "retryAfter",
        skip_serializing_if = "Option::is_none",
        with = "seconds"
    )]
    retry_after: Option<Duration>,
    #[serde(default, rename = "requestId", skip_serializing_if = "Option::is_none")]
    request_id: Option<Shown>,
    #[serde(default, skip_serializing_if = "Option::is_none")]
    engine: Option<Shown>,
    #[serde(
        default,
        rename = "idempotencyKey",
        skip_serializing_if = "Option::is_none"
    )]
    idempotency_key: Option<Shown>,
    #[serde(default, skip_serializing_if = "is_zero")]
    attempts: u32,
}

fn is_zero(attempts: &u32) -> bool {
    *attempts == 0
}

/// The value a refusal was written from, kept beside its words so it can
/// be written again (with its attempts, or latched). It is not part of
/// what a refusal is: two refusals with the same fields are equal, and a
/// report read back equals the refusal it was written from.
#[derive(Clone, Default)]
struct Kept(Option<Box<kind::Kind>>);

impl PartialEq for Kept {
    fn eq(&self, _: &Kept) -> bool {
        true
    }
}

impl Eq for Kept {}

impl fmt::Debug for Kept {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str("..")
    }
}

impl Refusal {
    /// A refusal from its parts. The crate builds its own refusals from
    /// concealed text; this constructor is for a predictor's tests and fakes,
    /// and takes the strings as given.
    pub fn new(
        cause: Cause,
        reason: impl Into<String>,
        remedy: impl Into<String>,
        source: Option<String>,
    ) -> Refusal {
        Refusal::written(
            cause,
            Shown::given(reason.into()),
            Shown::given(remedy.into()),
            source.map(Shown::given),
        )
    }

    /// A refusal the crate writes, from what it has shown.
    pub(crate) fn written(
        cause: Cause,
        reason: Shown,
        remedy: Shown,
        source: Option<Shown>,
    ) -> Refusal {
        Refusal(Box::new(Fields {
            kind: Kept::default(),
            cause,
            reason,
            remedy,
            source,
            status: None,
            retry_after: None,
            request_id: None,
            engine: None,
            idempotency_key: None,
            attempts: 0,
        }))
    }

    /// The same refusal, recording the HTTP status the engine answered.
    pub fn with_status(mut self, status: u16) -> Refusal {
        self.0.status = Some(status);
        self
    }

    /// The same refusal, recording how long the engine asked the caller to
    /// wait, to the millisecond (as the report carries it, so a report
    /// reads back as the refusal it was written from).
    pub fn with_retry_after(mut self, delay: Duration) -> Refusal {
        self.0.retry_after = Some(seconds::to_millisecond(delay));
        self
    }

    /// The same refusal, recording the engine's id for the request.
    pub fn with_request_id(mut self, id: impl Into<String>) -> Refusal {
        self.0.request_id = Some(Shown::given(id.into()));
        self
    }

    /// The same refusal, recording the engine's id for the request as the
    /// crate showed it.
    pub(crate) fn with_shown_request_id(mut self, id: Shown) -> Refusal {
        self.0.request_id = Some(id);
        self
    }

    /// The same refusal, recording how many requests went to the wire.
    pub fn with_attempts(mut self, attempts: u32) -> Refusal {
        self.0.attempts = attempts;
        self
    }

    /// The same refusal, naming the engine's host (concealed, as every
    /// string the crate writes).
    pub(crate) fn with_engine(mut self, host: Shown) -> Refusal {
        self.0.engine = Some(host).filter(|host| !host.is_empty());
        self
    }

    /// The same refusal, naming the idempotency key its send carried.
    pub(crate) fn with_idempotency_key(mut self, key: &Shown) -> Refusal {
        self.0.idempotency_key = Some(key.clone());
        self
    }

    /// The same refusal, keeping the value it was written from.
    pub(crate) fn with_kind(mut self, kind: kind::Kind) -> Refusal {
        self.0.kind = Kept(Some(Box::new(kind)));
        self
    }

    /// The value the crate wrote this refusal from, if it did.
    pub(crate) fn kind(&self) -> Option<&kind::Kind> {
        self.0.kind.0.as_deref()
    }

    /// The same refusal with its reason written again.
    pub(crate) fn with_reason(mut self, reason: Shown) -> Refusal {
        self.0.reason = reason;
        self
    }

    /// The cause.
    pub fn cause(&self) -> Cause {
        self.0.cause
    }

    /// What happened, naming the scope, the redacted address and the
    /// variable involved.
    pub fn reason(&self) -> &str {
        &self.0.reason
    }

    /// What an operator should do, naming at least one variable.
    pub fn remedy(&self) -> &str {
        &self.0.remedy
    }

    /// The variable the refusal traces back to, when there is one (the
    /// report's `source`); none for a value given in code, or when no
    /// variable is to blame.
    pub fn variable(&self) -> Option<&str> {
        self.0.source.as_ref().map(Shown::as_str)
    }

    /// The HTTP status the engine answered, when it answered one.
    pub fn status(&self) -> Option<u16> {
        self.0.status
    }

    /// How long the engine asked the caller to wait before sending again,
    /// from `retry-after-ms`, `retry-after` (seconds or an HTTP-date; a date
    /// in the past is zero) or a `RateLimit` reset, when it sent one that
    /// parses. In the report: `retryAfter`, in seconds.
    pub fn retry_after(&self) -> Option<Duration> {
        self.0.retry_after
    }

    /// The engine's id for the request (`x-request-id`, `request-id`, …),
    /// concealed and bounded, for its support desk. In the report:
    /// `requestId`.
    pub fn request_id(&self) -> Option<&str> {
        self.0.request_id.as_ref().map(Shown::as_str)
    }

    /// The engine's host (and port), redacted and concealed, when the
    /// refusal is about a send to one. In the report: `engine`.
    pub fn engine(&self) -> Option<&str> {
        self.0.engine.as_ref().map(Shown::as_str)
    }

    /// The idempotency key the refused send carried, when it carried one
    /// (the key is not a secret: an engine's support desk can find the
    /// send by it). In the report: `idempotencyKey`.
    pub fn idempotency_key(&self) -> Option<&str> {
        self.0.idempotency_key.as_ref().map(Shown::as_str)
    }

    /// How many requests went to the wire before this refusal: `0` for a
    /// refusal made before sending. In the report: `attempts`, when not
    /// zero.
    pub fn attempts(&self) -> u32 {
        self.0.attempts
    }

    /// The report of this refusal: `{"behaviour": "v1", "refusal": {…}}`.
    pub fn report(&self) -> Report {
        Report {
            behaviour: BEHAVIOUR_V1.to_owned(),
            refusal: self.clone(),
        }
    }

    /// Applies `f` to the reason, the remedy, the request id and the
    /// engine's host: how the transport passes each through its concealer
    /// one last time before they leave.
    pub(crate) fn map_text(mut self, mut f: impl FnMut(Shown) -> Shown) -> Refusal {
        let fields = &mut *self.0;
        fields.reason = f(std::mem::take(&mut fields.reason));
        fields.remedy = f(std::mem::take(&mut fields.remedy));
        fields.request_id = fields.request_id.take().map(&mut f);
        fields.engine = fields.engine.take().map(&mut f);
        self
    }
}

/// `cause: reason (remedy: remedy)`, on one line.
impl fmt::Display for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            f,
            "{}: {} (remedy: {})",
            self.0.cause, self.0.reason, self.0.remedy
        )
    }
}

/// The fields, as a struct named `Refusal`: the box is not shown.
impl fmt::Debug for Refusal {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        let Fields {
            kind: _,
            cause,
            reason,
            remedy,
            source,
            status,
            retry_after,
            request_id,
            engine,
            idempotency_key,
            attempts,
        } = &*self.0;
        f.debug_struct("Refusal")
            .field("cause", cause)
            .field("reason", reason)
            .field("remedy", remedy)
            .field("source", source)
            .field("status", status)
            .field("retry_after", retry_after)
            .field("request_id", request_id)
            .field("engine", engine)
            .field("idempotency_key", idempotency_key)
            .field("attempts", attempts)
            .finish()
    }
}

impl std::error::Error for Refusal {}

const BEHAVIOUR_V1: &str = "v1";

/// The serialized shape of a refusal: `{"behaviour": "v1", "refusal": {…}}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct Report {
    behaviour: String,
    refusal: Refusal,
}

impl Report {
    /// The version of the report shape: `"v1"`.
    pub fn behaviour(&self) -> &str {
        &self.behaviour
    }

    /// The refusal it reports.
    pub fn refusal(&self) -> &Refusal {
        &self.refusal
    }

    /// The report as one line of JSON.
    pub fn to_json(&self) -> String {
        // Serializing plain strings and integers to a String cannot fail;
        // the fallback keeps this total anyway.
        serde_json::to_string(self).unwrap_or_else(|_| String::from("{}"))
    }
}

/// `retryAfter` as a number of seconds: a whole number when the delay is
/// whole seconds, else a fraction.
mod seconds {
    use std::time::Duration;

    use serde::{Deserialize, Deserializer, Serializer};

    /// `delay` rounded to the millisecond: the report's precision, with no
    /// float noise left below it (`120.0`, never `119.999847282`).
    pub(super) fn to_millisecond(delay: Duration) -> Duration {
        let millis = (delay.subsec_nanos() + 500_000) / 1_000_000;
        if millis == 1000 {
            Duration::from_secs(delay.as_secs().saturating_add(1))
        } else {
            Duration::new(delay.as_secs(), millis * 1_000_000)
        }
    }

    pub(super) fn serialize<S: Serializer>(
        delay: &Option<Duration>,
        serializer: S,
    ) -> Result<S::Ok, S::Error> {
        match delay.map(to_millisecond) {
            Some(delay) if delay.subsec_nanos() == 0 => serializer.serialize_u64(delay.as_secs()),
            // Whole milliseconds over a thousand: the closest float, which
            // prints as the decimal itself (`0.25`, `1.5`).
            Some(delay) => {
                let millis = delay.as_millis();
                serializer.serialize_f64(millis as f64 / 1000.0)
            }
            None => serializer.serialize_none(),
        }
    }

    pub(super) fn deserialize<'de, D: Deserializer<'de>>(
        deserializer: D,
    ) -> Result<Option<Duration>, D::Error> {
        /// Whole seconds as the integer they were written as (a wait of
        /// `u64::MAX` seconds round-trips), a fraction as a float.
        #[derive(Deserialize)]
        #[serde(untagged)]
        enum Seconds {
            Whole(u64),
            Fraction(f64),
        }
        match Option::<Seconds>::deserialize(deserializer)? {
            None => Ok(None),
            Some(Seconds::Whole(seconds)) => Ok(Some(Duration::from_secs(seconds))),
            Some(Seconds::Fraction(seconds)) => Duration::try_from_secs_f64(seconds)
                .map(|delay| Some(to_millisecond(delay)))
                .map_err(|_| {
                    serde::de::Error::custom("retryAfter must be a non-negative number of seconds")
                }),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_refusal_is_one_pointer_wide_and_prints_as_its_fields() {
        assert_eq!(std::mem::size_of::<Refusal>(), std::mem::size_of::<usize>());
        let refusal = Refusal::new(Cause::NoEngine, "why", "what to do", None).with_status(401);
        let shown = format!("{refusal:?}");
        assert!(
            shown.starts_with(r#"Refusal { cause: NoEngine, reason: "why", remedy: "what to do", source: None, status: Some(401),"#),
            "{shown}"
        );
    }
}
