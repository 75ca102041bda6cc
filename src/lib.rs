#![doc = include_str!("../README.md")]
#![forbid(unsafe_code)]
// docs.rs (`--cfg docsrs`, on nightly) marks each item that needs a feature.
#![cfg_attr(docsrs, feature(doc_cfg))]

mod answer;
#[cfg(feature = "blocking")]
pub mod blocking;
mod clock;
mod conceal;
mod config;
pub mod design;
#[cfg(fuzzing)]
#[doc(hidden)]
pub mod fuzzing;
mod hint;
mod limits;
mod lock;
mod meter;
mod refusal;
mod request;
mod retry;
mod stream;
mod text;
mod transport;
mod usage;

pub use answer::Answer;
pub use bytes::Bytes;
pub use conceal::{Concealer, REDACTED};
pub use config::env::Env;
pub use config::naming::{Naming, NamingError};
pub use meter::MeterSnapshot;
pub use refusal::{Cause, Refusal, Report, UnknownCause};
pub use request::Request;
pub use retry::RetryPolicy;
pub use secrecy::SecretString;
pub use stream::{AnswerStream, Delta, Ending, Event, Part};
pub use transport::{
    BuildError, Call, DEFAULT_DEADLINE, DEFAULT_MAX_ANSWER_BYTES, HttpTransport,
    HttpTransportBuilder, Transport, USER_AGENT,
};
pub use usage::Usage;

/// Every public type can cross threads and be held across an `.await`, and
/// none hides from `{:?}`: checked when the crate compiles.
#[allow(dead_code)]
fn _assert_impls() {
    fn public<T: Send + Sync + Unpin + std::fmt::Debug>() {}
    public::<HttpTransport>();
    public::<HttpTransportBuilder>();
    public::<Call>();
    public::<Request>();
    public::<AnswerStream>();
    public::<Event>();
    public::<Ending>();
    public::<Delta>();
    public::<Part>();
    public::<Answer>();
    public::<Refusal>();
    public::<Cause>();
    public::<UnknownCause>();
    public::<Report>();
    public::<Concealer>();
    public::<Env>();
    public::<Naming>();
    public::<NamingError>();
    public::<BuildError>();
    public::<RetryPolicy>();
    public::<MeterSnapshot>();
    public::<Usage>();
    #[cfg(feature = "blocking")]
    {
        public::<blocking::HttpTransport>();
        public::<blocking::HttpTransportBuilder>();
        public::<blocking::Call>();
        public::<blocking::AnswerStream>();
    }
    fn object_safe(_: &dyn Transport) {}
}
