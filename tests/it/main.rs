//! The integration tests of `meterwire`, as one test binary: each module
//! proves one behaviour of the README through the public API, against
//! engines on loopback. One binary rather than one per behaviour, because
//! every test binary costs a link in CI.
//!
//! Three behaviours keep binaries of their own, because they change the
//! whole process: `tests/memory.rs` installs a counting global allocator,
//! `tests/no_ambient_proxy.rs` sets process-wide proxy variables, and
//! `tests/trace.rs` installs a global `tracing` subscriber. The cargo
//! features' tests are `tests/features/main.rs`, built only with them.

mod support;

mod addresses_that_do_not_parse;
mod chains;
mod conceal_at_the_door;
mod concealer_across_lines;
mod concealer_catches_every_form;
mod concealer_every_form_everywhere;
mod concealer_properties;
mod every_option_through_the_trait;
mod every_row_of_the_wire_table;
mod hostile_engines;
mod limits;
mod no_redirect_is_followed;
mod reads_are_bounded;
mod real_answers;
mod refusals_carry_evidence;
mod refused_before_anything_is_sent;
mod remedies_point_where_the_wire_does;
mod retries;
mod streams;
mod streams_joined;
mod streams_joined_settle;
mod streams_joined_token_file;
mod streams_large_events;
mod the_api;
mod the_meter;
mod the_probe;
mod the_token_is_printed_nowhere;
mod tls_is_verified;
mod token_files;
mod what_goes_on_the_wire;
mod what_the_engine_billed;
