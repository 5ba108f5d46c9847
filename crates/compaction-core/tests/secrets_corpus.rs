//! The redactor against the issue 22 corpora (`test_support::secrets`): every credential shape
//! is gone from what `redact` returns, as written, inside JSON strings escaped one to three
//! times, right after each JSON escape, glued to CJK text, and across every cut that
//! `redacted_head` and `redacted_tail` make around it; every look-alike passes unchanged.

use compaction_core::redact::{REDACTED, contains_secret, redact, redacted_head, redacted_tail};
use test_support::secrets::{Planted, benign, credentials};

thread_local! {
    static FAILURES: std::cell::RefCell<Vec<String>> = const { std::cell::RefCell::new(Vec::new()) };
}

/// Records a failure when any 8-character run of a secret part is in `text` (the family and
/// the place are recorded, never the secret).
fn assert_clean(what: &str, text: &str, planted: &Planted) {
    for part in &planted.secrets {
        let chars: Vec<char> = part.chars().collect();
        for w in chars.windows(8.min(chars.len())) {
            let run: String = w.iter().collect();
            if text.contains(&run) {
                FAILURES.with(|f| f.borrow_mut().push(format!("{}: {what}", planted.family)));
                return;
            }
        }
    }
}

/// Panics with every recorded failure.
fn report() {
    let failures = FAILURES.with(|f| std::mem::take(&mut *f.borrow_mut()));
    let mut unique = failures.clone();
    unique.dedup();
    assert!(
        unique.is_empty(),
        "{} failures:\n{}",
        failures.len(),
        unique.join("\n")
    );
}

/// `text` as the inside of a JSON string, escaped `depth` times.
fn escaped(text: &str, depth: usize) -> String {
    let mut s = text.to_owned();
    for _ in 0..depth {
        let e = serde_json::to_string(&s).unwrap();
        s = e[1..e.len() - 1].to_owned();
    }
    s
}

#[test]
fn the_corpora_are_large_enough() {
    // That the maintained ruleset is in force is a unit test of `redact`.
    assert!(credentials().len() >= 150, "{}", credentials().len());
    assert!(benign().len() >= 40, "{}", benign().len());
}

#[test]
fn every_credential_is_redacted_as_written_and_escaped() {
    for planted in credentials() {
        let out = redact(&planted.text);
        assert_clean("as written", &out, &planted);
        if !out.contains(REDACTED) || redact(&out) != out {
            FAILURES.with(|f| {
                f.borrow_mut().push(format!(
                    "{}: not redacted or not idempotent",
                    planted.family
                ))
            });
        }
        for depth in 1..=3 {
            let json = format!(r#"{{"content": "{}"}}"#, escaped(&planted.text, depth));
            let out = redact(&json);
            assert_clean(&format!("escaped {depth}x"), &out, &planted);
            if depth == 1 && serde_json::from_str::<serde_json::Value>(&out).is_err() {
                FAILURES.with(|f| {
                    f.borrow_mut()
                        .push(format!("{}: redaction broke the JSON", planted.family))
                });
            }
        }
        for esc in [
            r"\n", r"\t", r"\r", r"\b", r"\f", r#"\""#, r"\\", r"\/", r"\u00a0", r"\u3000",
        ] {
            let json = format!(
                r#"{{"command": "x{esc}{}{esc}y"}}"#,
                escaped(&planted.text, 1)
            );
            assert_clean(&format!("after {esc}"), &redact(&json), &planted);
        }
        for glue in ["使用", "密钥：", "（", "。"] {
            let text = format!("{glue}{}{glue}", planted.text);
            assert_clean(&format!("glued to {glue}"), &redact(&text), &planted);
        }
    }
    report();
}

#[test]
fn no_cut_shows_part_of_a_credential() {
    for planted in credentials() {
        let text = format!(
            "{}\n{}\n{}",
            "lorem ipsum ".repeat(10),
            planted.text,
            " dolor sit".repeat(10)
        );
        let start = 120;
        let end = start + planted.text.chars().count() + 2;
        for n in (start.saturating_sub(5)..end + 5).step_by(3) {
            let head = redacted_head(&text, n);
            assert_clean(&format!("head cut at {n}"), &head, &planted);
            let tail = redacted_tail(&text, text.chars().count() - n);
            assert_clean(&format!("tail cut at {n}"), &tail, &planted);
        }
    }
    report();
}

#[test]
fn a_key_block_split_across_two_texts_is_redacted_in_both() {
    for planted in credentials()
        .into_iter()
        .filter(|p| p.family.starts_with("pem") || p.family.starts_with("pgp"))
    {
        let lines: Vec<&str> = planted.text.lines().collect();
        let mid = lines.len() / 2;
        let (first, second) = (lines[..mid].join("\n"), lines[mid..].join("\n"));
        let both = format!("{}\n{}", redact(&first), redact(&second));
        assert_clean("split block", &both, &planted);
    }
    report();
}

#[test]
fn every_look_alike_survives_unchanged() {
    let mut changed = Vec::new();
    for text in benign() {
        if redact(&text) != text || contains_secret(&text) {
            changed.push(format!("{text:?} -> {:?}", redact(&text)));
        }
        let json = format!(r#"{{"content": "{}"}}"#, escaped(&text, 1));
        if redact(&json) != json {
            changed.push(format!("in JSON: {json:?} -> {:?}", redact(&json)));
        }
    }
    assert!(
        changed.is_empty(),
        "look-alikes changed:\n{}",
        changed.join("\n")
    );
}
