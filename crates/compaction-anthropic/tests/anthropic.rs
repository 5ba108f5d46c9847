//! The Anthropic Messages dialect: byte-identical round trips (converted fixtures, the raw pi
//! log's messages, generated transcripts), and batch and micro passes over Anthropic
//! transcripts that keep the laws, the thinking blocks' bytes and the cache marks' places.

use compaction_anthropic::{self as anthropic, strategies as anthropic_strategies};
use compaction_core::batch::{self, BatchConfig, BatchRequest, BatchStep};
use compaction_core::laws::{self, Pass, PassKind};
use compaction_core::micro::{
    self, MicroConfig, MicroEvent, MicroHook, MicroPlanner, MicroRequest, MicroStep,
};
use compaction_core::{Estimator, Message, Transcript, validate};
use proptest::prelude::*;
use serde_json::value::RawValue;
use serde_json::{Value, json};

/// A fixture's chat messages as Anthropic messages: system text as a user message, calls as
/// `tool_use` blocks (the arguments parsed as the input), a run of results as one user
/// message of `tool_result` blocks, with the user message that follows it as a text block.
fn to_anthropic_values(msgs: &[Message]) -> Vec<Value> {
    let mut out: Vec<Value> = Vec::new();
    let mut pending: Vec<Value> = Vec::new();
    let flush = |pending: &mut Vec<Value>, out: &mut Vec<Value>| {
        if !pending.is_empty() {
            out.push(json!({"role": "user", "content": std::mem::take(pending)}));
        }
    };
    for m in msgs {
        if m.is_tool() {
            pending.push(json!({
                "type": "tool_result",
                "tool_use_id": m.tool_call_id().unwrap_or(""),
                "content": m.text(),
            }));
            continue;
        }
        if m.is_assistant() {
            flush(&mut pending, &mut out);
            if m.has_tool_calls() {
                let mut blocks = Vec::new();
                if m.has_visible_text() {
                    blocks.push(json!({"type": "text", "text": m.text()}));
                }
                for c in m.tool_calls() {
                    let input = serde_json::from_str::<Value>(&c.function.arguments)
                        .ok()
                        .filter(Value::is_object)
                        .unwrap_or_else(|| json!({"raw": c.function.arguments}));
                    blocks.push(json!({"type": "tool_use", "id": c.id, "name": c.function.name, "input": input}));
                }
                out.push(json!({"role": "assistant", "content": blocks}));
            } else {
                out.push(json!({"role": "assistant", "content": m.text()}));
            }
            continue;
        }
        if !pending.is_empty() && m.is_user() {
            pending.push(json!({"type": "text", "text": m.text()}));
            flush(&mut pending, &mut out);
            continue;
        }
        flush(&mut pending, &mut out);
        out.push(json!({"role": "user", "content": m.text()}));
    }
    flush(&mut pending, &mut out);
    out
}

fn escape_non_ascii(s: &str) -> String {
    let mut out = String::new();
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

#[test]
fn converted_fixture_messages_round_trip_byte_identical() {
    let Some(fixtures) = test_support::fixture_bytes() else {
        return;
    };
    for (name, bytes) in fixtures {
        let chat = compaction_core::parse::parse_transcript(&bytes).unwrap().0;
        // The chat fixture itself is no Anthropic transcript.
        assert!(
            !anthropic::looks_like(std::str::from_utf8(&bytes).unwrap()),
            "{name}"
        );
        let values = to_anthropic_values(&chat);
        for escaped in [false, true] {
            let mut text = String::new();
            for v in &values {
                let line = v.to_string();
                text.push_str(&if escaped {
                    escape_non_ascii(&line)
                } else {
                    line
                });
                text.push('\n');
            }
            let has_blocks = values.iter().any(|v| v["content"].is_array());
            assert_eq!(
                anthropic::looks_like(&text),
                has_blocks,
                "{name}: detection"
            );
            let msgs = anthropic::parse(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
            assert!(
                anthropic::to_jsonl(&msgs) == text,
                "{name} (escaped: {escaped}): not byte-identical"
            );
            // The pairing is the fixture's: same calls, same results, in order.
            let ids = |m: &[Message]| -> (Vec<String>, Vec<String>) {
                (
                    m.iter()
                        .flat_map(|m| m.tool_calls().iter().map(|c| c.id.clone()))
                        .collect(),
                    m.iter()
                        .filter_map(|m| m.tool_call_id().map(str::to_owned))
                        .collect(),
                )
            };
            assert_eq!(ids(&msgs), ids(&chat), "{name}");
            let before = validate::validate(&chat).issues.len();
            assert_eq!(validate::validate(&msgs).issues.len(), before, "{name}");
        }
    }
}

#[test]
fn the_raw_pi_logs_messages_round_trip_byte_identical() {
    let Some(raw) = test_support::raw_fixtures_dir() else {
        return;
    };
    let log = std::fs::read_to_string(raw.join("pi/large-session.jsonl")).unwrap();
    #[derive(serde::Deserialize)]
    struct Entry<'a> {
        #[serde(borrow)]
        message: Option<&'a RawValue>,
    }
    let mut text = String::new();
    for line in log.lines() {
        let entry: Entry<'_> = serde_json::from_str(line).unwrap();
        if let Some(m) = entry.message {
            text.push_str(m.get());
            text.push('\n');
        }
    }
    assert!(text.lines().count() > 900);
    let msgs = anthropic::parse(&text).unwrap();
    assert!(
        anthropic::to_jsonl(&msgs) == text,
        "pi messages are not byte-identical"
    );
    // An array of the same messages round-trips message by message too.
    let array = format!("[{}]", text.trim_end().replace('\n', ","));
    let from_array = anthropic::parse(&array).unwrap();
    assert!(anthropic::to_jsonl(&from_array) == text);
}

/// The raw text of each thinking or redacted-thinking block of Anthropic message lines.
fn thinking_blocks(lines: &[String]) -> Vec<String> {
    #[derive(serde::Deserialize)]
    struct M<'a> {
        #[serde(borrow)]
        content: Option<&'a RawValue>,
    }
    let mut out = Vec::new();
    for line in lines {
        let m: M<'_> = serde_json::from_str(line).unwrap();
        let Some(c) = m.content else { continue };
        let Ok(blocks) = serde_json::from_str::<Vec<&RawValue>>(c.get()) else {
            continue;
        };
        for b in blocks {
            let v: Value = serde_json::from_str(b.get()).unwrap();
            if matches!(v["type"].as_str(), Some("thinking" | "redacted_thinking")) {
                out.push(b.get().to_owned());
            }
        }
    }
    out
}

/// What every pass over an Anthropic transcript must keep, beyond the laws: the output is a
/// valid Anthropic transcript whose `tool_use`s are answered by the next user message, every
/// thinking block in it is byte-identical to one of the input's, the thinking blocks of every
/// assistant message the pass kept are all there, and no library summary carries a cache mark.
fn check_dialect(input: &[String], before: &[Message], after: &[Message]) -> Result<(), String> {
    let out = anthropic::to_messages(after);
    let reparsed =
        anthropic::parse(&out.join("\n")).map_err(|e| format!("output does not parse: {e}"))?;
    if anthropic::to_messages(&reparsed) != out {
        return Err("output does not round-trip".into());
    }
    let values: Vec<Value> = out
        .iter()
        .map(|s| serde_json::from_str(s).unwrap())
        .collect();
    for (k, v) in values.iter().enumerate() {
        let uses: Vec<&str> = v["content"]
            .as_array()
            .map(|b| {
                b.iter()
                    .filter(|b| b["type"] == "tool_use")
                    .filter_map(|b| b["id"].as_str())
                    .collect()
            })
            .unwrap_or_default();
        if uses.is_empty() {
            continue;
        }
        let next = values.get(k + 1).and_then(|n| n["content"].as_array());
        for id in uses {
            let answered = next.is_some_and(|b| {
                b.iter()
                    .any(|b| b["type"] == "tool_result" && b["tool_use_id"] == id)
            });
            // A call the input never answered (none here) would be the only exception.
            if !answered {
                return Err(format!(
                    "tool_use of message {k} is not answered by the next message"
                ));
            }
        }
    }
    let input_thinking = thinking_blocks(input);
    let output_thinking = thinking_blocks(&out);
    for t in &output_thinking {
        if !input_thinking.contains(t) {
            return Err("a thinking block changed".into());
        }
    }
    // Kept assistant messages (same tool calls or same pristine body) keep their blocks.
    let kept: Vec<&Message> = before
        .iter()
        .filter(|m| m.is_assistant() && after.iter().any(|a| a.to_wire_json() == m.to_wire_json()))
        .collect();
    for m in kept {
        if let Some(compaction_core::Content::Parts(parts)) = m.content() {
            for p in parts {
                if matches!(p.kind(), Some("thinking" | "redacted_thinking"))
                    && !output_thinking
                        .iter()
                        .any(|t| serde_json::from_str::<Value>(t).unwrap() == p.0)
                {
                    return Err("a kept assistant message lost a thinking block".into());
                }
            }
        }
    }
    // Cache marks: a summary never carries one, and every mark in the output sits on a block
    // of the input (a tool result keeps its mark when pruning shortened its content).
    for m in after.iter().filter(|m| m.marker_kind().is_some()) {
        let summary_part_marked = match m.content() {
            Some(compaction_core::Content::Parts(parts)) => parts
                .first()
                .is_some_and(|p| p.0.get("cache_control").is_some()),
            _ => m.to_wire_json().contains("cache_control"),
        };
        if summary_part_marked {
            return Err("a summary carries a cache mark".into());
        }
    }
    let marked = |lines: &[String]| -> Vec<Value> {
        let mut out = Vec::new();
        for l in lines {
            let v: Value = serde_json::from_str(l).unwrap();
            for b in v["content"].as_array().into_iter().flatten() {
                if b.get("cache_control").is_some() {
                    out.push(if b["type"] == "tool_result" {
                        json!({"tool_use_id": b["tool_use_id"], "cache_control": b["cache_control"]})
                    } else {
                        b.clone()
                    });
                }
            }
        }
        out
    };
    let input_marks = marked(input);
    for m in marked(&out) {
        if !input_marks.contains(&m) {
            return Err("a cache mark moved to a block that did not carry it".into());
        }
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    #[test]
    fn generated_transcripts_round_trip(lines in anthropic_strategies::transcript()) {
        let text = lines.join("\n") + "\n";
        let msgs = anthropic::parse(&text).unwrap();
        prop_assert_eq!(anthropic::to_jsonl(&msgs), text);
        prop_assert!(validate::validate(&msgs).issues.is_empty(), "{:?}", validate::validate(&msgs).issues);
    }

    /// Whatever parses writes back byte-identical: unknown top-level keys in front, unknown
    /// block keys, spacing, escapes; and no cut of a line panics.
    #[test]
    fn any_readable_transcript_writes_back_byte_identical(
        lines in anthropic_strategies::transcript(),
        ops in proptest::collection::vec(0u8..5, 64),
        cut in any::<prop::sample::Index>(),
    ) {
        let mutated: Vec<String> = lines
            .iter()
            .zip(ops.iter().cycle())
            .map(|(l, op)| match op {
                1 => format!("{{\"x_unknown\":[1,{{\"a\":null}}],{}", &l[1..]),
                2 => l.replacen("[{", "[{\"zz\":{\"deep\":[true]},", 1),
                3 => format!("{{ {} }}", &l[1..l.len() - 1]),
                4 => escape_non_ascii(l),
                _ => l.clone(),
            })
            .collect();
        let text = mutated.join("\n") + "\n";
        let msgs = anthropic::parse(&text).unwrap();
        prop_assert!(anthropic::to_jsonl(&msgs) == text, "not byte-identical");
        let at = cut.index(text.len());
        if text.is_char_boundary(at) {
            let _ = anthropic::parse(&text[..at]);
        }
    }

    #[test]
    fn batch_passes_keep_the_laws_and_the_thinking_blocks(
        lines in anthropic_strategies::transcript(),
        threshold in 300u64..6_000,
        prune_only in any::<bool>(),
    ) {
        let e = Estimator::default();
        let msgs = anthropic::parse(&(lines.join("\n") + "\n")).unwrap();
        let t = Transcript::new(msgs, &e);
        let cfg = BatchConfig::default();
        let req = BatchRequest { prune_only, ..BatchRequest::default() };
        let plan = batch::plan_batch(&t, threshold, &cfg, &req, &e);
        let summaries: Vec<String> = match &plan.step {
            BatchStep::Summarize(jobs) => jobs.iter().map(|j| format!("## Goal\n- {} messages", j.range.len())).collect(),
            _ => Vec::new(),
        };
        let applied = !matches!(plan.step, BatchStep::Nothing(_));
        let after = if applied {
            batch::assemble(&t, &plan, &summaries, &cfg).unwrap().apply(t.messages()).unwrap()
        } else {
            t.messages().to_vec()
        };
        // A plan of nothing, not applied, is an unchanged pass: the plan names it.
        let mut pass = Pass::of_batch(&plan, &cfg, PassKind::Batch);
        // Law 8 (progress) is asserted when the summarized spans outweigh a summary marker:
        // the planner can summarize one short user message into a longer marker (a planner
        // issue of its own, in chat form too: the text after tool results in one Anthropic
        // user turn is such a message).
        let summarized: u64 = match &plan.step {
            BatchStep::Summarize(jobs) => jobs.iter().map(|j| t.tokens_in(j.range.clone())).sum(),
            _ => u64::MAX,
        };
        pass.options.expect_progress &= summarized > 400;
        let v = laws::check(t.messages(), &after, &pass, &e);
        prop_assert!(v.is_empty(), "{v:?}");
        if let Err(why) = check_dialect(&lines, t.messages(), &after) {
            prop_assert!(false, "{}", why);
        }
    }

    #[test]
    fn micro_passes_keep_the_laws_and_the_thinking_blocks(
        lines in anthropic_strategies::transcript(),
        threshold in 300u64..6_000,
    ) {
        let e = Estimator::default();
        let msgs = anthropic::parse(&(lines.join("\n") + "\n")).unwrap();
        let mut t = Transcript::new(msgs, &e);
        let cfg = MicroConfig::default();
        let mut planner = MicroPlanner::default();
        for _ in 0..6 {
            let plan = planner.plan(&MicroRequest { transcript: &t, hook: MicroHook::Turn, threshold_tokens: threshold, compacted: true, config: &cfg, counter: &e });
            planner.record(MicroEvent::Planned(&plan));
            if !matches!(plan.step, MicroStep::Absorb(_) | MicroStep::Defrag(_)) {
                break;
            }
            let before = t.messages().to_vec();
            let out = micro::assemble_micro(&t, &plan, "Ran bash; files changed.", &cfg, &e).unwrap();
            planner.record(MicroEvent::Assembled(&out));
            let pass = Pass::of_micro(&plan, &cfg, Some(&out));
            if let Some(edit) = out.edit() {
                edit.clone().apply_to(&mut t, &e).unwrap();
            }
            let v = laws::check(&before, t.messages(), &pass, &e);
            prop_assert!(v.is_empty(), "{v:?}");
            if let Err(why) = check_dialect(&lines, &before, t.messages()) {
                prop_assert!(false, "{}", why);
            }
        }
    }
}

#[test]
fn a_signed_thinking_block_survives_pruning_of_its_own_message_byte_for_byte() {
    // Non-canonical bytes (escaped non-ASCII, spaced) in the thinking block of a message whose
    // long arguments a prune pass shortens: the message changes, the block does not.
    let thinking =
        r#"{"type":"thinking", "thinking":"caf\u00e9 plan","signature":"EuYBCkQYAiJA=="}"#;
    let long = "x".repeat(4_000);
    let mut lines = vec![r#"{"role":"user","content":"start"}"#.to_owned()];
    for i in 0..6 {
        lines.push(format!(
            r#"{{"role":"assistant","content":[{thinking},{{"type":"tool_use","id":"t{i}","name":"write","input":{{"path":"a{i}","text":"{long}"}}}}]}}"#
        ));
        lines.push(format!(
            r#"{{"role":"user","content":[{{"type":"tool_result","tool_use_id":"t{i}","content":"{long}"}}]}}"#
        ));
    }
    lines.push(r#"{"role":"assistant","content":"done"}"#.to_owned());
    lines.push(r#"{"role":"user","content":"next"}"#.to_owned());
    let e = Estimator::default();
    let msgs = anthropic::parse(&(lines.join("\n") + "\n")).unwrap();
    let t = Transcript::new(msgs, &e);
    let cfg = BatchConfig::default();
    let req = BatchRequest {
        force: true,
        prune_only: true,
        ..BatchRequest::default()
    };
    let plan = batch::plan_batch(&t, 2_000, &cfg, &req, &e);
    assert!(
        matches!(plan.step, BatchStep::PruneOnly { .. }),
        "{:?}",
        plan.step
    );
    let after = batch::assemble(&t, &plan, &[], &cfg)
        .unwrap()
        .apply(t.messages())
        .unwrap();
    let out = anthropic::to_messages(&after);
    let changed_assistants = out
        .iter()
        .zip(&lines)
        .filter(|(o, l)| o.contains("\"type\":\"tool_use\"") && o != l)
        .count();
    assert!(
        changed_assistants > 0,
        "the prune pass changed no assistant message"
    );
    for o in out.iter().filter(|o| o.contains("\"type\":\"tool_use\"")) {
        assert!(o.contains(thinking), "{}", &o[..200.min(o.len())]);
    }
    check_dialect(&lines, t.messages(), &after).unwrap();
}
