//! Arbitrary `WWW-Authenticate` values: the `Bearer` challenge reader must
//! not panic, and what it returns must be what it says.
//!
//! The input is split at `\n` into up to eight header values.

#![no_main]

use libfuzzer_sys::fuzz_target;
use meterwire::fuzzing::bearer_challenge;

fuzz_target!(|data: &[u8]| {
    let values: Vec<&[u8]> = data.split(|&b| b == b'\n').take(8).collect();
    if let Some((error, description, scope)) = bearer_challenge(&values) {
        assert!(
            error.is_some() || description.is_some() || scope.is_some(),
            "a challenge carries at least one parameter"
        );
        for param in [error, description, scope].into_iter().flatten() {
            assert!(!param.trim().is_empty(), "a blank parameter is none");
        }
    }
});
