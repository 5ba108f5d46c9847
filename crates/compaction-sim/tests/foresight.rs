//! Foresight (`Variant::with_foresight`): the messages the next answers need are kept
//! verbatim through the passes (and only while an answer within the horizon needs them), the
//! passes keep every law while they are pinned, and a session that needs nothing replays as
//! without foresight. (Release after the last use: the example of `foresight::Foresight`.)

use compaction_sim::{Options, Policy};
use hermes_compaction::Config;
use hermes_compaction::core::{Message, ToolCall};

use crate::common::run;

/// A session whose last answer uses what its first tool output said, with enough large
/// outputs in between that the batch passes at 8K take it (prune-first: it becomes a
/// one-liner).
fn session() -> Vec<Message> {
    let mut msgs = vec![Message::system("You are a coding agent.")];
    let step = |msgs: &mut Vec<Message>, i: usize| {
        let id = format!("c{i}");
        msgs.push(Message::user(format!("now step {i}")));
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                &id,
                "read",
                format!("{{\"path\":\"src/other_{i}.rs\"}}"),
            )],
        ));
        msgs.push(Message::tool_result(&id, "let x = 1;\n".repeat(300)));
        msgs.push(Message::assistant(format!("done {i}")));
    };
    // The head (the opening exchanges) is kept by every pass: the parser comes after it.
    for i in 1..=3 {
        step(&mut msgs, i);
    }
    msgs.push(Message::user("look at the parser"));
    msgs.push(Message::assistant_tool_calls(
        "",
        vec![ToolCall::function(
            "parser",
            "read",
            r#"{"path":"src/parser.rs"}"#,
        )],
    ));
    msgs.push(Message::tool_result(
        "parser",
        "fn parse_header_v2() {}\n".repeat(120),
    ));
    msgs.push(Message::assistant("read it"));
    for i in 4..=24 {
        step(&mut msgs, i);
    }
    msgs.push(Message::user("fix the parser now"));
    msgs.push(Message::assistant(
        "parse_header_v2 in src/parser.rs is wrong",
    ));
    msgs
}

#[test]
fn foresight_keeps_what_the_next_answers_need_and_every_law() {
    let mut config = Config::default();
    config.model.context_length = 8_000;
    let batch = Policy::Batch.variant(&config, 2_000);
    let variants = [
        batch.clone(),
        batch.with_foresight(1),
        batch.with_foresight(1_000),
    ];
    let options = Options {
        check_laws: true,
        ..Options::default()
    };
    let sim = run(&[("parser.jsonl".into(), session())], &variants, &options);
    assert!(sim.violations.is_empty(), "{:?}", sim.violations);
    let row = |name: &str| sim.rows.iter().find(|r| r.policy == name).unwrap();
    let (plain, one, all) = (
        row("batch"),
        row("batch+foresight1"),
        row("batch+foresight1000"),
    );
    // Without foresight the passes took the parser's output: its names are far, not held,
    // and the last answer re-reads it.
    assert!(plain.prune_events + plain.summary_events > 0, "{plain:?}");
    assert!(plain.far_identifiers > 0);
    assert!(plain.far_held_content < plain.far_identifiers, "{plain:?}");
    assert!(plain.reread_rounds > 0);
    // Knowing every later answer, nothing needed is ever dropped.
    assert_eq!(all.far_held_content, all.far_identifiers, "{all:?}");
    assert_eq!(all.reread_rounds, 0, "{all:?}");
    // Knowing only the next answer, the output is pinned too late: the passes before the
    // last request had taken it already.
    assert_eq!(one.far_held_content, plain.far_held_content, "{one:?}");
    assert!(one.reread_rounds > 0);
}

#[test]
fn foresight_leaves_a_session_with_nothing_to_keep_as_it_was() {
    // No answer uses anything an earlier message said: nothing is pinned, so the replay is
    // the policy's own to the token.
    let mut msgs = vec![Message::system("You are a coding agent.")];
    for i in 0..12 {
        msgs.push(Message::user(format!("say something {i}")));
        msgs.push(Message::assistant("x".repeat(2_000)));
    }
    let mut config = Config::default();
    config.model.context_length = 8_000;
    let batch = Policy::Batch.variant(&config, 2_000);
    let sim = run(
        &[("chat.jsonl".into(), msgs)],
        &[batch.clone(), batch.with_foresight(50)],
        &Options::default(),
    );
    let (a, b) = (&sim.rows[0], &sim.rows[1]);
    assert!(a.summary_events + a.prune_events > 0, "{a:?}");
    assert_eq!(
        (a.unit_prompt_tokens, a.unit_hit_tokens, a.summary_calls),
        (b.unit_prompt_tokens, b.unit_hit_tokens, b.summary_calls)
    );
}
