//! Redaction on any text: never a panic; idempotent (`redact(redact(x)) == redact(x)`, so
//! nothing it recognises survives); the cut helpers keep at most what they are asked for and
//! never hold a secret.
#![no_main]

use compaction_redact::{contains_secret, redact, redacted_head, redacted_tail};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|input: (u16, &str)| {
    let (n, text) = input;
    let once = redact(text);
    let twice = redact(&once);
    assert_eq!(twice, once, "redaction is not idempotent");
    assert!(!contains_secret(&once));
    let n = usize::from(n % 512);
    for cut in [redacted_head(text, n), redacted_tail(text, n)] {
        assert!(cut.chars().count() <= n);
        assert!(!contains_secret(&cut), "a cut holds a secret");
    }
});
