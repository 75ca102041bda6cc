//! The shared hold's settings (cargo feature `redis`): the builder methods
//! that name it, and how they become the [`Fleet`] the limits ask, a
//! [`SharedHold`] in Redis. Without the feature, `no_shared_hold.rs` stands
//! in: nothing to set, and no fleet.

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use secrecy::{ExposeSecret as _, SecretString};

use super::{BuildError, HttpTransportBuilder};
use crate::conceal::{Concealer, Shown, shown};
use crate::limits::fleet::Fleet;
use crate::limits::redis::{DEFAULT_WAIT, SharedHold};

/// A fleet of transports built with a short scout interval, against a
/// real Redis.
#[cfg(test)]
#[path = "scouts.rs"]
mod scouts;

/// The fleet's hold as the builder was told it: the URL (a secret, for its
/// password), the key and the wait.
#[derive(Default)]
pub(super) struct Settings {
    url: Option<SecretString>,
    key: Option<String>,
    wait: Option<Duration>,
}

impl HttpTransportBuilder {
    /// How often a window an answer's fields closed lets a send through to
    /// check them, in place of a minute: for the crate's tests, which
    /// cannot wait minutes.
    #[cfg(test)]
    pub(crate) fn scout_every(mut self, every: Duration) -> Self {
        self.scout_every = every;
        self
    }

    /// Keeps the engine's hold in the Redis at `url` (`redis://host:6379/`,
    /// `rediss://` for TLS, a password allowed) as well as in the process,
    /// so that a `429` seen by one predictor process holds every process
    /// that shares the account (cargo feature `redis`; Redis 7 or later).
    ///
    /// Before each attempt the transport reads the fleet's hold, within a
    /// bounded [`shared_hold_wait`](Self::shared_hold_wait) (50 ms unless
    /// set): one round trip when nothing is held. A hold this process
    /// starts is written back, and its end in Redis only ever grows. A
    /// Redis that is down, slow or answers garbage is logged once at `WARN`
    /// and skipped: the shared hold never blocks a send past its wait and
    /// never fails one. The key is `meterwire:hold:<scope>:<engine host>`
    /// unless [`shared_hold_key`](Self::shared_hold_key) names another;
    /// nothing of the token is in it. With
    /// [`respect_limits(false)`](Self::respect_limits) it is not read.
    ///
    /// The budget (see [`respect_limits`](Self::respect_limits)) is kept
    /// there too, under `meterwire:budget:<scope>:<engine host>`, in the
    /// same round trip: each attempt takes one from it, and each answer's
    /// figure lowers it, so the processes together start no more sends in a
    /// window than the engine said were left. A Redis answer that comes
    /// after the wait is used by the next send. When a window the fleet
    /// waited on ends, each process resumes after its own draw of up to
    /// 100 ms (within its deadline and `max_wait`), and the first send
    /// into the new window goes alone for up to 50 ms, until its answer
    /// says what the window holds. A window an answer (not a refusal) said
    /// was spent lets one send of the fleet through a minute, whose answer
    /// replaces what the fields said for every process.
    pub fn shared_hold(mut self, url: impl Into<String>) -> Self {
        self.shared_hold.url = Some(SecretString::from(url.into()));
        self
    }

    /// The Redis key of the [`shared_hold`](Self::shared_hold), in place of
    /// `meterwire:hold:<scope>:<engine host>`: processes that give the same
    /// key share one hold (say, one per account when several accounts use
    /// one engine). 1 to 256 bytes, no control characters. Redis keeps the
    /// key in the clear, so [`build`](Self::build) fails with
    /// [`BuildError::SharedHold`] for a key in which the concealer finds a
    /// secret (the token in any form, the Redis password), and, when no key
    /// is named, for a scope that holds one.
    pub fn shared_hold_key(mut self, key: impl Into<String>) -> Self {
        self.shared_hold.key = Some(key.into());
        self
    }

    /// The longest a send waits on the [`shared_hold`](Self::shared_hold)'s
    /// Redis, connecting included: 50 ms when not set. A Redis that has not
    /// answered by then is skipped for this send.
    pub fn shared_hold_wait(mut self, wait: Duration) -> Self {
        self.shared_hold.wait = Some(wait);
        self
    }
}

impl Settings {
    /// Adds the shared hold to a builder's `Debug`: whether one was given,
    /// and its key (never the URL, which can hold a password).
    pub(super) fn show(&self, debug: &mut fmt::DebugStruct<'_, '_>, concealer: &Concealer) {
        debug.field(
            "shared_hold",
            &self.url.as_ref().map(|_| {
                self.key.as_deref().map_or_else(
                    || Shown::from("the default key"),
                    |key| concealer.show_all(key),
                )
            }),
        );
    }

    /// The fleet these settings name, for the transport of `scope` sending
    /// to `host`: none when no URL was given. Redis's password is a secret
    /// like the token: `concealer` learns it, so it is concealed wherever
    /// the engine or a log could show it, and it is kept out of the key.
    pub(super) fn open(
        self,
        scope: &str,
        host: &str,
        scout_every: Duration,
        concealer: &Concealer,
    ) -> Result<Option<Arc<dyn Fleet>>, BuildError> {
        let Some(url) = self.url else {
            return Ok(None);
        };
        if let Some(password) = url::Url::parse(url.expose_secret())
            .ok()
            .and_then(|url| url.password().map(str::to_owned))
        {
            let decoded = percent_encoding::percent_decode_str(&password).decode_utf8_lossy();
            concealer.learn(&decoded);
        }
        let key = shared_hold_key(self.key, scope, host, concealer)?;
        let wait = self.wait.unwrap_or(DEFAULT_WAIT);
        let shared = SharedHold::new(
            url.expose_secret(),
            key,
            wait,
            scout_every,
            concealer.clone(),
        )
        .map_err(|error| {
            BuildError::SharedHold(concealer.show_all(&error.to_string()).into_string())
        })?;
        Ok(Some(Arc::new(shared)))
    }
}

/// The shared hold's key: the one given, or the default made from the scope
/// and the engine's host. Redis stores the key in the clear and every
/// command names it (`PTTL`, `GETRANGE`, `EVAL`), where no concealer
/// reaches: a key the concealer would change holds a secret, and is refused
/// here rather than written. The error names the setting, never its value.
fn shared_hold_key(
    given: Option<String>,
    scope: &str,
    host: &str,
    concealer: &Concealer,
) -> Result<String, BuildError> {
    let holds_secret = |text: &str| concealer.finds(text);
    let refused = |what: &'static str, fix: &'static str| {
        BuildError::SharedHold(
            shown!(
                "{} holds a secret (the token, the Redis password or a credential of the \
                 environment), and Redis would keep it in the clear in the shared hold's key; {}",
                what,
                fix
            )
            .into_string(),
        )
    };
    match given {
        Some(key) if holds_secret(&key) => Err(refused(
            "the shared hold's key",
            "give HttpTransportBuilder::shared_hold_key a name for the account, not a credential",
        )),
        Some(key) => Ok(key),
        None if holds_secret(scope) => Err(refused(
            "the scope, which the shared hold's default key is made from,",
            "give a scope without the secret, or name the key with HttpTransportBuilder::shared_hold_key",
        )),
        None => {
            let key = SharedHold::default_key(scope, host);
            if holds_secret(&key) {
                return Err(refused(
                    "the shared hold's default key, made from the scope and the engine's host,",
                    "name the key with HttpTransportBuilder::shared_hold_key",
                ));
            }
            Ok(key)
        }
    }
}
