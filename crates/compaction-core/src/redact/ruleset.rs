//! Layer 1: the maintained ruleset (the rule data of the `nosecrets-rules` crate).

use std::sync::LazyLock;

use regex::{Regex, RegexBuilder, RegexSet, RegexSetBuilder};

use super::names::is_placeholder;
use super::{REDACTED, Spans};

struct Rule {
    re: Regex,
    group: usize,
    keywords: Vec<usize>,
    allow: Vec<Regex>,
    allow_values: Vec<String>,
}

struct Ruleset {
    rules: Vec<Rule>,
    /// One pattern of every keyword (case-insensitive), and each keyword in lower case in
    /// the order of the pattern's alternation.
    keywords: Option<RegexSet>,
    /// Whether any keyword occurs at all: one literal search, much cheaper than the set.
    any_keyword: Option<Regex>,
    keyword_list: Vec<String>,
}

/// A rule's regexes may be large; the default 10 MB program limit is raised so none is lost.
const RULE_SIZE_LIMIT: usize = 64 << 20;

static RULESET: LazyLock<Ruleset> = LazyLock::new(|| {
    let shipped = nosecrets_rules::load_builtin_rules().unwrap_or_default();
    let mut keyword_list: Vec<String> = Vec::new();
    let mut rules = Vec::new();
    for r in &shipped {
        let Ok(re) = RegexBuilder::new(&r.pattern)
            .size_limit(RULE_SIZE_LIMIT)
            .build()
        else {
            continue;
        };
        let keywords = r
            .keywords
            .iter()
            .map(|k| {
                let k = k.to_lowercase();
                match keyword_list.iter().position(|x| *x == k) {
                    Some(i) => i,
                    None => {
                        keyword_list.push(k);
                        keyword_list.len() - 1
                    }
                }
            })
            .collect();
        let (allow, allow_values) = match &r.allow {
            Some(a) => (
                a.patterns
                    .iter()
                    .filter_map(|p| Regex::new(p).ok())
                    .collect(),
                a.values.clone(),
            ),
            None => (Vec::new(), Vec::new()),
        };
        let group = if re.captures_len() > r.capture {
            r.capture
        } else {
            0
        };
        rules.push(Rule {
            re,
            group,
            keywords,
            allow,
            allow_values,
        });
    }
    // A set, not one alternation: keywords overlap (`discord` and `discord.com/api/webhooks`)
    // and each must be seen.
    let keywords = (!keyword_list.is_empty()).then(|| {
        RegexSetBuilder::new(keyword_list.iter().map(|k| regex::escape(k)))
            .case_insensitive(true)
            .build()
            .expect("escaped keywords form a valid regex set")
    });
    let any_keyword = (!keyword_list.is_empty()).then(|| {
        let alternation: Vec<String> = keyword_list.iter().map(|k| regex::escape(k)).collect();
        RegexBuilder::new(&alternation.join("|"))
            .case_insensitive(true)
            .build()
            .expect("escaped keywords form a valid regex")
    });
    Ruleset {
        rules,
        keywords,
        any_keyword,
        keyword_list,
    }
});

pub(super) fn ruleset_spans(t: &str, out: &mut Spans) {
    let set = &*RULESET;
    let mut present = vec![false; set.keyword_list.len()];
    if let Some(k) = &set.keywords
        && set.any_keyword.as_ref().is_none_or(|a| a.is_match(t))
    {
        for i in k.matches(t).iter() {
            present[i] = true;
        }
    }
    for rule in &set.rules {
        if !rule.keywords.is_empty() && !rule.keywords.iter().any(|&k| present[k]) {
            continue;
        }
        for c in rule.re.captures_iter(t) {
            let Some(m) = c.get(rule.group).or_else(|| c.get(0)) else {
                continue;
            };
            let secret = m.as_str();
            if secret.is_empty()
                || secret.contains(REDACTED)
                || is_placeholder(secret)
                || rule.allow_values.iter().any(|v| v == secret)
                || rule.allow.iter().any(|a| a.is_match(secret))
            {
                continue;
            }
            out.push((m.start(), m.end()));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::RULESET;

    #[test]
    fn the_ruleset_is_in_force() {
        // Some rules might not compile under this regex engine; every one does today.
        let in_force = RULESET.rules.len();
        let shipped = nosecrets_rules::load_builtin_rules()
            .unwrap_or_default()
            .len();
        assert!(
            shipped >= 40,
            "the maintained ruleset ships {shipped} rules"
        );
        assert_eq!(in_force, shipped, "every shipped rule compiles");
    }
}
