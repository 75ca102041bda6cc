//! The cargo features' tests, as one binary built only with both
//! (`cargo test --all-features`): `blocking`, the transport for a program
//! with no runtime, and `redis`, one hold for a fleet against a real
//! `redis-server` that each test starts on loopback. A binary
//! of their own, so that the plain `cargo test` needs neither and the big
//! `tests/it` is not built twice.

#[path = "../it/support/mod.rs"]
mod support;

mod blocking;
mod budget;
mod fleet;
mod shared_hold_keys;
