//! Retention: the share of the session's facts so far that the prompt still holds.
//!
//! The facts of a session are what an agent needs to keep working: every file path named in
//! a tool call's arguments (keys ending in `path`, `file`, `filename`, or a `paths` list),
//! every shell command run (the `command` or `cmd` argument, its first line, at most
//! [`MAX_FACT_CHARS`] characters), and the latest user message (verbatim). A fact is held
//! when its text occurs in the wire JSON of some message of the prompt: verbatim, inside a
//! summary, or inside another call's arguments (the text is looked for JSON-escaped once and
//! twice, since arguments are a JSON string inside the message's JSON).
//!
//! The search is incremental: a fact found in message `i` stays found while message `i`'s
//! digest is unchanged, and a fact not found is only looked for again in messages appended
//! since, until a compaction pass rewrites the prompt.

use std::collections::HashSet;

use hermes_compaction::core::Message;

/// Longest fact kept, in characters (longer commands are cut at a character boundary).
pub const MAX_FACT_CHARS: usize = 200;

/// One message of the prompt as sent: its compact wire JSON, the JSON's Unicode scalar value
/// count and its digest.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct Wire {
    /// What `to_wire_json` returns.
    pub json: String,
    /// Unicode scalar values of `json`.
    pub chars: u64,
    /// [`digest`] of `json`.
    pub hash: u64,
}

impl Wire {
    /// The wire form of `m`.
    pub fn of(m: &Message) -> Wire {
        let json = m.to_wire_json();
        Wire {
            chars: json.chars().count() as u64,
            hash: digest(&json),
            json,
        }
    }

    /// Tokens in the issue units: `ceil(chars / 4)`.
    pub fn units(&self) -> u64 {
        self.chars.div_ceil(4)
    }
}

/// A stable 64-bit digest of `text`: FNV-1a over its UTF-8 bytes (the same on every
/// platform and release; written as 16 lowercase hex digits in traces).
pub fn digest(text: &str) -> u64 {
    let mut h: u64 = 0xcbf2_9ce4_8422_2325;
    for b in text.bytes() {
        h ^= u64::from(b);
        h = h.wrapping_mul(0x0000_0100_0000_01b3);
    }
    h
}

#[derive(Clone, Debug)]
enum State {
    /// Not looked for yet.
    New,
    /// Found in the message at this index with this digest.
    At { index: usize, hash: u64 },
    /// Not found in the messages before `upto` of this generation of the prompt.
    Missing { generation: u64, upto: usize },
}

#[derive(Clone, Debug)]
struct Fact {
    needles: Vec<String>,
    state: State,
}

impl Fact {
    fn new(text: &str) -> Fact {
        let once = escape(text);
        let twice = escape(&once);
        let mut needles = vec![once];
        if twice != needles[0] {
            needles.push(twice);
        }
        Fact {
            needles,
            state: State::New,
        }
    }

    fn held(&mut self, prompt: &[Wire], generation: u64) -> bool {
        let from = match self.state {
            State::At { index, hash } if prompt.get(index).is_some_and(|w| w.hash == hash) => {
                return true;
            }
            State::Missing {
                generation: g,
                upto,
            } if g == generation => upto.min(prompt.len()),
            _ => 0,
        };
        let found = prompt[from..]
            .iter()
            .position(|w| self.needles.iter().any(|n| w.json.contains(n.as_str())));
        self.state = match found {
            Some(k) => State::At {
                index: from + k,
                hash: prompt[from + k].hash,
            },
            None => State::Missing {
                generation,
                upto: prompt.len(),
            },
        };
        found.is_some()
    }
}

/// The facts of one session so far, and where they were last seen.
#[derive(Clone, Debug, Default)]
pub struct Retention {
    seen: HashSet<String>,
    facts: Vec<Fact>,
    latest_user: Option<Fact>,
    generation: u64,
}

impl Retention {
    /// Records the facts `m` adds to the session (call it for every message as the agent
    /// appends it, before any trimming).
    pub fn observe(&mut self, m: &Message) {
        if m.is_user() {
            let text = m.text();
            let text = text.trim();
            self.latest_user = (!text.is_empty()).then(|| Fact::new(text));
        }
        for call in m.tool_calls() {
            let Ok(serde_json::Value::Object(args)) =
                serde_json::from_str::<serde_json::Value>(&call.function.arguments)
            else {
                continue;
            };
            for (key, value) in &args {
                for fact in facts_of(key, value) {
                    if self.seen.insert(fact.clone()) {
                        self.facts.push(Fact::new(&fact));
                    }
                }
            }
        }
    }

    /// The prompt was rewritten (a compaction pass): earlier misses must be looked for again.
    pub fn rewritten(&mut self) {
        self.generation += 1;
    }

    /// Facts so far.
    pub fn len(&self) -> usize {
        self.facts.len() + usize::from(self.latest_user.is_some())
    }

    /// Whether there are no facts yet.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The share of the facts so far that `prompt` holds (1 when there are none).
    pub fn share(&mut self, prompt: &[Wire]) -> f64 {
        let total = self.len();
        if total == 0 {
            return 1.0;
        }
        let generation = self.generation;
        let mut held = 0usize;
        for f in self.facts.iter_mut().chain(self.latest_user.as_mut()) {
            held += usize::from(f.held(prompt, generation));
        }
        held as f64 / total as f64
    }
}

/// The facts in one argument: paths under path-like keys, the first line of commands.
fn facts_of(key: &str, value: &serde_json::Value) -> Vec<String> {
    let key = key.to_ascii_lowercase();
    let pathlike = key.ends_with("path") || matches!(key.as_str(), "file" | "filename");
    let command = matches!(key.as_str(), "command" | "cmd");
    let strings: Vec<&str> = match value {
        serde_json::Value::String(s) => vec![s.as_str()],
        serde_json::Value::Array(items) if key == "paths" || command => {
            items.iter().filter_map(|v| v.as_str()).collect()
        }
        _ => Vec::new(),
    };
    if key == "paths" {
        return strings.into_iter().filter_map(path_fact).collect();
    }
    if pathlike {
        return strings.into_iter().filter_map(path_fact).collect();
    }
    if command && !strings.is_empty() {
        let joined = strings.join(" ");
        let line = joined.lines().map(str::trim).find(|l| !l.is_empty());
        return line.map(|l| cut(l).to_owned()).into_iter().collect();
    }
    Vec::new()
}

fn path_fact(s: &str) -> Option<String> {
    let s = s.trim();
    (!s.is_empty() && !s.contains('\n') && s.chars().count() <= MAX_FACT_CHARS)
        .then(|| s.to_owned())
}

fn cut(s: &str) -> &str {
    match s.char_indices().nth(MAX_FACT_CHARS) {
        Some((i, _)) => &s[..i],
        None => s,
    }
}

/// `s` as it appears inside a JSON string (without the quotes).
fn escape(s: &str) -> String {
    let quoted = serde_json::to_string(s).unwrap_or_default();
    quoted
        .get(1..quoted.len().saturating_sub(1))
        .unwrap_or_default()
        .to_owned()
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_compaction::core::ToolCall;

    fn call(args: &str) -> Message {
        Message::assistant_tool_calls("", vec![ToolCall::function("c1", "bash", args)])
    }

    fn wires(msgs: &[Message]) -> Vec<Wire> {
        msgs.iter().map(Wire::of).collect()
    }

    #[test]
    fn paths_commands_and_the_latest_user_message_are_facts() {
        let mut r = Retention::default();
        let msgs = vec![
            Message::user("fix the parser"),
            call(r#"{"command":"cargo test -p \"core\"\nsecond line","timeout":5}"#),
            call(r#"{"file_path":"src/lib.rs","old_string":"x"}"#),
            call(r#"{"paths":["alpha.rs","beta.rs"],"path":"src/lib.rs"}"#),
        ];
        for m in &msgs {
            r.observe(m);
        }
        // cargo test..., src/lib.rs, alpha.rs, beta.rs, and the user message.
        assert_eq!(r.len(), 5);
        assert_eq!(r.share(&wires(&msgs)), 1.0);
        // A summary that kept the command and one path, and the user message verbatim.
        let summary = Message::user(
            "Summary: ran `cargo test -p \"core\"`; edited src/lib.rs.\nfix the parser",
        );
        r.rewritten();
        let share = r.share(&wires(&[summary]));
        assert!((share - 3.0 / 5.0).abs() < 1e-12, "{share}");
        // Nothing left.
        r.rewritten();
        assert_eq!(r.share(&[]), 0.0);
    }

    #[test]
    fn a_fact_found_stays_found_until_its_message_changes() {
        let mut r = Retention::default();
        let m = call(r#"{"path":"x/y.txt"}"#);
        r.observe(&m);
        let mut prompt = wires(&[Message::system("s"), m]);
        assert_eq!(r.share(&prompt), 1.0);
        prompt[1] = Wire::of(&Message::assistant("gone"));
        assert_eq!(r.share(&prompt), 0.0);
        prompt.push(Wire::of(&Message::assistant("read x/y.txt again")));
        assert_eq!(r.share(&prompt), 1.0);
    }

    #[test]
    fn the_digest_is_fnv1a() {
        assert_eq!(digest(""), 0xcbf2_9ce4_8422_2325);
        assert_eq!(digest("a"), 0xaf63_dc4c_8601_ec8c);
    }
}
