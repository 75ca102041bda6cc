//! Wiremock engines on loopback, in the shapes most tests need: every POST
//! answered one way, with or without a count of the requests it expects,
//! and a first answer for the first few requests then another for the rest.
//! A test whose engine answers in its own way mounts its own mocks with
//! [`engine_with`]; every expectation a mock states (`.expect(n)`) is
//! checked when its server drops, so a test that builds one states how
//! many bills its story makes.

use wiremock::matchers::{any, method};
use wiremock::{Mock, MockBuilder, MockServer, Respond};

/// Every POST: the request a send makes.
pub fn posts() -> MockBuilder {
    Mock::given(method("POST"))
}

/// Every request, whatever its method or path: for a test that reads what
/// arrived rather than matching it up front, so a wrong request shows up as
/// a wrong value, not as wiremock's `404`.
pub fn any_request() -> MockBuilder {
    Mock::given(any())
}

/// An engine with `mocks` mounted, in order.
pub async fn engine_with(mocks: impl IntoIterator<Item = Mock>) -> MockServer {
    let server = MockServer::start().await;
    for mock in mocks {
        mock.mount(&server).await;
    }
    server
}

/// An engine that answers every POST with `response` (a template, or a
/// closure of the request), however many come.
pub async fn engine(response: impl Respond + 'static) -> MockServer {
    engine_with([posts().respond_with(response)]).await
}

/// An engine that answers every POST with `response` and expects exactly
/// `requests` of them.
pub async fn engine_expecting(requests: u64, response: impl Respond + 'static) -> MockServer {
    engine_with([posts().respond_with(response).expect(requests)]).await
}

/// The mocks of an engine that answers `first` to the first `times` POSTs
/// and `then` to every later one; a test that counts adds `.expect(n)` to
/// each.
pub fn first_then(
    first: impl Respond + 'static,
    times: u64,
    then: impl Respond + 'static,
) -> [Mock; 2] {
    [
        posts()
            .respond_with(first)
            .up_to_n_times(times)
            .with_priority(1),
        posts().respond_with(then).with_priority(2),
    ]
}
