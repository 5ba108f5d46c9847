//! No prompt overflows the window because of a giant tool result in the protected tail (it is
//! demoted), the fixtures replay without an overflow from 32K up, and a hostile synthetic
//! session fits a 16K window wherever its system prompt and latest request do.

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

/// Also: every pass of these replays keeps every law (`Options::check_laws`); the ungated
/// micro policy wrote a second turn-progress marker on a fixture at 32K before the progress
/// planner took a marker that stands after the turn's oldest tool groups. `micro+gate` is
/// what `micro_compact = true` gives.
#[test]
fn the_fixtures_never_overflow_from_32k_up() {
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
    // Issue 20, item 4: no window from 32K up overflows, in either count.
    for context in [32_000, 64_000, 128_000, 200_000] {
        let sim = run(
            &inputs,
            &variants(context, &[Policy::Batch, Policy::Micro, Policy::MicroGate]),
            &Options {
                check_laws: true,
                ..Options::default()
            },
        );
        assert!(sim.laws_checked);
        assert!(
            sim.violations.is_empty(),
            "at {context}: {}",
            compaction_sim::render::law_lines(&sim.violations, sim.rows.len())
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

/// `chars` characters of distinct lines (nothing deduplicates), `tag` naming them.
fn lines(tag: &str, chars: usize) -> String {
    let mut s = String::with_capacity(chars + 64);
    let mut i = 0;
    while s.len() < chars {
        s.push_str(&format!("{tag} line {i}: value_{i} = compute({i});\n"));
        i += 1;
    }
    s
}

fn call(id: &str, tool: &str, args: serde_json::Value) -> Message {
    Message::assistant_tool_calls("", vec![ToolCall::function(id, tool, args.to_string())])
}

/// A session built to overflow a 16K window every way a protected message can: a giant tool
/// output in the protected opening, giant outputs as the newest message (a plain and a long,
/// split turn), a giant tool-call argument, a long paste as an older request, and requests
/// that need the system prompt and themselves only. Every giant is larger than the window can
/// hold beside the protected messages.
fn hostile_session() -> Vec<Message> {
    let mut m = vec![Message::system(format!(
        "You are a coding agent.\n{}",
        lines("policy", 4_000)
    ))];
    // The opening (protected until the first compaction) holds a 12K-token output.
    m.push(Message::user("request 0: show me the build log"));
    m.push(call(
        "c0",
        "bash",
        serde_json::json!({"command": "make 2>&1"}),
    ));
    m.push(Message::tool_result("c0", lines("build", 48_000)));
    m.push(Message::assistant("the build log is above"));
    for i in 1..6 {
        let id = format!("c{i}");
        m.push(Message::user(format!("request {i}: look at module {i}")));
        m.push(call(
            &id,
            "bash",
            serde_json::json!({"command": format!("cat src/m{i}.rs")}),
        ));
        m.push(Message::tool_result(&id, lines(&format!("m{i}"), 6_000)));
        m.push(Message::assistant(format!("module {i} read")));
    }
    // A giant output as the newest message, 20K tokens: more than the window.
    m.push(Message::user("request 6: stage everything"));
    m.push(call(
        "add",
        "bash",
        serde_json::json!({"command": "git add -v ."}),
    ));
    m.push(Message::tool_result("add", lines("add", 80_000)));
    m.push(Message::assistant("staged"));
    // A giant argument: the agent writes a 15K-token file.
    m.push(Message::user("request 7: write the generated table"));
    m.push(call(
        "w",
        "write_file",
        serde_json::json!({"path": "src/table.rs", "content": lines("table", 60_000)}),
    ));
    m.push(Message::tool_result("w", "wrote src/table.rs"));
    m.push(Message::assistant("written"));
    // (A giant answer the user saw is not covered yet: the last visible reply stays verbatim.)
    m.push(Message::user("request 8: explain the table"));
    m.push(Message::assistant(lines("explanation", 2_000)));
    // A long paste as an older request, then a short one.
    m.push(Message::user(format!(
        "request 9: this log {}",
        lines("paste", 48_000)
    )));
    m.push(Message::assistant("I see the failure in the log"));
    m.push(Message::user("request 10: fix it"));
    // A long turn: many tool rounds, one giant output in the middle (a protected tool's giant
    // output is not covered yet: protected tools are never demoted).
    for r in 0..14 {
        let id = format!("r{r}");
        m.push(call(
            &id,
            "bash",
            serde_json::json!({"command": format!("cargo test t{r}")}),
        ));
        let size = if r == 7 { 70_000 } else { 3_000 };
        m.push(Message::tool_result(&id, lines(&format!("t{r}"), size)));
    }
    m.push(call(
        "rf",
        "read_file",
        serde_json::json!({"path": "src/big.rs"}),
    ));
    m.push(Message::tool_result("rf", lines("big", 4_000)));
    m.push(Message::assistant("fixed"));
    // The latest request is long but fits beside the system prompt.
    m.push(Message::user(format!(
        "request 11: and this {}",
        lines("ask", 20_000)
    )));
    m.push(call(
        "last",
        "bash",
        serde_json::json!({"command": "cargo build"}),
    ));
    m.push(Message::tool_result("last", lines("last", 80_000)));
    m.push(Message::assistant("done"));
    m
}

/// Issue 20, item 4: at 16K, wherever the system prompt and the latest request fit, no
/// request overflows the window, in the estimator's count or the issue units, with batch or
/// micro, however large a protected message is.
#[test]
fn a_hostile_session_fits_a_16k_window() {
    let msgs = hostile_session();
    let sim = run(
        &[("hostile.jsonl".to_owned(), msgs)],
        &variants(
            16_000,
            &[
                Policy::None,
                Policy::Batch,
                Policy::Micro,
                Policy::MicroGate,
            ],
        ),
        &Options::default(),
    );
    let none = &sim.totals[0];
    assert!(
        none.overflows > 10 && none.unit_overflows > 10,
        "the test can fail"
    );
    for t in &sim.totals[1..] {
        assert_eq!(
            (t.overflows, t.unit_overflows),
            (0, 0),
            "{}: peak {} units of 16000",
            t.policy,
            t.unit_peak_tokens
        );
    }
}

/// A system prompt over the threshold, then the reply the user last saw and a turn the tail
/// holds whole: the automatic pass keeps that reply and the request is over the window. The
/// provider would refuse it; the agent calls the overflow hook, whose forced pass summarizes
/// the reply, and the request goes again under the window. `refused` counts the refusals,
/// `overflows` what was still over when sent.
#[test]
fn a_refused_prompt_is_compacted_by_the_overflow_pass_and_sent_again() {
    let mut msgs = vec![
        Message::system(format!("You are a coding agent. {}", "rule ".repeat(9_600))),
        Message::user("start"),
        Message::assistant("reading the repository"),
        Message::user("now the plan"),
        Message::assistant(format!("The plan. {}", "step and detail ".repeat(750))),
        Message::user("go on"),
    ];
    // Three rounds whose reasoning keeps the turn over the tail's budget once the outputs
    // are demoted, inside the tail's six messages: the reply before it stays in the middle.
    for r in 0..3 {
        let id = format!("round_{r}");
        msgs.push(Message::assistant_tool_calls(
            format!(
                "Running step {r}: {}",
                "because the plan says so ".repeat(100)
            ),
            vec![ToolCall::function(
                &id,
                "bash",
                format!("{{\"command\":\"make step{r}\"}}"),
            )],
        ));
        msgs.push(Message::tool_result(
            &id,
            format!("step {r} ok\n").repeat(160),
        ));
    }
    msgs.push(Message::assistant("all three steps are done"));
    let sim = run(
        &[("refused.jsonl".to_owned(), msgs)],
        &variants(16_000, &[Policy::None, Policy::Batch]),
        &Options::default(),
    );
    let (none, batch) = (&sim.totals[0], &sim.totals[1]);
    // Never compacting, the last requests are over the window and nothing retries them.
    assert!(none.overflows > 0 && none.refused == 0, "{none:?}");
    // At least one refused request was sent again under the window (a request whose floor
    // is over it, the reply in the tail beside the system prompt, stays over).
    assert!(batch.refused > batch.overflows, "{batch:?}");
    assert!(batch.summary_events > 0, "{batch:?}");
    assert!(batch.overflows < none.overflows, "{batch:?}");
}
