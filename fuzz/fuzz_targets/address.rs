//! Arbitrary passwords in an address or a proxy's userinfo: however the
//! password ends the host early (`/`, `?`, `#`, `\`, `@`, `:`, `//`, a line
//! break), no way the crate shows the address holds any of it, and none
//! panics.
//!
//! The first byte picks how the password is wrapped; the rest, split at its
//! first NUL, is what comes before and after a word that stands for the
//! password's secret part: wherever the fuzzer puts the characters that cut
//! a URL short, that word must not be shown. (Checking for the whole
//! password instead finds passwords the fuzzer assembles from what is shown
//! anyway: `//`, `[redacted]`, the host.)

#![no_main]

use libfuzzer_sys::fuzz_target;
use meterwire::fuzzing::shown_address;

/// The password's secret part: in none of the wrappings below.
const SECRET: &str = "Zq7PassWord";

/// Each begins with a user, so a password cannot become the scheme, and
/// ends with the host after an `@`.
const WRAPS: [(&str, &str); 6] = [
    ("https://user:", "@engine.example/v1"),
    ("user:", "@engine.example/v1"),
    ("http://a@b:", "@127.0.0.1:3128"),
    ("socks5://u:", "@proxy.example:1080/x?y#z"),
    ("https://user:", "@engine.example:99999/v1?k=v"),
    ("HTTPS://user:", "@[::1]/v1#f"),
];

fuzz_target!(|data: &[u8]| {
    let Some((&pick, rest)) = data.split_first() else {
        return;
    };
    let Ok(rest) = std::str::from_utf8(rest) else {
        return;
    };
    let (lead, tail) = rest.split_once('\0').unwrap_or((rest, ""));
    let (before, after) = WRAPS[usize::from(pick) % WRAPS.len()];
    let text = format!("{before}{lead}{SECRET}{tail}{after}");
    for shown in shown_address(&text) {
        assert!(!shown.contains(SECRET), "{text:?} is shown as {shown:?}");
    }
});
