//! No prompt overflows the window because of a giant tool result in the protected tail (it is
//! demoted), and the fixtures replay without an overflow from 64K up.

use compaction_sim::{Options, Policy, Variant};
use hermes_compaction::Config;
use hermes_compaction::core::{Message, ToolCall, parse};

use crate::common::run;

/// About `tokens` tokens of varied command output (distinct lines, so nothing deduplicates).
fn giant_output(tokens: usize) -> String {
    let mut s = String::with_capacity(tokens * 4 + 64);
    let mut i = 0;
    while s.len() < tokens * 4 {
        s.push_str(&format!("add 'node_modules/pkg_{i}/lib/index_{i}.js'\n"));
        i += 1;
    }
    s
}

/// `turns` ordinary turns, then a turn whose last message, just before the final answer, is a
/// tool result of `giant_tokens` tokens. With `long_turn`, the final turn is long (many tool
/// rounds), so the pass splits it.
fn session(turns: usize, giant_tokens: usize, long_turn: bool) -> Vec<Message> {
    let mut msgs = vec![Message::system("You are a coding agent.")];
    for i in 0..turns {
        let id = format!("call_{i}");
        msgs.push(Message::user(format!("request {i}: look at module {i}")));
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                &id,
                "bash",
                format!("{{\"command\":\"cat src/m{i}.rs\"}}"),
            )],
        ));
        msgs.push(Message::tool_result(
            &id,
            format!("fn item_{i}() {{}}\n").repeat(300),
        ));
        msgs.push(Message::assistant(format!("module {i} read")));
    }
    msgs.push(Message::user("commit everything"));
    let rounds = if long_turn { 12 } else { 0 };
    for r in 0..rounds {
        let id = format!("round_{r}");
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                &id,
                "bash",
                format!("{{\"command\":\"git diff src/m{r}.rs\"}}"),
            )],
        ));
        msgs.push(Message::tool_result(
            &id,
            format!("+ line {r}\n").repeat(400),
        ));
    }
    msgs.push(Message::assistant_tool_calls(
        "",
        vec![ToolCall::function(
            "call_add",
            "bash",
            r#"{"command":"git add ."}"#,
        )],
    ));
    msgs.push(Message::tool_result("call_add", giant_output(giant_tokens)));
    msgs.push(Message::assistant(
        "staged; node_modules was included by mistake",
    ));
    msgs
}

fn variants(context: u64, policies: &[Policy]) -> Vec<Variant> {
    let mut config = Config::default();
    config.model.context_length = context;
    policies.iter().map(|p| p.variant(&config, 8_000)).collect()
}

#[test]
fn a_giant_tool_result_in_the_last_message_does_not_overflow() {
    for long_turn in [false, true] {
        let msgs = session(30, 120_000, long_turn);
        let sim = run(
            &[("giant.jsonl".to_owned(), msgs)],
            &variants(64_000, &[Policy::None, Policy::Batch, Policy::Micro]),
            &Options::default(),
        );
        // Without compaction the last request overflows: the test can fail.
        let none = &sim.totals[0];
        assert!(none.overflows > 0 && none.unit_overflows > 0);
        for t in &sim.totals[1..] {
            assert_eq!(
                (t.overflows, t.unit_overflows),
                (0, 0),
                "{} (long turn: {long_turn}): peak {} units",
                t.policy,
                t.unit_peak_tokens
            );
        }
    }
}

#[test]
fn the_fixtures_never_overflow_from_64k_up() {
    let Some(files) = test_support::fixture_files() else {
        return;
    };
    let inputs: Vec<(String, Vec<Message>)> = files
        .iter()
        .map(|p| {
            let text = std::fs::read_to_string(p).unwrap();
            (
                test_support::file_name(p),
                parse::parse_jsonl(&text).unwrap(),
            )
        })
        .collect();
    // 32K still overflows (the anti-thrash pause, see docs/ECONOMICS.md "No overflow").
    for context in [64_000, 128_000, 200_000] {
        let sim = run(
            &inputs,
            &variants(context, &[Policy::Batch, Policy::Micro]),
            &Options::default(),
        );
        for r in &sim.rows {
            assert_eq!(
                (r.overflows, r.unit_overflows),
                (0, 0),
                "{} {} at {context}",
                r.policy,
                r.transcript
            );
        }
    }
}
