use super::*;
use proptest::prelude::*;

fn check(input: &str, expected: &str) {
    assert_eq!(redact(input), expected, "input: {input}");
    // Idempotent.
    assert_eq!(redact(expected), expected);
}

fn unchanged(input: &str) {
    assert!(
        matches!(redact(input), Cow::Borrowed(_)),
        "mangled: {input} -> {}",
        redact(input)
    );
}

#[test]
fn provider_keys() {
    check(
        "key sk-proj-AbCdEf0123456789AbCdEf0123 here",
        "key [REDACTED] here",
    );
    check(
        "export ANTHROPIC=sk-ant-api03-abcdefghijklmnopqrstuvwxyz012345",
        "export ANTHROPIC=[REDACTED]",
    );
    check(
        "g=AIzaSyA1234567890abcdefghijklmnopqrstuv!",
        "g=[REDACTED]!",
    );
    // Found by the property test: a vendor prefix with a low-entropy body.
    check("t xoxb-aaaaaa0AAAaaa0aaaAAaAAAA t", "t [REDACTED] t");
    check("t sk-aaaaaaaaaaaaAAAAaaaaaaaaaaaaaaaa t", "t [REDACTED] t");
    check(
        "t github_pat_aaaaaaaaaaaaaaaaaaaa0aaaaaaaaa t",
        "t [REDACTED] t",
    );
    // ... but not a word after it.
    check(
        "t sk-learn-and-scikit-image t",
        "t sk-learn-and-scikit-image t",
    );
    // Found by the fuzzer: the first redaction shortens the text and brings `Value:` within
    // the window of the credential's name; one call redacts both.
    let far = format!(
        "name:pass={} xx(Value:xxxt",
        "x".repeat(16) + "-" + &"x".repeat(330)
    );
    let once = redact(&far).into_owned();
    assert_eq!(once, "name:pass=[REDACTED] xx(Value:[REDACTED]");
    assert_eq!(redact(&once), once);
    // Found by the property test: `-u:(` is no `curl -u user:pass`.
    check("-u:(\nx", "-u:(\nx");
    check("x -u0:(0 y", "x -u0:(0 y");
    check("curl -u0:pw0 y", "curl -u0:[REDACTED] y");
    check("id AKIA2OGYBAH6TZJVMXQE.", "id [REDACTED].");
    // Digit-heavy ids (too few letters for the upper-key shape) by their prefix.
    check("id AKIA715581H9H4283371.", "id [REDACTED].");
    check("\\nASIA000000A0A0000000", "\\n[REDACTED]");
    check(
        "ghp_abcdefghijklmnopqrstuvwxyz0123456789 ok",
        "[REDACTED] ok",
    );
    check(
        "github_pat_11ABCDEFG0123456789_abcdefghijklmnop",
        "[REDACTED]",
    );
    check(
        "slack xoxb-2837465019-4829301746523-Ab3dEf9hIj2kLm8nOp4qRs7t end",
        "slack [REDACTED] end",
    );
}

/// A fuzz finding: after a scheme the rules do not name, the placeholder of an earlier pass is
/// no credential (`contains_secret` of redacted text was true, so a second pass and the
/// checker disagreed).
#[test]
fn an_unnamed_scheme_before_a_placeholder_is_clean() {
    let text = "Authorization: Bzarer abcdttttttttefghijkl0123fi";
    let once = redact(text);
    assert_eq!(once, "Authorization: Bzarer [REDACTED]");
    assert_eq!(redact(&once), once);
    assert!(!contains_secret(&once));
    assert!(!contains_secret("Authorization: Negotiate [REDACTED]"));
    for n in 0..64 {
        for cut in [redacted_head(text, n), redacted_tail(text, n)] {
            assert!(cut.chars().count() <= n, "{n}: {cut}");
            assert!(!contains_secret(&cut), "{n}: {cut}");
        }
    }
}

#[test]
fn authorization_values() {
    check(
        "Authorization: Bearer abc.def-ghi_jkl012",
        "Authorization: Bearer [REDACTED]",
    );
    check(
        "curl -H 'Authorization: Basic dXNlcjpwYXNz'",
        "curl -H 'Authorization: Basic [REDACTED]'",
    );
    check(
        "use bearer AbCdEfGhIjKlMnOp1234 for it",
        "use bearer [REDACTED] for it",
    );
    check("Basic dXNlcjpwYXNzd29yZA== x", "Basic [REDACTED] x");
    // Prose is not credentials.
    unchanged("Basic understanding of the bearer of news.");
}

#[test]
fn jwt_pem_urls_and_assignments() {
    check(
        "t=eyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.dozjgNryP4J3jVmNHl0w5N_XgL0n3I9PlFUP0THsR8U;",
        "t=[REDACTED];",
    );
    check(
        "a\n-----BEGIN RSA PRIVATE KEY-----\nMIIEow\nAbC==\n-----END RSA PRIVATE KEY-----\nb",
        "a\n[REDACTED]\nb",
    );
    check(
        "-----BEGIN OPENSSH PRIVATE KEY-----\nb3BlbnNzaC1rZXk\n",
        "[REDACTED]",
    );
    check(
        "postgres://admin:hunter2@db.local:5432/app",
        "postgres://admin:[REDACTED]@db.local:5432/app",
    );
    check("redis://:s3cr3t@cache", "redis://:[REDACTED]@cache");
    check(
        "Server=x;User Id=sa;Password=Pa55word!;Database=d",
        "Server=x;User Id=sa;Password=[REDACTED];Database=d",
    );
    check(
        r#"{"api_key": "abcd1234efgh"}"#,
        r#"{"api_key": "[REDACTED]"}"#,
    );
    check(
        "GITHUB_TOKEN=whatever123 make",
        "GITHUB_TOKEN=[REDACTED] make",
    );
    check("secret: hunter22", "secret: [REDACTED]");
    // Not secrets.
    unchanged("max_tokens=4096, tokens_before: 120, password: true, token=$TOKEN");
    unchanged(r#"{"tokens": [1, 2, 3], "key": null}"#);
}

#[test]
fn ordinary_text_is_untouched() {
    unchanged("commit 3f786850e387550fdab836ed7e6dc881de23001b\nAuthor: A <a@b.c>");
    unchanged("id 123e4567-e89b-12d3-a456-426614174000 ok");
    unchanged("see https://example.com/path?q=1 and ssh://host/x");
    unchanged("![img](data:image/png;base64,iVBORw0KGgoAAAANSUhEUgAKIAIOSFODNN7EXAMPLEAAAA==)");
    unchanged("plain text without any trigger at all");
}

#[test]
fn data_urls_are_kept_around_redactions() {
    check(
        "a sk-proj-Zx81Qm3kLp09TrWv56Yb data:image/png;base64,AKIAIOSFODNN7EXAMPLE== b password=hunter22",
        "a [REDACTED] data:image/png;base64,AKIAIOSFODNN7EXAMPLE== b password=[REDACTED]",
    );
}

#[test]
fn a_cut_never_holds_a_secret_its_context_did_not_show() {
    // Found by the `redact` fuzz target: cutting away the start of a quoted value made the
    // rest read as a fresh assignment with a secret in it.
    let text = "{\"api_key\": \"abc\\c\\\"defSECRETTAI\"defSECRETTAIody\": \"{\\\"api_key\\\": \\\"abc\\\\\\\"def\\\"}\"}";
    for n in 0..=text.chars().count() + 1 {
        for cut in [redacted_head(text, n), redacted_tail(text, n)] {
            assert!(cut.chars().count() <= n, "cut longer than {n}");
            assert!(!contains_secret(&cut), "a cut of {n} holds a secret");
        }
    }
}

#[test]
fn keys_after_json_escapes() {
    // Issue 14, item 1: the letter of an escape is not part of the key's word.
    check(
        r##"{"file_path": "/app/.env.keys", "content": "# keys\nsk-proj-NEWLINEKEY0123456789abcdefABCDEF0123\n"}"##,
        r##"{"file_path": "/app/.env.keys", "content": "# keys\n[REDACTED]\n"}"##,
    );
    check(
        r#"{"command": "printf 'id\tAKIAJSONTABESCAPE234\n'"}"#,
        r#"{"command": "printf 'id\t[REDACTED]\n'"}"#,
    );
    check(
        r"a\r\nghp_abcdefghijklmnopqrstuvwxyz0123456789",
        r"a\r\n[REDACTED]",
    );
    check(
        r"x\u00a0xoxb-2837465019-4829301746523-Ab3dEf9hIj2kLm8nOp4qRs7t\bBearer abcdefghijkl0123",
        r"x\u00a0[REDACTED]\bBearer [REDACTED]",
    );
    check(
        r#"-H \"Accept: x\"\nAuthorization: token abcdef0123456789"#,
        r#"-H \"Accept: x\"\nAuthorization: token [REDACTED]"#,
    );
    check(
        r"\teyJhbGciOiJIUzI1NiJ9.eyJzdWIiOiIxMjM0NTY3ODkwIn0.sig",
        r"\t[REDACTED]",
    );
}

#[test]
fn assignment_values_run_to_the_end_of_their_quoting_or_whitespace() {
    // Issue 14, item 3.
    check("password=Tr0ub4dor&3xyzZ next", "password=[REDACTED] next");
    check("db_password=s3cr3t;P4ssw0rdTail", "db_password=[REDACTED]");
    check(
        r#"{"api_key": "abc\"defSECRETTAIL99"}"#,
        r#"{"api_key": "[REDACTED]"}"#,
    );
    check("password: Tr0ub4dor&3xyz", "password: [REDACTED]");
    // JSON inside a JSON string: the inner escaped quote is part of the value.
    check(
        r#"{"body": "{\"api_key\": \"abc\\\"defSECRETTAIL99\", \"n\": 1}"}"#,
        r#"{"body": "{\"api_key\": \"[REDACTED]\", \"n\": 1}"}"#,
    );
    // Escaped whitespace and quotes end an unquoted value inside a JSON string.
    check(
        r#"{"command": "export API_TOKEN=abcdef123\nmake"}"#,
        r#"{"command": "export API_TOKEN=[REDACTED]\nmake"}"#,
    );
    check("secret='it is a secret' rest", "secret='[REDACTED]' rest");
    // The next `name=` of a connection string or query ends the value.
    check(
        "https://h/x?token=abcdef12&page=2 and user=a;password=hunter22;host=db",
        "https://h/x?token=[REDACTED]&page=2 and user=a;password=[REDACTED];host=db",
    );
    check(
        "token=abcdef12;password=ghijkl34",
        "token=[REDACTED];password=[REDACTED]",
    );
    // Trailing punctuation is not part of a value; plain values stay.
    check(
        "call(password=hunter22, x=1)",
        "call(password=[REDACTED], x=1)",
    );
    unchanged("max_tokens=4096, tokens_before: 120. password: true; secret: null.");
}

#[test]
fn cuts_redact_first_and_never_end_inside_a_key() {
    let key = "sk-proj-STRADDLE0123456789abcdefABCDEF";
    let text = format!("{}{key}{}", "a ".repeat(50), " b".repeat(50));
    for n in 90..140 {
        let head = redacted_head(&text, n);
        let tail = redacted_tail(&text, n);
        for piece in [&head, &tail] {
            assert!(piece.chars().count() <= n);
            assert!(!piece.contains("STRADDLE"), "{n}: {piece}");
            assert!(!piece.contains("sk-proj"), "{n}: {piece}");
        }
    }
    // A long key-shaped run that is not a key is cut, not dropped.
    let long = "x".repeat(500);
    assert_eq!(redacted_head(&long, 100), "x".repeat(100));
    assert_eq!(redacted_tail(&long, 100), "x".repeat(100));
    assert_eq!(redacted_head("short", 100), "short");
    assert_eq!(redacted_tail("short", 0), "");
    // Found by the fuzzer: a head cut ending right after the scheme is not a secret.
    let text = "x Authorization: Bearer efghijkl0123 y";
    let head = redacted_head(text, 22);
    assert_eq!(head, "x Authorization: ", "a split word is dropped");
    let head = redacted_head(text, 23);
    assert_eq!(head, "x Authorization: Bearer");
    assert!(!contains_secret(&head));
}

/// A cut through a placeholder (`password=[REDA`) reads as a value again; the cut keeps the
/// text up to the placeholder instead of re-redacting forever and keeping nothing (found by
/// the secrets property test: a pasted `password=…` at the head cut emptied the whole head).
#[test]
fn a_cut_through_a_placeholder_keeps_the_text_before_it() {
    for secret in [
        "password=aAAaa0a0aa&0aAAAaaA0AAA",
        "api_key: Zq7Rb2Lm9Xc4Vn8Kd1Tf6Hs3",
        "Authorization: Bearer Zq7Rb2Lm9Xc4Vn8Kd1Tf6Hs3",
    ] {
        let text = format!(
            "{} {secret} {}",
            "lorem ipsum ".repeat(40),
            "dolor sit ".repeat(40)
        );
        let red = redact(&text);
        let at = red.find(REDACTED).expect("the secret is redacted");
        let at = red[..at].chars().count();
        for n in at.saturating_sub(3)..at + REDACTED.len() + 3 {
            let head = redacted_head(&text, n);
            assert!(head.chars().count() <= n, "{secret} {n}: {head}");
            assert!(
                head.chars().count() + 40 >= n,
                "{secret} {n}: only {head:?}"
            );
            assert!(!contains_secret(&head), "{secret} {n}: {head}");
        }
        let total = red.chars().count();
        let from_end = total - at;
        for n in from_end.saturating_sub(REDACTED.len() + 3)..from_end + 3 {
            let tail = redacted_tail(&text, n);
            assert!(tail.chars().count() <= n, "{secret} {n}: {tail}");
            assert!(
                tail.chars().count() + 40 >= n,
                "{secret} {n}: only {tail:?}"
            );
            assert!(!contains_secret(&tail), "{secret} {n}: {tail}");
        }
    }
}

/// Secrets of every pattern, with the part that must never survive.
fn secret() -> impl Strategy<Value = (String, String)> {
    let tok = |n: usize| proptest::string::string_regex(&format!("[A-Za-z0-9]{{{n}}}")).unwrap();
    let upper = |n: usize| proptest::string::string_regex(&format!("[A-Z2-7]{{{n}}}")).unwrap();
    prop_oneof![
        tok(32).prop_map(|t| (format!("sk-{t}"), t)),
        tok(32).prop_map(|t| (format!("sk-ant-api03-{t}"), t)),
        tok(35).prop_map(|t| (format!("AIza{t}"), t)),
        upper(16).prop_map(|t| (format!("AKIA{t}"), t)),
        tok(36).prop_map(|t| (format!("ghp_{t}"), t)),
        tok(30).prop_map(|t| (format!("github_pat_{t}"), t)),
        tok(24).prop_map(|t| (format!("xoxb-{t}"), t)),
        tok(24).prop_map(|t| (format!("Authorization: Bearer {t}"), t)),
        tok(24).prop_map(|t| (format!("Bearer {t}"), t)),
        (tok(20), tok(20), tok(20))
            .prop_map(|(a, b, c)| (format!("eyJ{a}.eyJ{b}.{c}"), format!("{b}.{c}"))),
        tok(40).prop_map(|t| (
            format!("-----BEGIN PRIVATE KEY-----\n{t}\n-----END PRIVATE KEY-----"),
            t
        )),
        tok(12).prop_map(|t| (format!("postgres://user:{t}@host/db"), t)),
        tok(12).prop_map(|t| (format!("password={t}"), t)),
        tok(12).prop_map(|t| (format!("db_secret: \"{t}\""), t)),
        tok(12).prop_map(|t| (format!("API_TOKEN={t}"), t)),
    ]
}

fn filler() -> impl Strategy<Value = String> {
    proptest::string::string_regex("[a-z0-9 .,:;()\\n-]{0,80}").unwrap()
}

proptest! {
    #[test]
    fn planted_secrets_never_survive(
        a in filler(), b in filler(), (s, core) in secret()
    ) {
        let text = format!("{a} {s} {b}");
        let out = redact(&text);
        prop_assert!(!out.contains(&core), "survived: {core} in {out}");
        prop_assert!(out.contains(REDACTED));
        prop_assert_eq!(redact(&out), out.clone());
    }

    #[test]
    fn hashes_uuids_and_images_survive(
        hash in "[0-9a-f]{40}",
        uuid in "[0-9a-f]{8}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{4}-[0-9a-f]{12}",
        b64 in "[A-Za-z0-9+/]{16,200}={0,2}",
        a in filler(),
    ) {
        let text = format!(
            "{a}\ncommit {hash}\nid {uuid}\n![x](data:image/jpeg;base64,{b64})\n"
        );
        prop_assert_eq!(redact(&text), text.clone());
    }
}

/// The context gate read off the keyword scan opens wherever the regex gate does (on ASCII
/// text; other text takes the regex itself), for the bundled ruleset and for a ruleset of
/// one's own with no keywords at all.
#[test]
fn the_context_gate_from_the_keyword_scan_opens_wherever_the_regex_does() {
    let bare = Ruleset::from_toml("[[rules]]\nid = \"x\"\nregex = 'zzz([0-9]{30})'\n").unwrap();
    let gate = |rules: &Ruleset, t: &str| {
        let mut spans = Vec::new();
        context_triggered(t, rules.spans(t, &mut spans), Runs::of(t))
    };
    let fixed = [
        "cargo test",
        "[pruned] bash `cargo test`: 2000 chars, 80 lines of output, exit 0",
        "PASSWORD",
        "a-u b",
        "--USER x",
        "EYJ",
        "eyJhbGciOi",
        "x://y",
        "-----",
        "aaaaaaaaaaaaaaaaaaa",
        "aaaaaaaaaaaaaaaaaaaa",
        "ab_cd-efghijklmnopqrs",
        "ab.cd-efghijklmnopqrst",
        "kty",
        "Redis-CLI",
        "",
    ];
    for t in fixed {
        let regex = CONTEXT_TRIGGER.is_match(t);
        for rules in [&*installed(), &bare] {
            assert!(!regex || gate(rules, t), "{t:?}");
        }
    }
    // Non-ASCII text takes the regex: the Kelvin sign folds to `k`.
    assert!(CONTEXT_TRIGGER.is_match("\u{212A}ey"));
    assert!(gate(&installed(), "\u{212A}ey"));
    let words: Vec<String> = CONTEXT_LITERALS.iter().map(|w| w.to_string()).collect();
    let piece = prop_oneof![
        proptest::sample::select(words),
        "[A-Za-z0-9_./:=\\- ]{0,24}",
    ];
    proptest!(|(pieces in proptest::collection::vec(piece, 0..6), upper in any::<bool>())| {
        let mut t: String = pieces.concat();
        if upper {
            t = t.to_ascii_uppercase();
        }
        let regex = CONTEXT_TRIGGER.is_match(&t);
        for rules in [&*installed(), &bare] {
            prop_assert!(!regex || gate(rules, &t), "{:?}", t);
        }
    });
}
