//! Layer 2: the library's own context rules (key blocks, URL userinfo, authorization
//! headers, password flags, assignments, name/value pairs, CSV exports).

use std::sync::LazyLock;

use regex::Regex;

use super::names::{is_placeholder, is_plain_value, key_is_secret, value_span};
use super::shapes::is_random;
use super::{REDACTED, Spans};

pub(super) static DATA_URL: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"data:[A-Za-z0-9.+/-]+(?:;[A-Za-z0-9=.-]+)*;base64,[A-Za-z0-9+/=]+")
        .expect("valid data URL regex")
});

static KEY_BEGIN: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r"-----BEGIN (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|PuTTY-User-Key-File-[0-9]+:")
        .expect("valid key-begin regex")
});

static KEY_END: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r"-----END (?:[A-Z0-9]+ )*PRIVATE KEY(?: BLOCK)?-----|Private-MAC:[ \t]*[0-9A-Fa-f]*",
    )
    .expect("valid key-end regex")
});

/// Private-key blocks: `BEGIN` to `END`; a `BEGIN` with no `END` runs to the end of the text,
/// and an `END` with no `BEGIN` (the second half of a split block) from the start of the text
/// or the previous block. A marker written as a quoted string in code (`"-----BEGIN …-----"`)
/// is a mention, not a key.
pub(super) fn key_block_spans(t: &str, out: &mut Spans) {
    if !t.contains("-----BEGIN")
        && !t.contains("-----END")
        && !t.contains("PuTTY")
        && !t.contains("Private-")
    {
        return;
    }
    let mut covered = 0;
    let mut pos = 0;
    loop {
        let begin = KEY_BEGIN.find_at(t, pos);
        let end = KEY_END.find_at(t, pos);
        match (begin, end) {
            (Some(b), e) if e.is_none_or(|e| b.start() < e.start()) => {
                if is_mention(t, b.start(), b.end()) {
                    pos = b.end();
                    continue;
                }
                // No `END`: to the end of the text, or of the string it is quoted in (a key
                // body holds no quote, so a JSON document stays valid).
                let stop = KEY_END.find_at(t, b.end()).map_or_else(
                    || t[b.end()..].find('"').map_or(t.len(), |q| b.end() + q),
                    |e| e.end(),
                );
                out.push((b.start(), stop));
                covered = stop;
                pos = stop;
            }
            (_, Some(e)) => {
                pos = e.end();
                if is_mention(t, e.start(), e.end()) || !key_body_before(&t[covered..e.start()]) {
                    continue;
                }
                let from = t[covered..e.start()]
                    .rfind('"')
                    .map_or(covered, |q| covered + q + 1);
                out.push((from, e.end()));
                covered = e.end();
            }
            _ => break,
        }
        if pos >= t.len() {
            break;
        }
    }
}

/// Whether the marker at `s..e` is quoted on both sides (a string constant in code).
fn is_mention(t: &str, s: usize, e: usize) -> bool {
    let before = t[..s].trim_end_matches('\\');
    let after = t[e..].trim_start_matches('\\');
    let q = |c: char| matches!(c, '"' | '\'' | '`');
    before.ends_with(q) && after.starts_with(q)
}

/// Whether the text before an `END` marker ends with a line of key material (base64).
fn key_body_before(before: &str) -> bool {
    let trimmed = before
        .trim_end()
        .trim_end_matches("\\n")
        .trim_end_matches("\\r")
        .trim_end();
    let line = trimmed
        .rsplit(['\n', '\r'])
        .next()
        .unwrap_or("")
        .rsplit("\\n")
        .next()
        .unwrap_or("");
    line.len() >= 4
        && line
            .bytes()
            .all(|b| b.is_ascii_alphanumeric() || matches!(b, b'+' | b'/' | b'='))
}

static URL_START: LazyLock<Regex> =
    LazyLock::new(|| Regex::new(r"[A-Za-z][A-Za-z0-9+.-]*://").expect("valid URL regex"));

/// URL userinfo: the password runs from the first `:` to the last `@` before the host; a
/// user with no password is a secret when it is key-shaped (a Sentry DSN's public key).
pub(super) fn url_spans(t: &str, out: &mut Spans) {
    if !t.contains("://") {
        return;
    }
    let b = t.as_bytes();
    for m in URL_START.find_iter(t) {
        let from = m.end();
        let run = b[from..]
            .iter()
            .position(|&c| {
                c.is_ascii_whitespace() || matches!(c, b'"' | b'\'' | b'<' | b'>' | b'`' | b'\\')
            })
            .map_or(b.len(), |p| from + p);
        let auth = &t[from..run];
        let Some(at) = auth.rfind('@') else { continue };
        let userinfo = &auth[..at];
        let host = &auth[at + 1..];
        if !host.starts_with(|c: char| c.is_ascii_alphanumeric() || c == '[') {
            continue;
        }
        match userinfo.find(':') {
            Some(c) => {
                if userinfo[..c].contains(['/', '?', '#']) {
                    continue;
                }
                let pass = &userinfo[c + 1..];
                // `host:8080/path@x`: a port, not a password.
                let digits = pass.bytes().take_while(u8::is_ascii_digit).count();
                if digits > 0 && pass[digits..].starts_with('/') {
                    continue;
                }
                if pass.is_empty() || pass == REDACTED || is_placeholder(pass) {
                    continue;
                }
                out.push((from + c + 1, from + at));
            }
            None => {
                if userinfo.contains(['/', '?', '#']) {
                    continue;
                }
                if userinfo.len() >= 16 && is_random(userinfo) {
                    out.push((from, from + at));
                }
            }
        }
    }
}

/// What may precede a token: the start, or a character that is not a word character (ASCII
/// letters, digits, `_`). Captured as group 1.
macro_rules! boundary {
    () => {
        r"(^|[^A-Za-z0-9_])"
    };
}

static AUTH_HEADER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r#"(?i)"#,
        boundary!(),
        r#"((?:proxy-)?authorization(?:\\?["'])?\s*[:=]\s*(?:\\?["'])?)((?:bearer|basic|token|bot|digest|apikey|sso-key|ssws)\s+)?([^\s"',;\\]+)"#
    ))
    .expect("valid auth header regex")
});

/// The run of at least 8 credential characters after the blanks at `at`, if any.
fn scheme_credential(t: &str, at: usize) -> Option<(usize, usize)> {
    let rest = &t[at..];
    let blanks = rest.len() - rest.trim_start_matches([' ', '\t']).len();
    if blanks == 0 {
        return None;
    }
    let s = at + blanks;
    let len = t[s..]
        .bytes()
        .take_while(|b| {
            !b.is_ascii_whitespace() && !matches!(b, b'"' | b'\'' | b',' | b';' | b'\\')
        })
        .count();
    (len >= 8).then_some((s, s + len))
}

static BEARER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        boundary!(),
        r"([Bb]earer\s+)([A-Za-z0-9._~+/=-]{12,})"
    ))
    .expect("valid bearer regex")
});

static BASIC: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        boundary!(),
        r"([Bb]asic\s+)([A-Za-z0-9+/]{8,}={0,2})"
    ))
    .expect("valid basic regex")
});

static JWT: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r"(^|[^A-Za-z0-9_-])",
        r"(eyJ[A-Za-z0-9_-]{8,}\.eyJ[A-Za-z0-9_-]{8,}(?:\.[A-Za-z0-9_-]*)?)"
    ))
    .expect("valid JWT regex")
});

pub(super) fn header_spans(t: &str, out: &mut Spans) {
    for c in AUTH_HEADER.captures_iter(t) {
        let v = &c[4];
        // Already redacted, or only the scheme (`Authorization: Bearer` at the end of a cut).
        let scheme_only = c.get(3).is_none()
            && ["bearer", "basic", "token", "bot", "digest"]
                .iter()
                .any(|w| v.eq_ignore_ascii_case(w));
        if v.starts_with('[') || scheme_only || is_placeholder(v) {
            continue;
        }
        let m = c.get(4).expect("group 4 always takes part");
        // A scheme the pattern does not name (`SSWS`, `Negotiate`, `AWS4-HMAC-SHA256`):
        // the credential is the run after it, and the scheme word itself is kept.
        if c.get(3).is_none()
            && v.len() <= 24
            && v.starts_with(|x: char| x.is_ascii_alphabetic())
            && v.bytes().all(|x| x.is_ascii_alphanumeric() || x == b'-')
            && let Some(next) = scheme_credential(t, m.end())
        {
            // Already redacted after an unnamed scheme (`Authorization: Negotiate
            // [REDACTED]`): nothing left to find, and the scheme word is no credential.
            let cred = &t[next.0..next.1];
            if !(cred.starts_with('[') || is_placeholder(cred)) {
                out.push(next);
            }
            continue;
        }
        out.push((m.start(), m.end()));
    }
    if t.contains("earer") {
        for c in BEARER.captures_iter(t) {
            let m = c.get(3).expect("group 3 always takes part");
            out.push((m.start(), m.end()));
        }
    }
    if t.contains("asic") {
        for c in BASIC.captures_iter(t) {
            if looks_like_credentials(&c[3]) {
                let m = c.get(3).expect("group 3 always takes part");
                out.push((m.start(), m.end()));
            }
        }
    }
    if t.contains("eyJ") {
        for c in JWT.captures_iter(t) {
            let m = c.get(2).expect("group 2 always takes part");
            out.push((m.start(), m.end()));
        }
    }
}
static LONG_FLAG: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?:^|[\s"'(=])--([A-Za-z][A-Za-z0-9_-]*)(?:=|[ \t]+)"#).expect("valid flag regex")
});

/// Short flags that take a password, each after the command it belongs to, and the other
/// places a password follows a fixed word (`.netrc`, XML elements).
static SHORT_FLAGS: LazyLock<Vec<Regex>> = LazyLock::new(|| {
    [
        // --user user:pass (the password after the first colon), anywhere.
        r#"(?:^|[\s"'])--user(?:=|[ \t]+)['"]?[^\s'":]+:([^\s'"]+)"#,
        // curl -u user:pass, -uuser:pass: `-u` means this only after curl.
        r#"(?-u:\b)curl(?-u:\b)[^\n|;&]*?[ \t]-u(?:[ \t]+)?['"]?[^\s'":]+:([^\s'"]+)"#,
        // mysql -pSECRET (glued; `-p` alone prompts).
        r"(?-u:\b)(?:mysql|mysqldump|mysqladmin|mysqlimport|mysqlsh|mariadb|mariadb-dump)(?-u:\b)[^\n|;&]*?[ \t]-p([^\s'\x22]+)",
        // sshpass -p SECRET, -pSECRET.
        r"(?-u:\b)sshpass(?-u:\b)[^\n|;&]*?[ \t]-p[ \t]*['\x22]?([^\s'\x22]+)",
        // docker/podman/helm/… login -p SECRET.
        r"(?-u:\b)(?:docker|podman|nerdctl|buildah|skopeo|oras|helm|crane)(?-u:\b)[^\n|;&]*?(?-u:\b)login(?-u:\b)[^\n|;&]*?[ \t]-p[ \t]+['\x22]?([^\s'\x22]+)",
        // redis-cli -a SECRET.
        r"(?-u:\b)redis-cli(?-u:\b)[^\n|;&]*?[ \t]-a[ \t]+['\x22]?([^\s'\x22]+)",
        // A .netrc entry: machine HOST login USER password SECRET.
        r"(?-u:\b)machine[ \t]+\S+[ \t\n]+login[ \t]+\S+[ \t\n]+password[ \t]+([^\s'\x22]+)",
        // An XML element whose name is a credential: <password>SECRET</password>.
        r"(?i)<[A-Za-z_.:-]*(?:password|passwd|secret|token|apikey|api_key|accesskey)>([^<\s]{4,})</",
    ]
    .iter()
    .map(|p| Regex::new(p).expect("valid short-flag regex"))
    .collect()
});

pub(super) fn flag_spans(t: &str, out: &mut Spans) {
    if t.contains("--") {
        for c in LONG_FLAG.captures_iter(t) {
            let name = c.get(1).expect("group 1 always takes part");
            if !key_is_secret(name.as_str()) {
                continue;
            }
            let at = c.get(0).expect("whole match").end();
            if t[at..].starts_with('-') {
                continue;
            }
            let (s, e) = value_span(t, at);
            if s < e && !is_plain_value(&t[s..e], name.as_str()) {
                out.push((s, e));
            }
        }
    }
    for re in SHORT_FLAGS.iter() {
        for c in re.captures_iter(t) {
            let m = c.get(1).expect("group 1 always takes part");
            let v = m.as_str();
            // A value with no letter or digit (`-u:(`) is punctuation, not a password.
            if v.starts_with('-')
                || !v.bytes().any(|c| c.is_ascii_alphanumeric())
                || is_placeholder(v)
                || v.contains(REDACTED)
            {
                continue;
            }
            out.push((m.start(), m.end()));
        }
    }
}

/// The key of an assignment and its operator, up to where the value starts. A closing quote
/// of the key may be escaped (JSON inside a JSON string).
static ASSIGNMENT_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)([A-Za-z0-9_.-]*(?:pass|pwd|secret|token|key|auth|credential|sig)[A-Za-z0-9_.-]*)(?:\\*["'])?[ \t]*(?:=>|:=|[:=])[ \t]*"#,
    )
    .expect("valid assignment regex")
});

/// Values of assignments whose name is a credential.
pub(super) fn assignment_spans(t: &str, out: &mut Spans) {
    let b = t.as_bytes();
    let mut pos = 0;
    while let Some(c) = ASSIGNMENT_KEY.captures_at(t, pos) {
        let whole = c.get(0).expect("whole match");
        let key = c.get(1).expect("group 1 always takes part");
        pos = whole.end().max(pos + 1);
        let mut name = key.as_str();
        // The letter of a JSON escape is not part of the name (`\napi_key=`).
        if key.start() > 0 && b[key.start() - 1] == b'\\' {
            if name.len() > 5
                && name.starts_with('u')
                && name[1..5].bytes().all(|x| x.is_ascii_hexdigit())
            {
                name = &name[5..];
            } else if name.starts_with(['n', 'r', 't', 'b', 'f']) {
                name = &name[1..];
            }
        }
        if !key_is_secret(name) {
            continue;
        }
        // `a == b` and `x => y` in code are comparisons and arrows, not assignments.
        if b.get(whole.end()) == Some(&b'=') {
            continue;
        }
        let (s, e) = value_span(t, whole.end());
        pos = pos.max(e);
        if s < e && !is_plain_value(&t[s..e], name) {
            out.push((s, e));
        }
    }
}

static NAME_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(
        r#"(?i)(?:["']?(?-u:\b)(?:name|key|parameterkey|parametername|variable)["']?[ \t]*[:=][ \t]*|(?-u:\b)variable[ \t]+)["']?([A-Za-z_][A-Za-z0-9_.-]*)"#,
    )
    .expect("valid name regex")
});

static VALUE_KEY: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#"(?i)["']?(?-u:\b)(?:value|default|parametervalue)["']?[ \t]*[:=][ \t]*"#)
        .expect("valid value regex")
});

/// Name/value pairs (Kubernetes `env`, ECS and GitLab variables, CloudFormation parameters,
/// Terraform `variable` defaults): when the name is a credential, the value that follows it
/// (within a few lines) is a secret.
pub(super) fn name_value_spans(t: &str, out: &mut Spans) {
    let names: Vec<_> = NAME_KEY.captures_iter(t).collect();
    for (i, c) in names.iter().enumerate() {
        let name = c.get(1).expect("group 1 always takes part");
        if !key_is_secret(name.as_str()) {
            continue;
        }
        let from = name.end();
        // The value belongs to this name only up to the next name.
        let next = names
            .get(i + 1)
            .map_or(t.len(), |n| n.get(0).expect("whole match").start());
        let mut to = (from + 300).min(next).max(from);
        while !t.is_char_boundary(to) {
            to -= 1;
        }
        let Some(v) = VALUE_KEY.find(&t[from..to]) else {
            continue;
        };
        let at = from + v.end();
        let (s, e) = value_span(t, at);
        if s < e && !is_plain_value(&t[s..e], name.as_str()) {
            out.push((s, e));
        }
    }
}

/// CSV exports (an AWS console credentials file): when a header line names a secret column,
/// that column of the following rows is a secret.
pub(super) fn csv_spans(t: &str, out: &mut Spans) {
    if !t.contains(',') {
        return;
    }
    let mut header: Option<(usize, Vec<usize>)> = None;
    let mut offset = 0;
    for line in t.split_inclusive('\n') {
        let start = offset;
        offset += line.len();
        let body = line.trim_end_matches(['\n', '\r']);
        if let Some((cols, secret)) = &header {
            let cells = cells(body, start);
            if cells.len() == *cols && !body.trim().is_empty() {
                for &i in secret {
                    let (s, e) = cells[i];
                    let v = &t[s..e];
                    if !v.is_empty() && !is_plain_value(v, "") {
                        out.push((s, e));
                    }
                }
                continue;
            }
            header = None;
        }
        if body.len() > 400 || !body.contains(',') {
            continue;
        }
        let mut cells = cells(body, start);
        // The first label may follow other text on its line (`{"content": "User name,…`).
        if let Some(first) = cells.first_mut() {
            let c = &t[first.0..first.1];
            let label = c
                .rfind(|x: char| !(x.is_ascii_alphanumeric() || matches!(x, ' ' | '_' | '-' | '.')))
                .map_or(0, |i| i + c[i..].chars().next().map_or(1, char::len_utf8));
            first.0 += label;
            first.0 += t[first.0..first.1].len() - t[first.0..first.1].trim_start().len();
        }
        let labels = cells.iter().all(|&(s, e)| {
            let c = &t[s..e];
            !c.is_empty()
                && c.len() <= 40
                && c.starts_with(|x: char| x.is_ascii_alphabetic())
                && c.bytes()
                    .all(|x| x.is_ascii_alphanumeric() || matches!(x, b' ' | b'_' | b'-' | b'.'))
        });
        if !labels {
            continue;
        }
        let secret: Vec<usize> = cells
            .iter()
            .enumerate()
            .filter(|&(_, &(s, e))| key_is_secret(&t[s..e]))
            .map(|(i, _)| i)
            .collect();
        if !secret.is_empty() {
            header = Some((cells.len(), secret));
        }
    }
}

/// The byte ranges of the cells of one CSV line (trimmed, outer quotes removed).
fn cells(line: &str, offset: usize) -> Vec<(usize, usize)> {
    let mut out = Vec::new();
    let mut s = 0;
    for cell in line.split(',') {
        let lead = cell.len() - cell.trim_start().len();
        let trimmed = cell.trim();
        let (a, z) = if trimmed.len() >= 2 && trimmed.starts_with('"') && trimmed.ends_with('"') {
            (lead + 1, lead + trimmed.len() - 1)
        } else {
            (lead, lead + trimmed.len())
        };
        out.push((offset + s + a, offset + s + z));
        s += cell.len() + 1;
    }
    out
}
/// `Basic` followed by base64 credentials rather than an English word: at least two upper-case
/// and two lower-case letters, or a digit, `+`, `/` or `=` padding.
fn looks_like_credentials(s: &str) -> bool {
    let upper = s.bytes().filter(u8::is_ascii_uppercase).count();
    let lower = s.bytes().filter(u8::is_ascii_lowercase).count();
    (upper >= 2 && lower >= 2) || s.bytes().any(|b| b.is_ascii_digit() || b"+/=".contains(&b))
}

/// A `Cookie:` or `Set-Cookie:` header (as written, or as a JSON or YAML key), and the cookie
/// argument of curl (`-b`, `--cookie`): up to the end of the line or the string.
static COOKIE: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(concat!(
        r#"(?i)(?:(?:^|[^A-Za-z0-9_-])((?:set-)?cookie)(?:\\?["'])?[ \t]*[:=][ \t]*(?:\\?["'])?"#,
        r#"|(?:^|[ \t])(--cookie)(?:=|[ \t]+)['"]?"#,
        r#"|(?-u:\b)curl(?-u:\b)[^\n|;&]*?[ \t](-b)(?:=|[ \t]+)['"]?)"#,
        r#"([^\r\n"'\\]+)"#,
    ))
    .expect("valid cookie regex")
});

/// Cookie attributes of `Set-Cookie`, which are not cookies.
const COOKIE_ATTRIBUTES: [&str; 9] = [
    "path",
    "domain",
    "expires",
    "max-age",
    "samesite",
    "secure",
    "httponly",
    "priority",
    "partitioned",
];

/// Cookie values: every `name=value` pair of a `Cookie` header or curl's cookie argument,
/// and the first of a `Set-Cookie` header (what follows it are attributes), when the value
/// is at least 6 characters and not a plain value (a number, `true`).
pub(super) fn cookie_spans(t: &str, out: &mut Spans) {
    let lower = t.contains("ookie") || t.contains("OOKIE") || t.contains("-b");
    if !lower {
        return;
    }
    for c in COOKIE.captures_iter(t) {
        let set = c
            .get(1)
            .is_some_and(|h| h.as_str().to_ascii_lowercase().starts_with("set-"));
        let v = c.get(4).expect("group 4 always takes part");
        let mut at = v.start();
        for (i, pair) in v.as_str().split(';').enumerate() {
            let start = at;
            at += pair.len() + 1;
            if set && i > 0 {
                break;
            }
            let Some((name, value)) = pair.split_once('=') else {
                continue;
            };
            let name = name.trim();
            if name.is_empty()
                || name.contains(char::is_whitespace)
                || COOKIE_ATTRIBUTES
                    .iter()
                    .any(|a| name.eq_ignore_ascii_case(a))
            {
                continue;
            }
            let vstart = start + pair.len() - value.len();
            let lead = value.len() - value.trim_start().len();
            let trimmed = value.trim();
            let (s, e) = (vstart + lead, vstart + lead + trimmed.len());
            let val = &t[s..e];
            if val.len() < 6
                || val.contains(REDACTED)
                || is_placeholder(val)
                || val.bytes().all(|b| b.is_ascii_digit() || b == b'.')
                || ["true", "false", "null", "deleted"]
                    .iter()
                    .any(|w| val.eq_ignore_ascii_case(w))
            {
                continue;
            }
            out.push((s, e));
        }
    }
}

/// A private member of a JSON Web Key: `d` (RSA, EC and OKP private keys), `p`, `q`, `dp`,
/// `dq`, `qi` (RSA), `k` (symmetric keys).
static JWK_MEMBER: LazyLock<Regex> = LazyLock::new(|| {
    Regex::new(r#""(?:d|p|q|dp|dq|qi|k)"[ \t\r\n]*:[ \t\r\n]*"([A-Za-z0-9_-]{8,}={0,2})""#)
        .expect("valid JWK regex")
});

/// The private members of JSON Web Keys, in a text that holds a key (`"kty"`).
pub(super) fn jwk_spans(t: &str, out: &mut Spans) {
    if !t.contains("\"kty\"") {
        return;
    }
    for c in JWK_MEMBER.captures_iter(t) {
        let m = c.get(1).expect("group 1 always takes part");
        out.push((m.start(), m.end()));
    }
}
