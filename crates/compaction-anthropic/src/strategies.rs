use proptest::prelude::*;
use serde_json::{Value, json};

/// Text with the characters that stress escaping and token estimates.
fn text() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{1,40}",
        "[a-z]{1,8}( [a-z]{1,8}){0,60}",
        Just("café \"quoted\" \\ back\nslash\ttab".to_owned()),
        Just("日本語のテキスト、한국어 텍스트".to_owned()),
        (1usize..40).prop_map(|n| "output line\n".repeat(n * 10)),
    ]
}

fn cache_control() -> impl Strategy<Value = Option<Value>> {
    prop_oneof![3 => Just(None), 1 => Just(Some(json!({"type": "ephemeral"})))]
}

fn with_cache(mut block: Value, cc: Option<Value>) -> Value {
    if let (Some(cc), Some(obj)) = (cc, block.as_object_mut()) {
        obj.insert("cache_control".into(), cc);
    }
    block
}

/// A `thinking` block with a signature, or a `redacted_thinking` block.
fn thinking() -> impl Strategy<Value = Value> {
    prop_oneof![
        (text(), "[A-Za-z0-9+/]{16,64}").prop_map(
            |(t, s)| json!({"type": "thinking", "thinking": t, "signature": format!("{s}==")})
        ),
        "[A-Za-z0-9+/]{16,64}".prop_map(|d| json!({"type": "redacted_thinking", "data": d})),
    ]
}

/// One tool round: the assistant's reply (optional thinking and text, 1-3 calls) and the
/// user turn with the results (optionally followed by a text block).
fn round(n: usize) -> impl Strategy<Value = (Value, Value)> {
    (
        proptest::option::of(thinking()),
        proptest::option::of(text()),
        proptest::collection::vec((text(), text(), any::<bool>(), cache_control()), 1..4),
        proptest::option::of(text()),
    )
        .prop_map(move |(think, say, calls, after)| {
            let mut reply = Vec::new();
            reply.extend(think);
            if let Some(say) = say {
                reply.push(json!({"type": "text", "text": say}));
            }
            let mut results = Vec::new();
            for (k, (arg, out, error, cc)) in calls.into_iter().enumerate() {
                let id = format!("toolu_{n:03}_{k}");
                reply.push(json!({"type": "tool_use", "id": id, "name": "bash", "input": {"command": arg}}));
                let mut r = json!({"type": "tool_result", "tool_use_id": id, "content": out});
                if error {
                    r["is_error"] = Value::Bool(true);
                }
                results.push(with_cache(r, cc));
            }
            if let Some(after) = after {
                results.push(json!({"type": "text", "text": after}));
            }
            (
                json!({"role": "assistant", "content": reply}),
                json!({"role": "user", "content": results}),
            )
        })
}

/// A user turn: a string, or text blocks (with an optional mark and image).
fn user_turn() -> impl Strategy<Value = Value> {
    prop_oneof![
        text().prop_map(|t| json!({"role": "user", "content": t})),
        (text(), cache_control(), any::<bool>()).prop_map(|(t, cc, image)| {
            let mut blocks = vec![with_cache(json!({"type": "text", "text": t}), cc)];
            if image {
                blocks.push(json!({"type": "image", "source": {"type": "base64", "media_type": "image/png", "data": "iVBORw0KGgo="}}));
            }
            json!({"role": "user", "content": blocks})
        }),
    ]
}

/// A valid Anthropic transcript as JSON lines: turns of a user message, tool rounds and a
/// closing reply (thinking optional). About one line in five escapes its non-ASCII text
/// (`\u00e9`), as some writers do, so the byte-exact paths are exercised too.
pub fn transcript() -> impl Strategy<Value = Vec<String>> {
    proptest::collection::vec(
        (
            user_turn(),
            proptest::collection::vec(round(0), 0..4),
            proptest::option::of(thinking()),
            text(),
        ),
        1..10,
    )
    .prop_flat_map(|turns| {
        let n = turns.iter().map(|t| t.1.len() * 2 + 2).sum::<usize>();
        (Just(turns), proptest::collection::vec(0u8..5, n))
    })
    .prop_map(|(turns, escapes)| {
        let mut values = Vec::new();
        let mut round_no = 0;
        for (user, rounds, think, close) in turns {
            values.push(user);
            for (reply, results) in rounds {
                // Unique ids across the transcript.
                let renumber = |v: &Value| {
                    let s = v
                        .to_string()
                        .replace("toolu_000_", &format!("toolu_{round_no:03}_"));
                    serde_json::from_str::<Value>(&s).unwrap_or(Value::Null)
                };
                values.push(renumber(&reply));
                values.push(renumber(&results));
                round_no += 1;
            }
            let mut blocks = Vec::new();
            blocks.extend(think);
            blocks.push(json!({"type": "text", "text": close}));
            values.push(json!({"role": "assistant", "content": blocks}));
        }
        values
            .iter()
            .zip(escapes.iter().chain(std::iter::repeat(&1)))
            .map(|(v, &e)| {
                let s = v.to_string();
                if e == 0 { escape_non_ascii(&s) } else { s }
            })
            .collect()
    })
}

/// JSON text with every non-ASCII character written as `\uXXXX` (valid: such characters
/// occur only inside strings).
fn escape_non_ascii(s: &str) -> String {
    let mut out = String::with_capacity(s.len());
    for c in s.chars() {
        if c.is_ascii() {
            out.push(c);
        } else {
            let mut buf = [0u16; 2];
            for u in c.encode_utf16(&mut buf) {
                out.push_str(&format!("\\u{u:04x}"));
            }
        }
    }
    out
}
