//! Without the cargo feature `redis` a transport has no fleet: nothing to
//! set, and the limits ask no one (`shared_hold.rs` is the feature's).

use std::fmt;
use std::sync::Arc;
use std::time::Duration;

use super::BuildError;
use crate::conceal::Concealer;
use crate::limits::fleet::Fleet;

/// No fleet's settings.
#[derive(Default)]
pub(super) struct Settings {}

impl Settings {
    /// A builder's `Debug` says nothing of a fleet it cannot have.
    pub(super) fn show(&self, _: &mut fmt::DebugStruct<'_, '_>, _: &Concealer) {}

    /// No fleet.
    pub(super) fn open(
        self,
        _: &str,
        _: &str,
        _: Duration,
        _: &Concealer,
    ) -> Result<Option<Arc<dyn Fleet>>, BuildError> {
        Ok(None)
    }
}
