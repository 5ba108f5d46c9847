//! Far recall: a hand count, the two extremes (nothing kept, everything kept), summaries
//! against verbatim, and the figure in replay rows.

use compaction_sim::recall::{Recall, RequestRecall};
use compaction_sim::retention::Wire;
use compaction_sim::{Options, Policy};
use hermes_compaction::Config;
use hermes_compaction::core::marker;
use hermes_compaction::core::{MarkerKind, Message, Role, ToolCall};

use crate::common::{example, run};

/// A coding session whose turn `i` reads `src/module_{i}.rs` (`output_chars` of content
/// defining `helper_{i}_fn`) and edits the file and the function of turn `i - 4` (more than 10
/// messages back): the path is a ledger fact, the function name is not.
fn reuse_session(turns: usize, output_chars: usize) -> Vec<Message> {
    let mut msgs = vec![Message::system("You are a coding agent.")];
    for i in 0..turns {
        let (read, edit) = (format!("read_{i}"), format!("edit_{i}"));
        msgs.push(Message::user(format!("request {i}: go on")));
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                &read,
                "read",
                format!("{{\"path\":\"src/module_{i}.rs\"}}"),
            )],
        ));
        msgs.push(Message::tool_result(
            &read,
            format!("fn helper_{i}_fn() {{}}\n").repeat(output_chars / 20),
        ));
        let old = i.saturating_sub(4);
        msgs.push(Message::assistant_tool_calls(
            format!("now src/module_{old}.rs"),
            vec![ToolCall::function(
                &edit,
                "edit",
                format!("{{\"path\":\"src/module_{old}.rs\",\"old\":\"helper_{old}_fn\"}}"),
            )],
        ));
        msgs.push(Message::tool_result(&edit, "ok"));
        msgs.push(Message::assistant(format!("request {i} done")));
    }
    msgs
}

fn filler(n: usize) -> Vec<Message> {
    (0..n)
        .map(|i| {
            if i % 2 == 0 {
                Message::user("please go on with the work")
            } else {
                Message::assistant("going on with the work")
            }
        })
        .collect()
}

/// A session with known far identifiers: `src/alpha_1.rs` and `BetaThing` are named early and
/// used again more than 10 messages later; `gamma.txt` is named and used within 10 messages;
/// `delta_9` is first named by the answer itself.
fn hand_session() -> (Vec<Message>, usize) {
    let mut msgs = vec![
        Message::system("You are a coding agent."),
        Message::user("look at src/alpha_1.rs and the BetaThing type"),
        Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                "call_a",
                "read",
                r#"{"path":"src/alpha_1.rs"}"#,
            )],
        ),
        Message::tool_result("call_a", "struct BetaThing;\nfn helper_fn() {}"),
    ];
    msgs.extend(filler(12));
    msgs.push(Message::user("now gamma.txt please"));
    msgs.extend(filler(3));
    let answer = msgs.len();
    // Uses two far identifiers (one in content, one in arguments), one near, one new, and
    // one far identifier twice (counted once).
    msgs.push(Message::assistant_tool_calls(
        "editing src/alpha_1.rs for gamma.txt with delta_9",
        vec![ToolCall::function(
            "call_b",
            "edit",
            r#"{"path":"src/alpha_1.rs","note":"BetaThing"}"#,
        )],
    ));
    (msgs, answer)
}

fn wires(msgs: &[Message]) -> Vec<Wire> {
    msgs.iter().map(Wire::of).collect()
}

/// Observes the session up to `answer` and returns the counts of that request for `prompt`.
fn at_answer(msgs: &[Message], answer: usize, prompt: &[Wire]) -> RequestRecall {
    let mut r = Recall::default();
    for m in &msgs[..answer] {
        r.observe(&Wire::of(m));
    }
    r.request(&Wire::of(&msgs[answer]), prompt)
}

#[test]
fn the_far_identifiers_of_a_hand_built_session_are_the_hand_count() {
    let (msgs, answer) = hand_session();
    // Everything before the answer: both far identifiers held.
    let full = at_answer(&msgs, answer, &wires(&msgs[..answer]));
    assert_eq!(
        full,
        RequestRecall {
            far: 2,
            held: 2,
            held_verbatim: 2,
            held_unindexed: 2,
            held_content: 2,
        }
    );
    // The last 10 messages only: neither is there.
    let near = at_answer(&msgs, answer, &wires(&msgs[answer - 10..answer]));
    assert_eq!((near.far, near.held, near.held_verbatim), (2, 0, 0));
    // Only the tool result (which names BetaThing, not the path).
    let one = at_answer(&msgs, answer, &wires(&msgs[3..4]));
    assert_eq!((one.far, one.held), (2, 1));
    // Identity, not substring: `alpha_1.rs` alone does not recall `src/alpha_1.rs`.
    let part = at_answer(
        &msgs,
        answer,
        &wires(&[Message::user("alpha_1.rs BetaThingy")]),
    );
    assert_eq!(part.held, 0);
}

#[test]
fn a_prompt_that_kept_nothing_scores_zero_and_a_summary_counts_only_with_summaries() {
    let (msgs, answer) = hand_session();
    let nothing = at_answer(&msgs, answer, &wires(&msgs[..1]));
    assert_eq!(
        (nothing.far, nothing.held, nothing.held_verbatim),
        (2, 0, 0)
    );
    let empty = at_answer(&msgs, answer, &[]);
    assert_eq!((empty.far, empty.held), (2, 0));
    // A summary marker that names both: held with summaries, not verbatim.
    let summary = marker::render(
        MarkerKind::Batch,
        Role::User,
        "Edited src/alpha_1.rs; BetaThing is the type.",
    );
    let prompt = wires(&[msgs[0].clone(), summary.clone()]);
    let s = at_answer(&msgs, answer, &prompt);
    assert_eq!((s.far, s.held, s.held_verbatim), (2, 2, 0));
    // The marker is recognised from its text alone (the wire form carries no metadata).
    let plain = Message::user(summary.text().into_owned());
    let s = at_answer(&msgs, answer, &wires(&[plain]));
    assert_eq!((s.held, s.held_verbatim), (2, 0));
}

#[test]
fn the_prompt_counts_follow_rewrites_between_requests() {
    let (msgs, answer) = hand_session();
    let mut r = Recall::default();
    for m in &msgs[..answer] {
        r.observe(&Wire::of(m));
    }
    let a = Wire::of(&msgs[answer]);
    let full = wires(&msgs[..answer]);
    assert_eq!(r.request(&a, &full).held, 2);
    // The same request against a rewritten prompt (the early messages replaced), then the
    // full one again: the counts are the prompt's, not history's.
    let mut rewritten = wires(&msgs[..1]);
    rewritten.extend(wires(&msgs[answer - 10..answer]));
    assert_eq!(r.request(&a, &rewritten).held, 0);
    assert_eq!(r.request(&a, &full).held, 2);
    assert_eq!(r.request(&a, &[full[0].clone(), full[3].clone()]).held, 1);
}

#[test]
fn without_compaction_below_the_window_far_recall_is_complete() {
    let inputs = vec![
        example(),
        ("reuse.jsonl".to_owned(), reuse_session(30, 2_000)),
    ];
    let mut config = Config::default();
    config.model.context_length = 10_000_000;
    let none = Policy::None.variant(&config, 2_000);
    let sim = run(&inputs, &[none], &Options::default());
    assert!(sim.rows.iter().all(|r| r.far_identifiers > 0));
    for row in &sim.rows {
        assert_eq!(row.overflows, 0, "{}", row.transcript);
        assert_eq!(row.far_held, row.far_identifiers, "{}", row.transcript);
        assert_eq!(row.far_held_verbatim, row.far_identifiers);
        let d = row.derived();
        assert_eq!(d.far_recall, 1.0);
        assert_eq!(d.far_recall_request_mean, 1.0);
    }
}

#[test]
fn a_hand_built_replay_counts_what_the_recorded_answer_used() {
    let (msgs, answer) = hand_session();
    let mut config = Config::default();
    config.model.context_length = 1_000_000;
    let sim = run(
        &[("hand.jsonl".to_owned(), msgs[..=answer].to_vec())],
        &[Policy::None.variant(&config, 2_000)],
        &Options::default(),
    );
    let row = &sim.rows[0];
    // Requests before the answer use nothing far (`src/alpha_1.rs` in the first call is new
    // there, the fillers name nothing); the answer uses two.
    assert_eq!(
        (row.far_identifiers, row.far_held, row.far_requests),
        (2, 2, 1)
    );
}

#[test]
fn compaction_loses_far_identifiers_and_summaries_keep_some() {
    let inputs = vec![("reuse.jsonl".to_owned(), reuse_session(30, 8_000))];
    let mut config = Config::default();
    config.model.context_length = 16_000;
    // The names indexes on (off by default): the figures tell them apart from content.
    config.compression.prune_names_max_chars = 400;
    let variants = vec![
        Policy::None.variant(&config, 2_000),
        Policy::Batch.variant(&config, 2_000),
    ];
    let sim = run(&inputs, &variants, &Options::default());
    let none = &sim.totals[0];
    let batch = &sim.totals[1];
    assert_eq!(none.far_identifiers, batch.far_identifiers);
    assert_eq!(none.far_held, none.far_identifiers);
    // The content loses some; the names indexes of the pruned outputs name them again.
    assert!(batch.far_held_unindexed < batch.far_identifiers);
    assert!(batch.far_held_unindexed <= batch.far_held);
    assert!(batch.far_held_verbatim <= batch.far_held);
    let d = batch.derived();
    assert!(d.far_recall_unindexed < 1.0 && d.far_recall_verbatim <= d.far_recall);
    assert!(d.far_recall_verbatim_request_mean <= d.far_recall_request_mean);
    // Without the indexes the prompt itself holds less.
    config.compression.prune_names_max_chars = 0;
    let off = run(
        &inputs,
        &[Policy::Batch.variant(&config, 2_000)],
        &Options::default(),
    );
    let off = &off.totals[0];
    assert!(off.far_held < off.far_identifiers);
    assert!(
        off.far_held < batch.far_held,
        "{} vs {}",
        off.far_held,
        batch.far_held
    );
}
