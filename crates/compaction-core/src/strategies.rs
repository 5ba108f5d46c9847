//! Proptest strategies that generate valid transcripts (cargo feature `proptest`).
//!
//! Downstream frameworks can property-test their own transcript code with these. Every
//! generated transcript validates clean ([`validate`](crate::validate::validate) reports
//! nothing): tool-call ids are unique, and every call is answered by a result directly after
//! its assistant message. What they cover:
//!
//! - an optional system prompt, then user turns;
//! - assistants with and without tool calls, parallel tool calls, and several tool rounds
//!   within one turn (the last turn may end mid-loop, after tool results);
//! - Responses-style calls (`{"id": "fc_…", "call_id": "call_…", …}`, answered by the
//!   `call_id`) beside chat-style ones;
//! - multimodal user messages (text and `image_url` parts, and an unknown part type);
//! - ASCII, CJK (ideographs, Kana, Hangul), emoji and JSON-escape-heavy text;
//! - occasionally very large tool outputs (50K+ characters; rare by default so tests stay
//!   fast, see [`TranscriptConfig::large_output_weight`]);
//! - fields the library does not know (`reasoning_content`, timestamps, provider ids, nested
//!   objects), so losslessness is exercised: every message is built as JSON text and parsed,
//!   exactly as a transcript file would be.
//!
//! ```
//! use compaction_core::strategies;
//! use compaction_core::validate::validate;
//! use proptest::prelude::*;
//! use proptest::test_runner::TestRunner;
//!
//! let mut runner = TestRunner::default();
//! runner
//!     .run(&strategies::transcript(), |messages| {
//!         prop_assert!(validate(&messages).is_clean());
//!         Ok(())
//!     })
//!     .unwrap();
//! ```

use proptest::prelude::*;
use proptest::sample::select;
use serde_json::{Map, Value, json};

use crate::marker;
use crate::message::{MarkerKind, Message, Role};
use crate::regions::{RegionConfig, WindowConfig};

/// Sizes and frequencies of generated transcripts.
#[derive(Clone, Debug, PartialEq)]
pub struct TranscriptConfig {
    /// Most user turns (at least one is generated). Default 8.
    pub max_turns: usize,
    /// Most tool rounds (assistant with calls, then results) in one turn. Default 4.
    pub max_tool_rounds: usize,
    /// Most parallel calls in one assistant message. Default 3.
    pub max_parallel_calls: usize,
    /// Most characters of one ordinary text. Default 120.
    pub max_text_chars: usize,
    /// Relative weight of a very large tool output against 100 ordinary ones. Default 1.
    pub large_output_weight: u32,
    /// Characters of a very large tool output (lower bound; up to 10% more). Default 50,000.
    pub large_output_chars: usize,
}

impl Default for TranscriptConfig {
    fn default() -> Self {
        TranscriptConfig {
            max_turns: 8,
            max_tool_rounds: 4,
            max_parallel_calls: 3,
            max_text_chars: 120,
            large_output_weight: 1,
            large_output_chars: 50_000,
        }
    }
}

/// A token budget to partition against: a window, its threshold, and region settings.
#[derive(Clone, Debug, PartialEq)]
pub struct Budget {
    /// The window the threshold was derived from (informational when the threshold is drawn
    /// directly).
    pub window: WindowConfig,
    /// The threshold to partition at.
    pub threshold_tokens: u64,
    /// Head and tail protection.
    pub regions: RegionConfig,
    /// Whether the session counts as compacted before (head decays to the system prompt).
    pub compacted: bool,
}

/// Valid transcripts with the default [`TranscriptConfig`].
pub fn transcript() -> BoxedStrategy<Vec<Message>> {
    transcript_with(TranscriptConfig::default())
}

/// Valid transcripts with the given sizes.
pub fn transcript_with(cfg: TranscriptConfig) -> BoxedStrategy<Vec<Message>> {
    let turns = proptest::collection::vec(turn(&cfg), 1..=cfg.max_turns.max(1));
    (
        proptest::option::of(text(cfg.max_text_chars * 4)),
        turns,
        "[a-z]{0,6}",
    )
        .prop_map(|(system, turns, id_prefix)| assemble(system, turns, &id_prefix))
        .boxed()
}

/// Valid transcripts that already carry summary markers (rendered with
/// [`marker::render`]): a batch marker after the system prompt, a micro marker before some
/// later user message, and a turn-progress marker after the latest user message, each present
/// or not. Markers sit only at turn boundaries, so tool groups stay whole and the transcript
/// still validates clean. One case in four is a session whose user turns have no text (blank
/// or an image), compacted before: its batch marker is assistant-role, after the
/// [continuation](marker::continuation) (issue 21, item 14).
pub fn transcript_with_markers() -> BoxedStrategy<Vec<Message>> {
    (
        transcript(),
        proptest::option::of(marker_body()),
        proptest::option::of((any::<prop::sample::Index>(), marker_body())),
        proptest::option::of(marker_body()),
        0..4u8,
    )
        .prop_map(|(mut msgs, batch, micro, progress, textless)| {
            let textless = textless == 0;
            if textless {
                for (k, m) in msgs.iter_mut().filter(|m| m.is_user()).enumerate() {
                    let content = if k % 2 == 0 {
                        crate::Content::Text(String::new())
                    } else {
                        crate::Content::Parts(vec![crate::Part(serde_json::json!({
                            "type": "image_url",
                            "image_url": {"url": "https://example.com/screen.png"}
                        }))])
                    };
                    m.set_content(Some(content));
                }
            }
            // Insert from the back so earlier indices stay valid.
            let users: Vec<usize> = (0..msgs.len()).filter(|&i| msgs[i].is_user()).collect();
            if let (Some(body), Some(&last)) = (&progress, users.last()) {
                msgs.insert(
                    last + 1,
                    marker::render(MarkerKind::Progress, Role::Assistant, body),
                );
            }
            if let Some((at, body)) = &micro
                && users.len() > 1
            {
                // Before a user message other than the first: an earlier exchange was absorbed.
                let u = users[1 + at.index(users.len() - 1)];
                msgs.insert(u, marker::render(MarkerKind::Micro, Role::Assistant, body));
            }
            if let Some(body) = &batch {
                let sys = msgs
                    .iter()
                    .take_while(|m| m.role().is_system_like())
                    .count();
                if textless {
                    msgs.insert(sys, marker::continuation());
                    msgs.insert(
                        sys + 1,
                        marker::render(MarkerKind::Batch, Role::Assistant, body),
                    );
                } else {
                    msgs.insert(sys, marker::render(MarkerKind::Batch, Role::User, body));
                    msgs.insert(sys + 1, Message::assistant("Understood."));
                }
            }
            msgs
        })
        .boxed()
}

/// Budgets from tiny (everything is tail) to huge (everything fits), with arbitrary region
/// settings.
pub fn budget() -> BoxedStrategy<Budget> {
    let window = prop_oneof![
        1_000u64..64_000,
        64_000u64..600_000,
        Just(128_000u64),
        Just(200_000u64),
        Just(1_000_000u64),
    ]
    .prop_flat_map(|context_length| (Just(context_length), 0..=context_length / 4, 0.2f64..0.95))
    .prop_map(
        |(context_length, output_reserve_tokens, threshold)| WindowConfig {
            context_length,
            output_reserve_tokens,
            threshold,
            ..WindowConfig::default()
        },
    );
    let regions = (0usize..6, 0usize..12, 0.0f64..0.6, 1.0f64..2.0, 0usize..4).prop_map(
        |(protect_first_n, protect_last_n, tail_ratio, tail_soft_ceiling, min_users)| {
            RegionConfig {
                protect_first_n,
                protect_last_n,
                tail_ratio,
                tail_soft_ceiling,
                min_tail_user_messages: min_users,
            }
        },
    );
    (
        window,
        regions,
        any::<bool>(),
        prop_oneof![Just(None), (0u64..40_000).prop_map(Some)],
    )
        .prop_map(|(window, regions, compacted, direct)| Budget {
            threshold_tokens: direct.unwrap_or_else(|| window.threshold_tokens()),
            window,
            regions,
            compacted,
        })
        .boxed()
}

/// Text of up to `max_chars` characters: ASCII prose, CJK (ideographs, Kana, Hangul), emoji
/// and characters JSON must escape, or any Unicode scalar values.
///
/// Characters are drawn from a seeded generator rather than one strategy per character, which
/// keeps generation cheap; shrinking shortens the text.
pub fn text(max_chars: usize) -> BoxedStrategy<String> {
    (0..=max_chars, any::<u64>(), 0usize..ALPHABETS.len())
        .prop_map(|(len, seed, alphabet)| {
            let mut rng = SplitMix(seed);
            let ranges = ALPHABETS[alphabet];
            let total: u32 = ranges.iter().map(|r| r.1 - r.0 + 1).sum();
            (0..len)
                .map(|_| {
                    let mut k = (rng.next() % u64::from(total)) as u32;
                    for &(lo, hi) in ranges {
                        if k <= hi - lo {
                            return char::from_u32(lo + k).unwrap_or('\u{fffd}');
                        }
                        k -= hi - lo + 1;
                    }
                    '?'
                })
                .collect()
        })
        .boxed()
}

/// Inclusive code point ranges of each alphabet `text` draws from; ASCII prose is listed
/// twice so it is the most common.
const ALPHABETS: [&[(u32, u32)]; 5] = [
    &[(0x20, 0x7e)],
    &[(0x61, 0x7a), (0x20, 0x20), (0x0a, 0x0a)],
    &[
        (0x4e00, 0x9fa5),
        (0x3041, 0x30ff),
        (0xac00, 0xd7a3),
        (0xff01, 0xff5e),
        (0x3000, 0x3002),
        (0x61, 0x7a),
        (0x20, 0x20),
    ],
    &[
        (0x00, 0x1f),
        (0x22, 0x22),
        (0x5c, 0x5c),
        (0x2f, 0x2f),
        (0x7f, 0x7f),
        (0x2028, 0x2029),
        (0xe9, 0xe9),
        (0x1f600, 0x1f64f),
    ],
    &[(0x00, 0xd7ff), (0xe000, 0x10ffff)],
];

/// A small deterministic generator (SplitMix64) for cheap text.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }
}

/// Any string as a marker body, including ones that contain marker syntax themselves.
pub(crate) fn marker_body() -> BoxedStrategy<String> {
    prop_oneof![
        3 => text(200),
        1 => Just(format!("a\n{}\nb", marker::END_LINE)),
        1 => Just(marker::render_text(MarkerKind::Micro, "nested")),
        1 => Just(String::new()),
    ]
    .boxed()
}

// ---------------------------------------------------------------------------------------------
// Structure first, then messages: ids are assigned once the whole shape is known.

#[derive(Clone, Debug)]
struct TurnSpec {
    user: UserSpec,
    rounds: Vec<RoundSpec>,
    reply: Option<ReplySpec>,
}

#[derive(Clone, Debug)]
struct UserSpec {
    text: String,
    image: bool,
    unknown_part: bool,
    extras: Vec<Extra>,
}

#[derive(Clone, Debug)]
struct RoundSpec {
    text: Option<String>,
    calls: Vec<CallSpec>,
    extras: Vec<Extra>,
}

#[derive(Clone, Debug)]
struct CallSpec {
    name: &'static str,
    argument: String,
    output: String,
    output_extras: Vec<Extra>,
    /// A Responses-style call: an `id` of its own and the `call_id` its result answers.
    responses: bool,
}

#[derive(Clone, Debug)]
struct ReplySpec {
    text: String,
    extras: Vec<Extra>,
}

/// An unknown field and where it goes: before `role` or after everything else.
#[derive(Clone, Debug)]
struct Extra {
    key: &'static str,
    value: Value,
    first: bool,
}

const TOOL_NAMES: [&str; 6] = [
    "read_file",
    "shell",
    "search",
    "write_file",
    "web_fetch",
    "todo",
];

fn extras() -> impl Strategy<Value = Vec<Extra>> {
    let extra = prop_oneof![
        text(60).prop_map(|t| ("reasoning_content", Value::String(t))),
        (1_600_000_000u64..1_800_000_000, 0u32..1000).prop_map(|(s, ms)| {
            let v: Value = serde_json::from_str(&format!("{s}.{ms:03}")).unwrap_or(Value::Null);
            ("timestamp", v)
        }),
        "[a-f0-9]{8}".prop_map(|id| ("id", Value::String(id))),
        (any::<bool>(), text(20)).prop_map(|(b, t)| {
            (
                "provider_specific_fields",
                json!({"cached": b, "note": t, "n": [1, 2.5, null]}),
            )
        }),
    ];
    proptest::collection::vec((extra, any::<bool>()), 0..3).prop_map(|v| {
        let mut seen = Vec::new();
        v.into_iter()
            .filter(|((key, _), _)| {
                let fresh = !seen.contains(key);
                seen.push(*key);
                fresh
            })
            .map(|((key, value), first)| Extra { key, value, first })
            .collect()
    })
}

fn turn(cfg: &TranscriptConfig) -> impl Strategy<Value = TurnSpec> + use<> {
    let t = cfg.max_text_chars;
    let user = (
        text(t),
        prop::bool::weighted(0.15),
        prop::bool::weighted(0.05),
        extras(),
    )
        .prop_map(|(text, image, unknown_part, extras)| UserSpec {
            text,
            image,
            unknown_part,
            extras,
        });
    let output = prop_oneof![
        100 => text(t * 3),
        cfg.large_output_weight => (cfg.large_output_chars..=cfg.large_output_chars + cfg.large_output_chars / 10, text(16))
            .prop_map(|(n, unit)| {
                let unit = if unit.is_empty() { "line of output\n".to_owned() } else { unit };
                unit.chars().cycle().take(n).collect::<String>()
            }),
    ];
    let call = (
        select(&TOOL_NAMES[..]),
        text(t / 2),
        output,
        extras(),
        prop::bool::weighted(0.2),
    )
        .prop_map(|(name, arg, output, output_extras, responses)| CallSpec {
            name,
            argument: arg,
            output,
            output_extras,
            responses,
        });
    let round = (
        proptest::option::of(text(t)),
        proptest::collection::vec(call, 1..=cfg.max_parallel_calls.max(1)),
        extras(),
    )
        .prop_map(|(text, calls, extras)| RoundSpec {
            text,
            calls,
            extras,
        });
    let reply = (text(t), extras()).prop_map(|(text, extras)| ReplySpec { text, extras });
    (
        user,
        proptest::collection::vec(round, 0..=cfg.max_tool_rounds),
        proptest::option::weighted(0.85, reply),
    )
        .prop_map(|(user, rounds, reply)| TurnSpec {
            user,
            rounds,
            reply,
        })
}

fn assemble(system: Option<String>, turns: Vec<TurnSpec>, id_prefix: &str) -> Vec<Message> {
    let mut out = Vec::new();
    if let Some(s) = system {
        out.push(build("system", Value::String(s), &[], |_| {}));
    }
    let mut next_id = 0usize;
    let last = turns.len().saturating_sub(1);
    for (ti, turn) in turns.into_iter().enumerate() {
        out.push(user_message(&turn.user));
        let no_rounds = turn.rounds.is_empty();
        for round in turn.rounds {
            let ids: Vec<String> = round
                .calls
                .iter()
                .map(|_| {
                    next_id += 1;
                    format!("call_{id_prefix}{next_id}")
                })
                .collect();
            let calls: Vec<Value> = round
                .calls
                .iter()
                .zip(&ids)
                .map(|(c, id)| {
                    let args = json!({ "input": c.argument }).to_string();
                    let function = json!({"name": c.name, "arguments": args});
                    if c.responses {
                        // The item id differs from the call id the result answers.
                        let item = format!("fc_{}", &id["call_".len()..]);
                        json!({"id": item, "call_id": id, "type": "function", "function": function})
                    } else {
                        json!({"id": id, "type": "function", "function": function})
                    }
                })
                .collect();
            let content = round.text.map(Value::String).unwrap_or(Value::Null);
            out.push(build("assistant", content, &round.extras, |m| {
                m.insert("tool_calls".into(), Value::Array(calls.clone()));
            }));
            for (c, id) in round.calls.iter().zip(&ids) {
                out.push(build(
                    "tool",
                    Value::String(c.output.clone()),
                    &c.output_extras,
                    |m| {
                        m.insert("tool_call_id".into(), Value::String(id.clone()));
                        m.insert("name".into(), Value::String(c.name.into()));
                    },
                ));
            }
        }
        // Every turn but the last answers the user; a turn without tool rounds always does.
        let reply = match turn.reply {
            Some(r) => Some(r),
            None if ti < last || no_rounds => Some(ReplySpec {
                text: "ok".into(),
                extras: Vec::new(),
            }),
            None => None,
        };
        if let Some(r) = reply {
            out.push(build("assistant", Value::String(r.text), &r.extras, |_| {}));
        }
    }
    out
}

fn user_message(u: &UserSpec) -> Message {
    let content = if u.image || u.unknown_part {
        let mut parts = vec![json!({"type": "text", "text": u.text})];
        if u.image {
            parts.push(json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,iVBORw0KGgo=", "detail": "low"}}));
        }
        if u.unknown_part {
            parts.push(json!({"type": "input_audio", "input_audio": {"data": "UklGRg==", "format": "wav"}}));
        }
        Value::Array(parts)
    } else {
        Value::String(u.text.clone())
    };
    build("user", content, &u.extras, |_| {})
}

/// Builds a message as JSON text and parses it, the way a transcript file is read.
fn build(
    role: &str,
    content: Value,
    extras: &[Extra],
    fill: impl FnOnce(&mut Map<String, Value>),
) -> Message {
    let mut m = Map::new();
    for e in extras.iter().filter(|e| e.first) {
        m.insert(e.key.into(), e.value.clone());
    }
    m.insert("role".into(), Value::String(role.into()));
    m.insert("content".into(), content);
    fill(&mut m);
    for e in extras.iter().filter(|e| !e.first) {
        m.insert(e.key.into(), e.value.clone());
    }
    let text = Value::Object(m).to_string();
    Message::from_json(&text).expect("generated messages are valid")
}
