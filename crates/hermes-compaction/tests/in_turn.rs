//! A pass that lands inside a turn says so and gives what resumes the turn; no pass lands
//! between a tool call and its result.

use compaction_core::laws;
use compaction_core::{Message, ToolCall, Transcript};
use hermes_compaction::OneShot;
use hermes_compaction::{Compressor, Outcome, Resume};

use crate::common::{config, extractive, rt};

/// Earlier turns, then one long turn in its tool loop: the ask and `rounds` tool rounds.
fn mid_tool_loop(c: &Compressor, rounds: usize) -> Transcript {
    let mut msgs = vec![Message::system("You are a coding agent.")];
    for i in 0..20 {
        msgs.push(Message::user(format!(
            "ask {i}: {}",
            "review the module ".repeat(150)
        )));
        msgs.push(Message::assistant(format!(
            "answer {i}: {}",
            "it is fine ".repeat(200)
        )));
    }
    msgs.push(Message::user("port the parser to the new grammar"));
    for r in 0..rounds {
        let id = format!("call-{r}");
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(&id, "shell", r#"{"cmd":"cargo test"}"#)],
        ));
        msgs.push(Message::tool_result(&id, format!("round {r} ").repeat(200)));
    }
    Transcript::new(msgs, c.status().counter)
}

fn changed(o: Outcome) -> bool {
    matches!(o, Outcome::Summarized | Outcome::Pruned)
}

#[test]
fn a_pass_after_a_tool_result_reports_the_ask_and_the_tool_state() {
    let mut c = extractive(config(16_000));
    let mut t = mid_tool_loop(&c, 6);
    assert!(t.current_tokens() >= c.status().threshold_tokens);
    let before = t.clone();
    let (_ticket, report) = rt().block_on(c.before_request(&mut t));
    let report = report.expect("over the threshold: a pass");
    assert!(
        matches!(report.outcome, Outcome::Summarized | Outcome::Pruned),
        "{:?}",
        report.outcome
    );
    let resume = report
        .in_turn
        .clone()
        .expect("the pass landed inside the turn");
    assert_eq!(
        resume.ask(&t).unwrap().text(),
        "port the parser to the new grammar"
    );
    assert_eq!(resume.pending_calls, vec!["call-5".to_owned()]);
    assert!(resume.results_complete);
    let calls = resume.tool_calls_index.unwrap();
    assert_eq!(t.messages()[calls].tool_calls()[0].call_id(), "call-5");
    assert!(
        t.messages()[calls + 1].is_tool(),
        "the call keeps its result"
    );
    assert_eq!(Resume::at(&t), Some(resume));
    let violations = laws::check(
        before.messages(),
        t.messages(),
        &report.law,
        c.status().counter,
    );
    assert!(violations.is_empty(), "{violations:?}");
}

#[test]
fn no_pass_runs_between_a_tool_call_and_its_result() {
    let mut c = extractive(config(16_000));
    let mut t = mid_tool_loop(&c, 6);
    t.push(
        Message::assistant_tool_calls("", vec![ToolCall::function("call-6", "shell", "{}")]),
        c.status().counter,
    );
    let before: Vec<String> = t.messages().iter().map(Message::to_wire_json).collect();
    let report = rt()
        .block_on(c.one_shot(&mut t, OneShot::batch()))
        .into_batch()
        .unwrap();
    assert_eq!(report.outcome, Outcome::Skipped);
    let resume = report.in_turn.expect("inside the turn");
    assert!(!resume.results_complete);
    assert_eq!(resume.pending_calls, vec!["call-6".to_owned()]);
    let after: Vec<String> = t.messages().iter().map(Message::to_wire_json).collect();
    assert_eq!(before, after, "the transcript is untouched");
    // With the result in, the pass runs.
    t.push(Message::tool_result("call-6", "ok"), c.status().counter);
    let report = rt()
        .block_on(c.one_shot(&mut t, OneShot::batch()))
        .into_batch()
        .unwrap();
    assert!(changed(report.outcome), "{:?}", report.outcome);
    assert!(report.in_turn.unwrap().results_complete);
}

#[test]
fn a_pass_between_turns_reports_no_turn() {
    let mut c = extractive(config(16_000));
    let mut t = mid_tool_loop(&c, 6);
    t.push(Message::assistant("ported"), c.status().counter);
    let report = rt()
        .block_on(c.one_shot(&mut t, OneShot::batch()))
        .into_batch()
        .unwrap();
    assert!(changed(report.outcome), "{:?}", report.outcome);
    assert_eq!(report.in_turn, None);
}

fn timed(timing: hermes_compaction::config::Timing) -> Compressor {
    let mut cfg = config(48_000);
    cfg.compression.timing = timing;
    extractive(cfg)
}

#[test]
fn between_turns_waits_for_the_end_of_the_tool_loop() {
    use hermes_compaction::config::Timing;
    let mut c = timed(Timing::BetweenTurns);
    let mut t = mid_tool_loop(&c, 6);
    assert!(
        t.current_tokens() >= c.status().threshold_tokens,
        "{} over {}",
        t.current_tokens(),
        c.status().threshold_tokens
    );
    let stamp = t.stamp();
    let (_, report) = rt().block_on(c.before_request(&mut t));
    assert!(report.is_none(), "no pass inside the tool loop");
    assert_eq!(t.stamp(), stamp);
    assert!(rt().block_on(c.after_tool_round(&mut t)).is_none());
    // The turn ends; the next turn's first request gets the pass.
    t.push(Message::assistant("ported"), c.status().counter);
    t.push(Message::user("now the lexer"), c.status().counter);
    let (_, report) = rt().block_on(c.before_request(&mut t));
    let report = report.expect("a pass before the turn's first request");
    assert!(changed(report.outcome), "{:?}", report.outcome);
    // Eager makes it inside the loop.
    let mut eager = timed(Timing::Eager);
    let mut t = mid_tool_loop(&eager, 6);
    let (_, report) = rt().block_on(eager.before_request(&mut t));
    assert!(report.is_some_and(|r| changed(r.outcome)));
}

#[test]
fn manual_makes_no_automatic_pass_but_compress_and_overflow_work() {
    let mut c = timed(hermes_compaction::config::Timing::Manual);
    let mut t = mid_tool_loop(&c, 6);
    t.push(Message::assistant("ported"), c.status().counter);
    t.push(Message::user("now the lexer"), c.status().counter);
    let (_, report) = rt().block_on(c.before_request(&mut t));
    assert!(report.is_none());
    assert!(rt().block_on(c.finalize_turn(&mut t)).is_none());
    let report = rt()
        .block_on(c.one_shot(&mut t, OneShot::batch()))
        .into_batch()
        .unwrap();
    assert!(changed(report.outcome), "{:?}", report.outcome);
    assert!(rt().block_on(c.on_context_overflow(&mut t)).is_some());
}
