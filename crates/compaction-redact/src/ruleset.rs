//! Layer 1: a ruleset in gitleaks' format, parsed and compiled once.
//!
//! The format is gitleaks' configuration file (`[[rules]]` with `id`, `regex`, `secretGroup`,
//! `entropy`, `keywords` and allowlists; global `[allowlist]` / `[[allowlists]]`;
//! `[extend] useDefault` and `disabledRules`). Its regexes are written for Go's RE2, whose
//! `\w`, `\d` and `\s` are ASCII: they are read that way here ([`ascii_classes`]), which also
//! keeps the compiled programs small. A rule that cannot be used (its regex does not compile
//! with the `regex` crate, it has no regex, it only names file paths, a file disabled it) is
//! kept in [`Ruleset::skipped`] with the reason, never dropped silently; an allowlist entry
//! that does not compile is kept in [`Ruleset::problems`] and the rule stays in force
//! without it (redacting more, never less).
//!
//! Keywords gate the rules as in gitleaks: one Aho-Corasick pass over the text (ASCII case
//! folded) finds which keywords occur, and only the rules with one of them (or with none)
//! run their regex.

use std::collections::HashMap;
use std::sync::{Arc, LazyLock, RwLock};

use aho_corasick::AhoCorasick;
use regex::{Regex, RegexBuilder};
use serde::Deserialize;

use super::names::is_placeholder;
use super::{REDACTED, Spans};

/// The ruleset this crate ships and uses unless another is installed: written for this
/// project in gitleaks' format (`crates/compaction-redact/rules/secrets.toml`).
pub(crate) const BUNDLED_RULES_TOML: &str = include_str!("../rules/secrets.toml");

/// A compiled ruleset in gitleaks' format. Build one with [`Ruleset::from_toml`], use it for
/// every redaction with [`install`].
#[derive(Clone, Debug)]
pub struct Ruleset {
    /// The file's `title` (empty when it has none).
    pub title: String,
    /// The file's `version`, else its `minVersion`, else `unversioned`; followed by the
    /// digest of the text in [`describe`](Ruleset::describe).
    pub version: String,
    /// A 64-bit FNV-1a digest of the TOML text, in hexadecimal: which file this is.
    pub digest: String,
    rules: Vec<Rule>,
    skipped: Vec<SkippedRule>,
    problems: Vec<SkippedRule>,
    global: Vec<Allow>,
    prefilter: Option<AhoCorasick>,
    /// For each keyword of the prefilter, the rules it gates.
    keyword_rules: Vec<Vec<usize>>,
    /// For each keyword of the prefilter, whether it is one of the context detectors' gate
    /// literals ([`CONTEXT_LITERALS`](super::CONTEXT_LITERALS)): the one keyword scan serves
    /// both gates.
    context_words: Vec<bool>,
    /// Rules without keywords: they always run.
    unkeyed: Vec<usize>,
}

/// A secret a rule found: [`Ruleset::findings`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Finding {
    /// The rule's id.
    pub rule: String,
    /// Byte offset of the secret's first byte.
    pub start: usize,
    /// Byte offset just past the secret.
    pub end: usize,
}

/// A rule of the file that is not in force, or an entry of it that is not, and why.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SkippedRule {
    /// The rule's `id` (or `[allowlist]` for a global allowlist).
    pub id: String,
    /// Why, in words (the regex compiler's message for a regex that does not compile).
    pub reason: String,
}

#[derive(Clone, Debug)]
struct Rule {
    id: String,
    re: Regex,
    secret_group: usize,
    entropy: f64,
    keywords: Vec<String>,
    allow: Vec<Allow>,
    examples: Vec<String>,
}

#[derive(Clone, Debug)]
struct Allow {
    and: bool,
    target: Target,
    regexes: Vec<Regex>,
    stopwords: Vec<String>,
    /// Criteria that text cannot meet (`paths`, `commits`): with `condition = "AND"` the
    /// entry never allows anything.
    other_criteria: bool,
    /// `targetRules` of a global entry (empty: every rule).
    target_rules: Vec<String>,
}

#[derive(Clone, Copy, Debug)]
enum Target {
    Secret,
    Match,
    Line,
}

/// A rule's regex may be large (alternations of vendor names); the default program limit is
/// raised so none is lost for its size alone.
const RULE_SIZE_LIMIT: usize = 64 << 20;

impl Ruleset {
    /// Parses and compiles a gitleaks-format TOML text. Fails only when the text is not TOML
    /// of that shape (the error names the line) or uses `[extend] path` (a file of its own
    /// is read by the caller, not here); a rule that cannot be used is reported in
    /// [`skipped`](Ruleset::skipped) instead.
    ///
    /// ```
    /// use compaction_redact::Ruleset;
    ///
    /// let rules = Ruleset::from_toml(r#"
    /// title = "mine"
    /// [[rules]]
    /// id = "acme"
    /// regex = '''acme_[a-z0-9]{12}'''
    /// keywords = ["acme_"]
    /// [[rules]]
    /// id = "lookbehind"
    /// regex = '''(?<=x)y'''
    /// "#).unwrap();
    /// assert_eq!(rules.len(), 1);
    /// assert_eq!(rules.skipped()[0].id, "lookbehind");
    /// assert_eq!(rules.redact("id acme_0a1b2c3d4e5f."), "id [REDACTED].");
    /// ```
    pub fn from_toml(text: &str) -> crate::Result<Ruleset> {
        let doc: FileDoc = toml::from_str(text).map_err(|e| crate::Error::Ruleset {
            reason: e.to_string(),
        })?;
        let mut rules: Vec<Rule> = Vec::new();
        let mut skipped = Vec::new();
        let mut problems = Vec::new();
        let mut global = Vec::new();
        let mut disabled: Vec<String> = Vec::new();
        if let Some(extend) = &doc.extend {
            if extend.path.is_some() {
                return Err(crate::Error::Ruleset {
                    reason: "[extend] path is not supported: put the rules in one file, or use \
                             useDefault = true to extend the bundled ruleset"
                        .into(),
                });
            }
            if extend.use_default {
                let base = bundled();
                rules.extend(base.rules.iter().cloned());
                global.extend(base.global.iter().cloned());
            }
            disabled.clone_from(&extend.disabled_rules);
        }
        for (i, a) in doc.allowlist.iter().chain(&doc.allowlists).enumerate() {
            global.push(compile_allow(
                a,
                &format!("[allowlist] {}", i + 1),
                &mut problems,
            ));
        }
        for r in doc.rules {
            if disabled.contains(&r.id) {
                continue;
            }
            match compile_rule(&r, &mut problems) {
                Ok(rule) => match rules.iter_mut().find(|x| x.id == rule.id) {
                    Some(old) => *old = rule,
                    None => rules.push(rule),
                },
                Err(reason) => skipped.push(SkippedRule { id: r.id, reason }),
            }
        }
        for id in &disabled {
            if let Some(at) = rules.iter().position(|r| &r.id == id) {
                rules.remove(at);
            }
            skipped.push(SkippedRule {
                id: id.clone(),
                reason: "disabled by [extend] disabledRules".into(),
            });
        }
        let mut set = Ruleset {
            title: doc.title.unwrap_or_default(),
            version: doc
                .version
                .or(doc.min_version)
                .unwrap_or_else(|| "unversioned".into()),
            digest: format!("{:016x}", fnv1a(text.as_bytes())),
            rules,
            skipped,
            problems,
            global,
            prefilter: None,
            keyword_rules: Vec::new(),
            context_words: Vec::new(),
            unkeyed: Vec::new(),
        };
        set.index();
        Ok(set)
    }

    /// The rules in force.
    pub fn len(&self) -> usize {
        self.rules.len()
    }

    /// Whether no rule is in force.
    pub fn is_empty(&self) -> bool {
        self.rules.is_empty()
    }

    /// The ids of the rules in force, in file order.
    pub fn ids(&self) -> impl Iterator<Item = &str> {
        self.rules.iter().map(|r| r.id.as_str())
    }

    /// The rules of the file that are not in force, each with its reason.
    pub fn skipped(&self) -> &[SkippedRule] {
        &self.skipped
    }

    /// Entries of rules in force that are not used (an allowlist regex that does not
    /// compile), each with its reason.
    pub fn problems(&self) -> &[SkippedRule] {
        &self.problems
    }

    /// Each rule's `examples` (this project's own key: templates of text the rule must
    /// redact, see the bundled file's header), as (rule id, template).
    pub fn examples(&self) -> impl Iterator<Item = (&str, &str)> {
        self.rules
            .iter()
            .flat_map(|r| r.examples.iter().map(move |e| (r.id.as_str(), e.as_str())))
    }

    /// One line: title, version, digest, rules in force and rules skipped.
    pub fn describe(&self) -> String {
        format!(
            "{} {} (fnv {}): {} rules in force, {} skipped",
            if self.title.is_empty() {
                "ruleset"
            } else {
                &self.title
            },
            self.version,
            self.digest,
            self.rules.len(),
            self.skipped.len()
        )
    }

    /// [`redact`](super::redact) with this ruleset in place of the installed one.
    pub fn redact<'t>(&self, text: &'t str) -> std::borrow::Cow<'t, str> {
        super::redact_with(self, text)
    }

    /// Builds the keyword prefilter.
    fn index(&mut self) {
        let mut words: Vec<String> = Vec::new();
        let mut gated: Vec<Vec<usize>> = Vec::new();
        for (i, r) in self.rules.iter().enumerate() {
            let ks: Vec<String> = r
                .keywords
                .iter()
                .map(|k| k.to_lowercase())
                .filter(|k| !k.is_empty())
                .collect();
            if ks.is_empty() {
                self.unkeyed.push(i);
                continue;
            }
            for k in ks {
                match words.iter().position(|w| *w == k) {
                    Some(at) => {
                        if !gated[at].contains(&i) {
                            gated[at].push(i);
                        }
                    }
                    None => {
                        words.push(k);
                        gated.push(vec![i]);
                    }
                }
            }
        }
        let mut context = vec![false; words.len()];
        for w in super::CONTEXT_LITERALS {
            let w = w.to_ascii_lowercase();
            match words.iter().position(|k| *k == w) {
                Some(at) => context[at] = true,
                None => {
                    words.push(w);
                    gated.push(Vec::new());
                    context.push(true);
                }
            }
        }
        self.context_words = context;
        self.prefilter = (!words.is_empty()).then(|| {
            AhoCorasick::builder()
                .ascii_case_insensitive(true)
                // A few hundred short keywords: a full DFA is small and the fastest scan.
                .kind(Some(aho_corasick::AhoCorasickKind::DFA))
                .build(&words)
                .expect("literal keywords form an automaton")
        });
        self.keyword_rules = gated;
    }

    /// What each rule in force finds in `text` as written (no decoded view, no context
    /// rules): the rule's id and the byte range of the secret. For tests and for checking a
    /// ruleset of one's own.
    pub fn findings(&self, text: &str) -> Vec<Finding> {
        let mut out = Vec::new();
        self.scan(text, |rule, s, e| {
            out.push(Finding {
                rule: rule.id.clone(),
                start: s,
                end: e,
            });
        });
        out
    }

    /// The spans of every rule in force over `t`; and whether the keyword scan met one of the
    /// context gate's literals (in any ASCII case), `None` when this ruleset has no keyword
    /// scan.
    pub(super) fn spans(&self, t: &str, out: &mut Spans) -> Option<bool> {
        self.scan(t, |_, s, e| out.push((s, e)))
    }

    fn scan(&self, t: &str, mut found: impl FnMut(&Rule, usize, usize)) -> Option<bool> {
        // The rules to run, in the ruleset's order: the unkeyed ones and those a keyword of
        // the text gates (most texts hit no keyword: then nothing is collected).
        let mut gated: Vec<usize> = Vec::new();
        let mut context = None;
        if let Some(ac) = &self.prefilter {
            let mut seen = false;
            for m in ac.find_overlapping_iter(t) {
                let k = m.pattern().as_usize();
                gated.extend(&self.keyword_rules[k]);
                seen |= self.context_words[k];
            }
            context = Some(seen);
        }
        let run: &[usize] = if gated.is_empty() {
            &self.unkeyed
        } else {
            gated.extend(&self.unkeyed);
            gated.sort_unstable();
            gated.dedup();
            &gated
        };
        for rule in run.iter().map(|&i| &self.rules[i]) {
            // Most texts hold nothing for a rule: a match test allocates nothing, a capture
            // search does.
            if !rule.re.is_match(t) {
                continue;
            }
            for c in rule.re.captures_iter(t) {
                let m = if rule.secret_group > 0 {
                    c.get(rule.secret_group)
                } else {
                    c.iter().skip(1).flatten().find(|g| !g.is_empty())
                };
                let Some(m) = m.or_else(|| c.get(0)) else {
                    continue;
                };
                let secret = m.as_str();
                if secret.is_empty()
                    || secret.contains(REDACTED)
                    || is_placeholder(secret)
                    || (rule.entropy > 0.0 && entropy(secret) <= rule.entropy)
                {
                    continue;
                }
                let whole = c.get(0).map_or(secret, |w| w.as_str());
                let line = line_of(t, m.start(), m.end());
                let allowed = |a: &Allow| a.allows(secret, whole, line);
                if rule.allow.iter().any(allowed)
                    || self
                        .global
                        .iter()
                        .filter(|a| a.target_rules.is_empty() || a.target_rules.contains(&rule.id))
                        .any(allowed)
                {
                    continue;
                }
                found(rule, m.start(), m.end());
            }
        }
        context
    }
}

impl Allow {
    fn allows(&self, secret: &str, whole: &str, line: &str) -> bool {
        let target = match self.target {
            Target::Secret => secret,
            Target::Match => whole,
            Target::Line => line,
        };
        let regex_hit = self.regexes.iter().any(|r| r.is_match(target));
        let lower = secret.to_lowercase();
        let stop_hit = self.stopwords.iter().any(|w| lower.contains(w.as_str()));
        if self.and {
            (self.regexes.is_empty() || regex_hit)
                && (self.stopwords.is_empty() || stop_hit)
                && !self.other_criteria
                && !(self.regexes.is_empty() && self.stopwords.is_empty())
        } else {
            regex_hit || stop_hit
        }
    }
}

/// The ruleset every redaction uses: the one given to [`install`], else the bundled one.
pub fn installed() -> Arc<Ruleset> {
    INSTALLED
        .read()
        .map(|g| g.clone())
        .unwrap_or_else(|p| p.into_inner().clone())
        .unwrap_or_else(|| BUNDLED.clone())
}

/// Makes `rules` the ruleset of every later redaction in this process (the facade calls this
/// for `compression.redaction_rules`). Returns the ruleset it replaces, if one was installed.
pub fn install(rules: Ruleset) -> Option<Arc<Ruleset>> {
    let mut g = INSTALLED.write().unwrap_or_else(|p| p.into_inner());
    g.replace(Arc::new(rules))
}

/// The bundled ruleset (`crates/compaction-redact/rules/secrets.toml`), compiled once.
pub fn bundled() -> Arc<Ruleset> {
    BUNDLED.clone()
}

static BUNDLED: LazyLock<Arc<Ruleset>> = LazyLock::new(|| {
    Arc::new(Ruleset::from_toml(BUNDLED_RULES_TOML).expect("the bundled ruleset is valid TOML"))
});

static INSTALLED: RwLock<Option<Arc<Ruleset>>> = RwLock::new(None);

fn compile_rule(r: &RuleDoc, problems: &mut Vec<SkippedRule>) -> Result<Rule, String> {
    let Some(pattern) = &r.regex else {
        return Err(if r.path.is_some() {
            "a path-only rule (it matches file names, and a transcript has none)".into()
        } else {
            "no regex".into()
        });
    };
    let re = RegexBuilder::new(&ascii_classes(pattern))
        .size_limit(RULE_SIZE_LIMIT)
        .build()
        .map_err(|e| {
            format!(
                "its regex does not compile with the regex crate: {}",
                one_line(&e.to_string())
            )
        })?;
    if let Some(g) = r.secret_group
        && g >= re.captures_len()
    {
        return Err(format!(
            "secretGroup {g} but the regex has {} groups",
            re.captures_len() - 1
        ));
    }
    let allow = r
        .allowlist
        .iter()
        .chain(&r.allowlists)
        .enumerate()
        .map(|(i, a)| compile_allow(a, &format!("{} allowlist {}", r.id, i + 1), problems))
        .collect();
    Ok(Rule {
        id: r.id.clone(),
        re,
        secret_group: r.secret_group.unwrap_or(0),
        entropy: r.entropy.unwrap_or(0.0),
        keywords: r.keywords.clone(),
        allow,
        examples: r.examples.clone(),
    })
}

fn compile_allow(a: &AllowDoc, what: &str, problems: &mut Vec<SkippedRule>) -> Allow {
    let regexes = a
        .regexes
        .iter()
        .filter_map(|p| {
            match RegexBuilder::new(&ascii_classes(p))
                .size_limit(RULE_SIZE_LIMIT)
                .build()
            {
                Ok(r) => Some(r),
                Err(e) => {
                    problems.push(SkippedRule {
                        id: what.to_owned(),
                        reason: format!(
                            "an allowlist regex does not compile: {}",
                            one_line(&e.to_string())
                        ),
                    });
                    None
                }
            }
        })
        .collect();
    Allow {
        and: a
            .condition
            .as_deref()
            .is_some_and(|c| c.eq_ignore_ascii_case("and")),
        target: match a.regex_target.as_deref() {
            Some("match") => Target::Match,
            Some("line") => Target::Line,
            _ => Target::Secret,
        },
        regexes,
        stopwords: a.stopwords.iter().map(|s| s.to_lowercase()).collect(),
        other_criteria: !a.paths.is_empty() || !a.commits.is_empty(),
        target_rules: a.target_rules.clone(),
    }
}

/// `pattern` with RE2's ASCII meaning of `\w`, `\d` and `\s` (and their negations) spelled
/// out, inside character classes too, and RE2's literal `{` (one that opens no repetition)
/// escaped; everything else as written.
pub(super) fn ascii_classes(pattern: &str) -> String {
    let mut out = String::with_capacity(pattern.len() + 16);
    let mut chars = pattern.chars().peekable();
    let mut in_class = false;
    // Characters since the class opened (a `]` first is a literal).
    let mut class_len = 0usize;
    while let Some(c) = chars.next() {
        if c == '\\' {
            let Some(e) = chars.next() else {
                out.push(c);
                break;
            };
            let spelled = match (e, in_class) {
                ('w', false) => Some("[0-9A-Za-z_]"),
                ('W', false) => Some("[^0-9A-Za-z_]"),
                ('d', false) => Some("[0-9]"),
                ('D', false) => Some("[^0-9]"),
                ('s', false) => Some(r"[\t\n\f\r ]"),
                ('S', false) => Some(r"[^\t\n\f\r ]"),
                ('w', true) => Some("0-9A-Za-z_"),
                ('d', true) => Some("0-9"),
                ('s', true) => Some(r"\t\n\f\r "),
                _ => None,
            };
            match spelled {
                Some(s) => out.push_str(s),
                None => {
                    out.push(c);
                    out.push(e);
                }
            }
            class_len += 1;
            continue;
        }
        if in_class {
            if c == '[' && chars.peek() == Some(&':') {
                // A POSIX class: copy through `:]`.
                out.push(c);
                for d in chars.by_ref() {
                    out.push(d);
                    if d == ']' && out.ends_with(":]") {
                        break;
                    }
                }
                class_len += 1;
                continue;
            }
            if c == ']' && class_len > 0 {
                in_class = false;
            } else if !(c == '^' && class_len == 0) {
                class_len += 1;
            }
            out.push(c);
            continue;
        }
        if c == '[' {
            in_class = true;
            class_len = 0;
        }
        // RE2 reads a `{` that opens no repetition (`{{ var }}`, `${NAME}`) as a literal;
        // the `regex` crate wants it escaped.
        if c == '{' && !opens_repetition(chars.clone()) {
            out.push_str(r"\{");
            continue;
        }
        out.push(c);
    }
    out
}

/// Whether the text after a `{` is a repetition's `n}`, `n,}` or `n,m}`.
fn opens_repetition(mut rest: impl Iterator<Item = char>) -> bool {
    let mut digits = 0;
    let mut comma = false;
    for c in rest.by_ref() {
        match c {
            '0'..='9' => digits += 1,
            ',' if !comma && digits > 0 => comma = true,
            '}' => return digits > 0,
            _ => return false,
        }
    }
    false
}

/// The line of `t` that holds `s..e`.
fn line_of(t: &str, s: usize, e: usize) -> &str {
    let from = t[..s].rfind('\n').map_or(0, |i| i + 1);
    let to = t[e..].find('\n').map_or(t.len(), |i| e + i);
    &t[from..to]
}

fn one_line(s: &str) -> String {
    s.split_whitespace().collect::<Vec<_>>().join(" ")
}

/// Shannon entropy in bits per character, as gitleaks computes it.
fn entropy(s: &str) -> f64 {
    let mut counts: HashMap<char, u32> = HashMap::new();
    let mut n = 0u32;
    for c in s.chars() {
        *counts.entry(c).or_default() += 1;
        n += 1;
    }
    let n = f64::from(n);
    counts
        .values()
        .map(|&c| {
            let p = f64::from(c) / n;
            -p * p.log2()
        })
        .sum()
}

fn fnv1a(b: &[u8]) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for &x in b {
        h ^= u64::from(x);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

// ---------------------------------------------------------------------------------------------
// The file's shape (gitleaks' configuration; unknown keys are ignored, as gitleaks does).

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct FileDoc {
    title: Option<String>,
    version: Option<String>,
    min_version: Option<String>,
    extend: Option<ExtendDoc>,
    allowlist: Option<AllowDoc>,
    allowlists: Vec<AllowDoc>,
    rules: Vec<RuleDoc>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct ExtendDoc {
    path: Option<String>,
    use_default: bool,
    disabled_rules: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct RuleDoc {
    id: String,
    regex: Option<String>,
    secret_group: Option<usize>,
    entropy: Option<f64>,
    keywords: Vec<String>,
    path: Option<String>,
    allowlist: Option<AllowDoc>,
    allowlists: Vec<AllowDoc>,
    examples: Vec<String>,
}

#[derive(Deserialize, Default)]
#[serde(default, rename_all = "camelCase")]
struct AllowDoc {
    condition: Option<String>,
    regex_target: Option<String>,
    regexes: Vec<String>,
    stopwords: Vec<String>,
    paths: Vec<String>,
    commits: Vec<String>,
    target_rules: Vec<String>,
}
