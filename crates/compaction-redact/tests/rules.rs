//! Issue 33, item 2: the ruleset in gitleaks' format and the shapes rules alone miss.
//!
//! - The bundled ruleset is in force whole: its count and version are printed, and a rule
//!   that cannot be used is reported by name (here: none; a file with broken rules names each).
//! - Every rule redacts its own examples (the `examples` templates of the bundled file,
//!   expanded with fresh random bodies), and is the rule that finds them.
//! - The hostile shapes of issue 33, each with bodies generated here: a cookie, a token split
//!   across two neighbouring outputs, a `.dockerconfigjson` blob, `echo … | base64 -d`, a
//!   password after `密码：`, Mailgun, Vault (`hvs.`, unseal keys), Doppler, Okta `SSWS`, a
//!   `.pgpass` line, a Telegram bot URL, a JWK's private members, the second half of a split
//!   key.
// The ruleset's count and version are printed on purpose (`cargo test secrets_rules --
// --nocapture`).
#![allow(clippy::print_stdout)]

use compaction_redact::{
    REDACTED, Ruleset, bundled, contains_secret, looks_like_token, redact, redact_adjacent,
};
use test_support::secrets::Gen;

/// Expands a rule example's template: `{kind:N}` is N characters of that kind.
fn expand(template: &str, g: &mut Gen) -> (String, Vec<String>) {
    let mut out = String::new();
    let mut bodies = Vec::new();
    let mut rest = template;
    while let Some(open) = rest.find('{') {
        let Some(close) = rest[open..].find('}').map(|c| open + c) else {
            break;
        };
        let inner = &rest[open + 1..close];
        let Some((kind, n)) = inner
            .split_once(':')
            .and_then(|(k, n)| Some((k, n.parse().ok()?)))
        else {
            out.push_str(&rest[..=open]);
            rest = &rest[open + 1..];
            continue;
        };
        out.push_str(&rest[..open]);
        let body = match kind {
            "hex" => g.hex(n),
            "b62" => g.b62(n),
            "b64" => g.b64(n),
            "b64url" => g.pick(
                "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
                n,
            ),
            "lower" => g.pick("abcdefghijklmnopqrstuvwxyz0123456789", n),
            "upper" => g.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ234567", n),
            "alpha" => g.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz", n),
            "digits" => g.digits(n),
            "password" => g.password(n),
            "bech" => g.pick("QPZRY9X8GF2TVDW0S3JN54KHCE6MUA7L", n),
            other => panic!("unknown template kind {other} in {template}"),
        };
        out.push_str(&body);
        bodies.push(body);
        rest = &rest[close + 1..];
    }
    out.push_str(rest);
    (out, bodies)
}

/// The 8-character runs of `bodies` (random parts only) that `text` still shows.
fn shown(text: &str, bodies: &[String]) -> Vec<String> {
    let mut out = Vec::new();
    for b in bodies.iter().filter(|b| b.chars().count() >= 8) {
        let chars: Vec<char> = b.chars().collect();
        for w in chars.windows(8) {
            let run: String = w.iter().collect();
            if text.contains(&run) {
                out.push(run);
                break;
            }
        }
    }
    out
}

#[test]
fn the_bundled_ruleset_is_in_force_whole() {
    let rules = bundled();
    // Printed on purpose: the count and version of the rules in force (`--nocapture`).
    println!("redaction ruleset: {}", rules.describe());
    println!(
        "rules in force: {}, version {}, skipped {:?}, problems {:?}",
        rules.len(),
        rules.version,
        rules.skipped(),
        rules.problems()
    );
    assert!(rules.len() >= 70, "{}", rules.describe());
    assert!(!rules.version.is_empty() && rules.version != "unversioned");
    assert!(
        rules.skipped().is_empty(),
        "rules not in force: {:?}",
        rules.skipped()
    );
    assert!(rules.problems().is_empty(), "{:?}", rules.problems());
    // Every rule carries examples, and ids are unique.
    let mut ids: Vec<&str> = rules.ids().collect();
    for id in &ids {
        assert!(
            rules.examples().any(|(r, _)| r == *id),
            "rule {id} has no example"
        );
    }
    ids.sort_unstable();
    let n = ids.len();
    ids.dedup();
    assert_eq!(ids.len(), n, "duplicate rule ids");
    // The vendors issue 33 found missing are there.
    for id in [
        "mailgun-api-key",
        "vault-token",
        "vault-unseal-key",
        "doppler-token",
        "okta-api-token",
        "telegram-bot-token",
        "pgpass-line",
        "cjk-password-assignment",
    ] {
        assert!(rules.ids().any(|r| r == id), "no rule {id}");
    }
}

#[test]
fn every_rule_redacts_its_own_examples_with_fresh_bodies() {
    let rules = bundled();
    let mut failures = Vec::new();
    let mut count = 0;
    for seed in [3, 17, 2026] {
        let mut g = Gen::new(seed);
        for (id, template) in rules.examples() {
            let (text, bodies) = expand(template, &mut g);
            count += 1;
            let found = rules.findings(&text);
            if !found.iter().any(|f| f.rule == id) {
                failures.push(format!("{id}: its own rule does not find {template:?}"));
            }
            let out = redact(&text);
            let left = shown(&out, &bodies);
            if !left.is_empty() || !out.contains(REDACTED) {
                failures.push(format!(
                    "{id}: {template:?} not redacted ({} runs left)",
                    left.len()
                ));
            }
            // Inside a JSON string too (the view decodes the escapes).
            let json = serde_json::json!({ "content": text }).to_string();
            if !shown(&redact(&json), &bodies).is_empty() {
                failures.push(format!("{id}: {template:?} not redacted inside JSON"));
            }
        }
    }
    println!("{count} rule examples checked");
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}

#[test]
fn rules_that_cannot_be_used_are_named_with_the_reason() {
    let rules = Ruleset::from_toml(
        r#"
title = "broken on purpose"
[[rules]]
id = "ok"
regex = '''okay_[a-z0-9]{16}'''
keywords = ["okay_"]
[[rules]]
id = "lookbehind"
regex = '''(?<=secret=)\w+'''
[[rules]]
id = "quoted-literal"
regex = '''\Qliteral\E[0-9]+'''
[[rules]]
id = "files-only"
path = '''(?i)\.p12$'''
[[rules]]
id = "no-regex"
description = "nothing to match"
[[rules]]
id = "bad-group"
regex = '''tok_([a-z]{8})'''
secretGroup = 3
[[rules]]
id = "bad-allowlist"
regex = '''bad_[a-z0-9]{12}'''
[[rules.allowlists]]
regexes = ['''(?<=x)y''']
"#,
    )
    .unwrap();
    println!("{}", rules.describe());
    let skipped: Vec<(&str, &str)> = rules
        .skipped()
        .iter()
        .map(|s| (s.id.as_str(), s.reason.as_str()))
        .collect();
    for s in &skipped {
        println!("not in force: {} ({})", s.0, s.1);
    }
    let ids: Vec<&str> = skipped.iter().map(|s| s.0).collect();
    assert_eq!(
        ids,
        [
            "lookbehind",
            "quoted-literal",
            "files-only",
            "no-regex",
            "bad-group"
        ]
    );
    assert!(
        skipped[0].1.contains("does not compile"),
        "{}",
        skipped[0].1
    );
    assert!(skipped[2].1.contains("path-only"), "{}", skipped[2].1);
    assert!(skipped[4].1.contains("secretGroup 3"), "{}", skipped[4].1);
    // The rule whose allowlist entry does not compile stays in force (redacting more).
    assert_eq!(rules.ids().collect::<Vec<_>>(), ["ok", "bad-allowlist"]);
    assert_eq!(rules.problems().len(), 1);
    assert!(rules.problems()[0].id.starts_with("bad-allowlist"));
    assert_eq!(rules.redact("x bad_0a1b2c3d4e5f y"), "x [REDACTED] y");
    // RE2's literal braces (templates in allowlists) are read as literals, as gitleaks does.
    let braces = Ruleset::from_toml(
        r#"
[[rules]]
id = "templated"
regex = '''tpl_[a-z0-9]{12}'''
[[rules.allowlists]]
regexes = ['''^\$\{[A-Z_]+}$''', '''{{[^}]+}}''']
"#,
    )
    .unwrap();
    assert!(braces.problems().is_empty(), "{:?}", braces.problems());
    assert_eq!(braces.redact("x tpl_0a1b2c3d4e5f y"), "x [REDACTED] y");
    // Text that is not a ruleset is an error naming the line.
    let err = Ruleset::from_toml("[[rules]\nid = 1")
        .unwrap_err()
        .to_string();
    assert!(err.contains("line 1"), "{err}");
    let err = Ruleset::from_toml("[extend]\npath = \"other.toml\"\n")
        .unwrap_err()
        .to_string();
    assert!(err.contains("[extend] path"), "{err}");
}

#[test]
fn gitleaks_semantics_keywords_groups_entropy_allowlists_and_extend() {
    let rules = Ruleset::from_toml(
        r#"
title = "a gitleaks-style file"
minVersion = "v8.25.0"
[allowlist]
stopwords = ["notreal"]
[[rules]]
id = "acme-key"
regex = '''(?i)acme[\w.-]{0,20}\s*[:=]\s*['"]?([a-z0-9]{24})'''
entropy = 3.0
keywords = ["acme"]
[[rules.allowlists]]
regexTarget = "line"
regexes = ['''(?i)fixture''']
[[rules]]
id = "second-group"
regex = '''(zz)-([A-Z0-9]{12})'''
secretGroup = 2
keywords = ["zz-"]
"#,
    )
    .unwrap();
    assert_eq!(rules.version, "v8.25.0");
    let mut g = Gen::new(99);
    let body = g.pick("abcdefghijklmnopqrstuvwxyz0123456789", 24);
    // The secret group alone is redacted; the name stays.
    assert_eq!(
        rules.redact(&format!("ACME_KEY={body}")),
        "ACME_KEY=[REDACTED]"
    );
    // Low entropy, a stop word, an allowlisted line: kept.
    let low = "a".repeat(12) + &"b".repeat(12);
    let kept = format!("acme_key={low}");
    assert!(rules.findings(&kept).is_empty());
    let stop = format!("acme_key=notreal{}", &body[..17]);
    assert!(rules.findings(&stop).is_empty(), "{stop}");
    assert!(
        rules
            .findings(&format!("fixture acme_key={body}"))
            .is_empty()
    );
    let id = g.pick("ABCDEFGHIJKLMNOPQRSTUVWXYZ0123456789", 12);
    assert_eq!(rules.redact(&format!("zz-{id}")), "zz-[REDACTED]");
    // useDefault extends the bundled ruleset; disabledRules takes rules out (reported).
    let extended = Ruleset::from_toml(
        r#"
[extend]
useDefault = true
disabledRules = ["pgpass-line"]
[[rules]]
id = "acme-key"
regex = '''acme_[a-z0-9]{24}'''
keywords = ["acme_"]
"#,
    )
    .unwrap();
    assert_eq!(extended.len(), bundled().len());
    assert!(extended.ids().any(|i| i == "acme-key"));
    assert!(!extended.ids().any(|i| i == "pgpass-line"));
    assert_eq!(extended.skipped()[0].id, "pgpass-line");
}

/// A credential shape of issue 33: the text, and the random parts that must not be seen.
struct Shape {
    name: &'static str,
    text: String,
    bodies: Vec<String>,
}

fn b64(bytes: &[u8]) -> String {
    const A: &[u8] = b"ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789+/";
    let mut out = String::new();
    for chunk in bytes.chunks(3) {
        let n = chunk.len();
        let v = (u32::from(chunk[0]) << 16)
            | (u32::from(*chunk.get(1).unwrap_or(&0)) << 8)
            | u32::from(*chunk.get(2).unwrap_or(&0));
        for i in 0..4 {
            if i <= n {
                out.push(A[((v >> (18 - 6 * i)) & 63) as usize] as char);
            } else {
                out.push('=');
            }
        }
    }
    out
}

/// The hostile shapes, with bodies from `g`.
fn hostile(g: &mut Gen) -> Vec<Shape> {
    let s = |name, text: String, bodies: Vec<String>| Shape { name, text, bodies };
    let mut v = Vec::new();
    let sess = g.b62(32);
    let csrf = g.b62(32);
    v.push(s(
        "cookie header",
        format!("GET / HTTP/1.1\nCookie: sessionid={sess}; csrftoken={csrf}; lang=en\n"),
        vec![sess.clone(), csrf.clone()],
    ));
    let set = g.b62(40);
    v.push(s(
        "set-cookie",
        format!("Set-Cookie: __Host-session={set}; Path=/; HttpOnly; Secure"),
        vec![set],
    ));
    let curl = g.b62(28);
    v.push(s(
        "curl cookie",
        format!("curl -b 'sessionid={curl}' https://app.example.com/api"),
        vec![curl],
    ));
    let (user, pass) = (g.pick("abcdefghij", 6), g.password(18));
    let auth = b64(format!("{user}:{pass}").as_bytes());
    let docker =
        b64(format!(r#"{{"auths":{{"registry.example.com":{{"auth":"{auth}"}}}}}}"#).as_bytes());
    v.push(s(
        "dockerconfigjson",
        format!("data:\n  .dockerconfigjson: {docker}\ntype: kubernetes.io/dockerconfigjson"),
        vec![pass.clone(), docker[docker.len() - 24..].to_owned()],
    ));
    let gh = format!("ghp_{}", g.b62(36));
    let wrapped = b64(format!("GITHUB_TOKEN={gh}\n").as_bytes());
    v.push(s(
        "echo base64 -d",
        format!("$ echo {wrapped} | base64 -d > .env"),
        vec![gh[4..].to_owned(), wrapped.clone()],
    ));
    let basic = b64(format!("deploy:{}", g.password(16)).as_bytes());
    v.push(s(
        "echo user:pass base64 -d",
        format!("echo '{basic}' | base64 --decode"),
        vec![basic],
    ));
    let cn = g.password(14);
    v.push(s("full-width colon", format!("数据库密码：{cn}"), vec![cn]));
    let fw = g.password(14);
    v.push(s(
        "full-width equals",
        format!("DB_PASSWORD＝{fw}"),
        vec![fw],
    ));
    let mg = g.hex(32);
    v.push(s("mailgun", format!("MAILGUN_API_KEY=key-{mg}"), vec![mg]));
    let mg2 = format!("{}-{}-{}", g.hex(32), g.hex(8), g.hex(8));
    v.push(s(
        "mailgun current",
        format!("mailgun:\n  api_key: {mg2}"),
        vec![mg2],
    ));
    let hvs = g.pick(
        "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789_-",
        95,
    );
    v.push(s(
        "vault hvs",
        format!("export VAULT_TOKEN=hvs.{hvs}"),
        vec![hvs.clone()],
    ));
    let (k1, k2) = (g.b64(44), g.b64(44));
    let root = g.b62(24);
    v.push(s(
        "vault unseal keys",
        format!("Unseal Key 1: {k1}\nUnseal Key 2: {k2}\n\nInitial Root Token: hvs.{root}"),
        vec![k1, k2, root],
    ));
    let dp = g.b62(43);
    v.push(s(
        "doppler",
        format!("doppler run --token dp.pt.{dp} -- make"),
        vec![dp],
    ));
    let okta = format!(
        "00{}",
        g.pick(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
            40
        )
    );
    v.push(s(
        "okta ssws",
        format!("curl -H \"Authorization: SSWS {okta}\" https://dev.okta.com/api/v1/users"),
        vec![okta[2..].to_owned()],
    ));
    let other = g.b62(32);
    v.push(s(
        "unknown scheme",
        format!("Authorization: Negotiate {other}"),
        vec![other],
    ));
    let pg = g.password(20);
    v.push(s(
        "pgpass",
        format!("$ cat ~/.pgpass\ndb.internal:5432:app:app_user:{pg}\n"),
        vec![pg],
    ));
    let tg = format!(
        "{}:AA{}",
        g.digits(10),
        g.pick(
            "ABCDEFGHIJKLMNOPQRSTUVWXYZabcdefghijklmnopqrstuvwxyz0123456789-_",
            33
        )
    );
    v.push(s(
        "telegram bot url",
        format!("curl https://api.telegram.org/bot{tg}/sendMessage -d chat_id=1"),
        vec![tg[12..].to_owned()],
    ));
    let (d, p, q) = (g.b62(43), g.b62(40), g.b62(40));
    v.push(s(
        "jwk private",
        format!(
            r#"{{"kty":"RSA","n":"{}","e":"AQAB","d":"{d}","p":"{p}","q":"{q}"}}"#,
            g.b62(40)
        ),
        vec![d, p, q],
    ));
    v
}

#[test]
fn every_hostile_shape_is_redacted() {
    let mut failures = Vec::new();
    for seed in [11, 12, 13] {
        let mut g = Gen::new(seed);
        for shape in hostile(&mut g) {
            let out = redact(&shape.text);
            let left = shown(&out, &shape.bodies);
            if !left.is_empty() {
                failures.push(format!("{} (seed {seed}): {out}", shape.name));
            }
            if redact(&out) != out {
                failures.push(format!("{}: not idempotent", shape.name));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
    // The scheme word stays; only the credential goes.
    let mut g = Gen::new(5);
    let token = format!("00{}", g.b62(40));
    assert_eq!(
        redact(&format!("Authorization: SSWS {token}")),
        "Authorization: SSWS [REDACTED]"
    );
    // The blob, not the command around it.
    let wrapped = b64(format!("password={}", g.password(16)).as_bytes());
    assert_eq!(
        redact(&format!("echo {wrapped} | base64 -d")),
        "echo [REDACTED] | base64 -d"
    );
}

#[test]
fn a_token_split_across_neighbouring_outputs_is_redacted_in_both() {
    for seed in [21, 22, 23] {
        let mut g = Gen::new(seed);
        for token in [
            format!("ghp_{}", g.b62(36)),
            format!("hvs.{}", g.b62(95)),
            format!("sk_live_{}", g.b62(40)),
            format!("dp.pt.{}", g.b62(43)),
        ] {
            for cut in [6, token.len() / 2, token.len() - 10] {
                let (a, b) = token.split_at(cut);
                let first = format!("$ cat creds.txt\n{a}");
                let second = format!("{b}\n$ echo done");
                let out = redact_adjacent(&[&first, &second]);
                let both = format!("{}\n{}", out[0], out[1]);
                let parts = [a.to_owned(), b.to_owned()];
                // Any 8-character run of either half (the vendor prefix is no secret).
                let bodies: Vec<String> = parts
                    .iter()
                    .map(|p| {
                        p.trim_start_matches(|c: char| !c.is_ascii_alphanumeric())
                            .to_owned()
                    })
                    .collect();
                let left = shown(&both, &bodies[1..]);
                assert!(left.is_empty(), "cut {cut} of {}: {both}", &token[..4]);
                assert!(out[1].starts_with(REDACTED), "{}", out[1]);
                assert!(out[1].ends_with("$ echo done"), "{}", out[1]);
                assert!(out[0].starts_with("$ cat creds.txt\n"), "{}", out[0]);
            }
        }
        // Texts with no secret at their junction are left as they are.
        let out = redact_adjacent(&["lorem ipsum", "dolor sit"]);
        assert_eq!(out, ["lorem ipsum", "dolor sit"]);
    }
}

#[test]
fn no_token_shaped_word_is_a_name() {
    let mut g = Gen::new(31);
    let half = g.b62(24);
    assert!(looks_like_token(&half));
    assert!(!contains_secret(
        "src/redact/names.rs, parse_args, Vec<String>"
    ));
    for benign in [
        "ledger_max_tokens",
        "src/compaction_core/lib.rs",
        "deadbeefcafebabe0123456789abcdef",
    ] {
        assert!(!looks_like_token(benign), "{benign}");
    }
}

/// The shapes the context detectors find by a command or a key word (`curl -u`, `sshpass -p`,
/// `mysql -p`, `docker login -p`, `redis-cli -a`, a `.netrc` line, a curl cookie, a name/value
/// pair), glued to the prose before them without a space, as Chinese and Japanese text is
/// written. The detectors' word boundaries are ASCII (a Unicode-aware one keeps the regex off
/// its fast engine on such text); a letter of those scripts is then no word character, and
/// the ASCII view of the text reads it as a space: either way the shape is found.
#[test]
fn command_and_key_shapes_are_redacted_when_glued_to_cjk_prose() {
    let mut failures = Vec::new();
    for seed in [31, 32, 33] {
        let mut g = Gen::new(seed);
        let (u, c, s, m, d, r, n, k, v) = (
            g.password(16),
            g.b62(28),
            g.password(16),
            g.password(16),
            g.password(16),
            g.password(16),
            g.password(16),
            g.password(16),
            g.password(16),
        );
        let shapes = [
            (format!("运行curl -u deploy:{u} https://x.example"), &u),
            (format!("然后curl -b 'sid={c}' https://x.example"), &c),
            (format!("用sshpass -p {s} ssh ops@host"), &s),
            (format!("执行mysql -uroot -p{m} app"), &m),
            (format!("先docker login -u ci -p {d} registry.example"), &d),
            (format!("再redis-cli -h cache -a {r} ping"), &r),
            (format!("文件machine api.example login ci password {n}"), &n),
            (format!("环境变量name: DB_PASSWORD\n  value: {k}"), &k),
            (format!("設定のname: API_SECRET\n設定のvalue: {v}"), &v),
        ];
        for (text, body) in shapes {
            let out = redact(&text);
            if !shown(&out, std::slice::from_ref(body)).is_empty() {
                failures.push(format!("seed {seed}: {out}"));
            }
        }
    }
    assert!(failures.is_empty(), "{}", failures.join("\n"));
}
