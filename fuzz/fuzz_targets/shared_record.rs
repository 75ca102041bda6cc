//! Arbitrary values under a shared hold's Redis key (anyone who may write
//! the key can put anything there): the reader must not panic; a value it
//! takes has a `why` of printable ASCII of at most 160 bytes and a quoted
//! field of printable ASCII naming one of the rate-limit fields read, and
//! writing its record back stores exactly what was read.

#![no_main]

use libfuzzer_sys::fuzz_target;
use meterwire::fuzzing::shared_record;

fuzz_target!(|data: &[u8]| {
    if let Some(((why, _asked, _at, field), encoded)) = shared_record(data) {
        assert!(!why.is_empty() && why.len() <= 160, "{why:?}");
        assert!(why.bytes().all(|b| (0x20..0x7f).contains(&b)), "{why:?}");
        assert!(encoded.len() < 256, "{encoded:?}");
        if let Some(field) = field {
            assert!(field.len() <= 200, "{field:?}");
            assert!(field.bytes().all(|b| (0x20..0x7f).contains(&b)), "{field:?}");
            let name = field.split(": ").next().unwrap_or_default();
            let known = ["ratelimit", "x-ratelimit", "anthropic-ratelimit"];
            assert!(known.iter().any(|k| name.starts_with(k)), "{field:?}");
            assert!(name.bytes().all(|b| b.is_ascii_lowercase() || b == b'-'), "{field:?}");
        }
        // A number written with leading zeros reads back the same, but is
        // stored without them: compare the record, not the bytes.
        let again = shared_record(encoded.as_bytes()).expect("its own value reads back");
        assert_eq!(again.1, encoded);
    }
});
