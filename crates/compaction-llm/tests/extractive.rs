//! The deterministic extractive summarizer.

use compaction_core::tokens::estimate_text;
use compaction_core::{Message, ToolCall, parse};
use compaction_llm::extractive::{EXTRACTIVE_NOTE, shrink_to_half};
use compaction_llm::prompts::SECTIONS;
use compaction_llm::{ExtractiveSummarizer, Summarizer, SummaryKind, SummaryRequest};

fn span() -> Vec<Message> {
    vec![
        Message::user("Set up CI for the repo."),
        Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                "c1",
                "read_file",
                r#"{"path":"src/main.rs"}"#,
            )],
        ),
        Message::tool_result("c1", "fn main() {}\n"),
        Message::assistant_tool_calls(
            "Running the tests.",
            vec![ToolCall::function(
                "c2",
                "terminal",
                r#"{"command":"cargo test --workspace","timeout":60}"#,
            )],
        ),
        Message::tool_result(
            "c2",
            "running 3 tests\nerror[E0432]: unresolved import `foo`\nexit code: 101",
        ),
        Message::assistant("The build fails on an unresolved import."),
        Message::user(
            "Stop. Use GitHub Actions, and my token is ghp_abcdefghijklmnopqrstuvwxyz0123456789.",
        ),
    ]
}

fn run(req: &SummaryRequest) -> String {
    let rt = tokio::runtime::Builder::new_current_thread()
        .build()
        .unwrap();
    let r = rt
        .block_on(ExtractiveSummarizer::default().summarize(req))
        .unwrap();
    assert!(r.extractive);
    assert_eq!(r.model, "extractive");
    r.text
}

#[test]
fn batch_summary_from_messages_has_the_sections_and_the_facts() {
    let req =
        SummaryRequest::new(SummaryKind::BatchFirst, "", 2_000, "2026-01-01").with_messages(span());
    let text = run(&req);
    assert!(text.starts_with(EXTRACTIVE_NOTE));
    let mut at = 0;
    for h in SECTIONS {
        let pos = text[at..]
            .find(h)
            .unwrap_or_else(|| panic!("missing {h}:\n{text}"));
        at += pos;
    }
    // Latest request verbatim (redacted), first request as the goal.
    assert!(
        text.contains("> Stop. Use GitHub Actions, and my token is [REDACTED]."),
        "{text}"
    );
    assert!(!text.contains("ghp_"));
    assert!(text.contains("first request: \"Set up CI for the repo.\""));
    // Tool calls with key arguments and outcomes, files, commands, errors.
    assert!(text.contains("1. read_file(src/main.rs) → ok"), "{text}");
    assert!(
        text.contains("2. terminal(cargo test --workspace) → failed: error[E0432]"),
        "{text}"
    );
    assert!(text.contains("- src/main.rs"));
    assert!(text.contains("ran `cargo test --workspace`"));
    assert!(text.contains("unresolved import"));
    assert!(text.contains("last assistant reply: The build fails"));
}

#[test]
fn summary_from_material_when_no_messages() {
    let material = "[user] Please refactor crates/core/src/lib.rs\n[assistant] read_file(crates/core/src/lib.rs)\n[tool] 120 lines\n[assistant] cargo_build()\n[tool] error: linking failed\n[user] also keep the public API";
    let req = SummaryRequest::new(SummaryKind::BatchFirst, material, 1_000, "2026-01-01");
    let text = run(&req);
    assert!(text.contains("> also keep the public API"), "{text}");
    assert!(
        text.contains("1. read_file(crates/core/src/lib.rs)"),
        "{text}"
    );
    assert!(text.contains("- crates/core/src/lib.rs"));
    assert!(text.contains("error: linking failed"));
}

#[test]
fn output_respects_the_budget() {
    let mut messages = Vec::new();
    for i in 0..300 {
        messages.push(Message::user(format!("request number {i} with some words")));
        messages.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                format!("c{i}"),
                "edit",
                format!(r#"{{"path":"src/file_{i}.rs"}}"#),
            )],
        ));
        messages.push(Message::tool_result(
            format!("c{i}"),
            "error: something failed here",
        ));
    }
    messages.push(Message::user("final request"));
    for budget in [200u32, 800] {
        let req = SummaryRequest::new(SummaryKind::BatchFirst, "", budget, "2026-01-01")
            .with_messages(messages.clone());
        let text = run(&req);
        assert!(
            estimate_text(&text) <= u64::from(budget),
            "{} > {budget}",
            estimate_text(&text)
        );
        assert!(text.contains("> final request"));
        assert!(text.contains("## Relevant files"));
        // Oldest items go first.
        assert!(text.contains("src/file_299.rs"));
        assert!(!text.contains("src/file_0.rs\n"));
    }
}

#[test]
fn micro_merge_keeps_previous_facts_and_replaces_the_request() {
    let first =
        SummaryRequest::new(SummaryKind::BatchFirst, "", 2_000, "2026-01-01").with_messages(span());
    let previous = run(&first);
    let next = vec![
        Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                "c9",
                "write_file",
                r#"{"path":".github/workflows/ci.yml"}"#,
            )],
        ),
        Message::tool_result("c9", "written"),
        Message::user("now add caching"),
    ];
    let req = SummaryRequest::new(SummaryKind::MicroMerge, "", 2_000, "2026-01-01")
        .with_previous(previous)
        .with_messages(next);
    let text = run(&req);
    assert_eq!(text.matches(EXTRACTIVE_NOTE).count(), 1);
    assert!(text.contains("> now add caching"));
    assert!(!text.contains("> Stop. Use GitHub Actions"));
    assert!(text.contains("- src/main.rs"));
    assert!(text.contains("- .github/workflows/ci.yml"));
    assert_eq!(text.matches("## Relevant files").count(), 1);
}

#[test]
fn defrag_always_shrinks_to_half() {
    let summary =
        "## Active request\n> make the tests pass\n\n## Goal\n- green CI\n\n## Completed actions\n"
            .to_owned()
            + &(1..=40)
                .map(|i| format!("{i}. step {i} edited src/mod_{i}.rs and ran cargo test\n"))
                .collect::<String>()
            + "\n## Relevant files\n- src/lib.rs\n";
    let req = SummaryRequest::new(SummaryKind::Defrag, "", 100, "2026-01-01")
        .with_previous(summary.clone());
    let text = run(&req);
    assert!(text.chars().count() <= summary.chars().count() / 2);
    assert!(text.contains("## Active request") && text.contains("## Relevant files"));
    assert!(text.contains("> make the tests pass"));
    assert!(text.contains("40. step 40"), "newest kept");
    assert!(!text.contains("1. step 1 "), "oldest dropped");
    // Repeated defrag keeps shrinking.
    let again = shrink_to_half(&text);
    assert!(again.chars().count() <= text.chars().count() / 2);
}

#[test]
fn real_transcripts_summarize_within_budget() {
    let Some(files) = test_support::fixture_files() else {
        return;
    };
    let mut seen = 0;
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let messages = parse::parse_jsonl(&text).unwrap();
        let req = SummaryRequest::new(SummaryKind::BatchFirst, "", 1_500, "2026-01-01")
            .with_messages(messages);
        let out = run(&req);
        assert!(estimate_text(&out) <= 1_500, "{}", path.display());
        assert!(out.starts_with(EXTRACTIVE_NOTE));
        assert!(out.contains("## Active request"));
        seen += 1;
    }
    assert!(seen >= 1);
}

/// Issue 21, item 1 (spec section 1, "Tail"; section 6): a batch summary never holds the
/// latest request, which the caller keeps verbatim after it. Its active-request section points
/// there, and a user message without text (blank, whitespace, an image alone, no parts) is
/// never quoted as a request, from messages or from serialized material.
#[test]
fn a_batch_summary_points_at_the_kept_request_and_never_quotes_a_blank_one() {
    use compaction_core::{Content, Part};
    use compaction_llm::extractive::ACTIVE_POINTER;
    let image_only = {
        let mut m = Message::user("");
        m.set_content(Some(Content::Parts(vec![Part(
            serde_json::json!({"type": "image_url", "image_url": {"url": "data:image/png;base64,AAAA"}}),
        )])));
        m
    };
    let no_parts = {
        let mut m = Message::user("");
        m.set_content(Some(Content::Parts(vec![])));
        m
    };
    for blank in [
        Message::user(""),
        Message::user("   "),
        Message::user("\n\t"),
        image_only,
        no_parts,
    ] {
        let mut msgs = span();
        msgs.push(Message::assistant("Switching to Actions."));
        msgs.push(blank);
        for kind in [SummaryKind::BatchFirst, SummaryKind::BatchUpdate] {
            let mut req =
                SummaryRequest::new(kind, "", 2_000, "2026-01-01").with_messages(msgs.clone());
            if kind == SummaryKind::BatchUpdate {
                req = req.with_previous("## Active request\n> an old request\n\n## Goal\n- x");
            }
            let text = run(&req);
            let active: Vec<&str> = text
                .split("## Active request\n")
                .nth(1)
                .unwrap()
                .split("\n\n")
                .next()
                .unwrap()
                .lines()
                .collect();
            assert_eq!(active[0], ACTIVE_POINTER, "{text}");
            assert!(
                active
                    .iter()
                    .any(|l| l.starts_with("> Stop. Use GitHub Actions")),
                "{text}"
            );
            assert!(!text.contains("> an old request"), "{text}");
            assert!(
                active.iter().all(|l| !l.starts_with('>') || l.len() > 2),
                "a blank quote: {text}"
            );
        }
        // Material only (no messages): the serialized blank user block is no request either.
        let material = "[user]\nfirst ask\n\n[assistant]\nok\n\n[user]\n   \n";
        let text = run(&SummaryRequest::new(
            SummaryKind::BatchFirst,
            material,
            2_000,
            "2026-01-01",
        ));
        assert!(text.contains("> first ask"), "{text}");
        assert!(text.contains(ACTIVE_POINTER), "{text}");
    }
    // A micro merge folds exchanges, not requests: no pointer.
    let req =
        SummaryRequest::new(SummaryKind::MicroMerge, "", 2_000, "2026-01-01").with_messages(span());
    assert!(!run(&req).contains(ACTIVE_POINTER));
}

/// Section `heading`'s lines in `text`.
fn section<'a>(text: &'a str, heading: &str) -> Vec<&'a str> {
    text.split(&format!("{heading}\n"))
        .nth(1)
        .map(|rest| rest.split("\n\n").next().unwrap_or("").lines().collect())
        .unwrap_or_default()
}

/// Issue 33, item 8: the goal is the session's task, the first request of the user's own
/// (not an interruption notice, a harness's tagged text or a bare slash command; a slash
/// command's arguments are the request); no marker text is quoted as an output; with a ledger
/// the files section points at it instead of saying none were recorded.
#[test]
fn the_goal_is_the_users_first_real_request() {
    let mut msgs = vec![
        Message::user("<local-command-stdout>ok</local-command-stdout>"),
        Message::user("/clear"),
        Message::user("[Request interrupted by user for tool use]"),
        Message::user(
            "Caveat: The messages below were generated by the user while running local commands.",
        ),
        Message::user(
            "<command-message>fix</command-message>\n<command-name>/fix</command-name>\n<command-args>make the parser accept tabs</command-args>",
        ),
    ];
    msgs.extend(span());
    msgs.insert(
        8,
        Message::tool_result("c9", "[pruned] read_file `src/x.rs`: 900 chars"),
    );
    msgs[7] = Message::assistant_tool_calls(
        "I'll use GitHub Actions instead of Travis.",
        vec![
            ToolCall::function("c2", "terminal", r#"{"command":"cargo test --workspace"}"#),
            ToolCall::function("c9", "read_file", r#"{"path":"src/x.rs"}"#),
        ],
    );
    let msgs: Vec<Message> = msgs;
    let req = SummaryRequest::new(SummaryKind::BatchFirst, "", 2_000, "2026-01-01")
        .with_messages(msgs)
        .with_ledger_kept(true);
    let text = run(&req);
    let goal = section(&text, "## Goal");
    assert_eq!(
        goal,
        ["- the user's first request: \"make the parser accept tabs\""],
        "{text}"
    );
    assert!(!text.contains("Request interrupted"), "{text}");
    assert!(!text.contains("first line: [pruned]"), "{text}");
    let decisions = section(&text, "## Key decisions");
    assert!(
        decisions
            .iter()
            .any(|l| l.contains("GitHub Actions instead of Travis")),
        "{text}"
    );
    let files = section(&text, "## Relevant files");
    assert!(files[0].contains("ledger"), "{text}");
    // An update keeps the task it had.
    let update = SummaryRequest::new(SummaryKind::BatchUpdate, "", 2_000, "2026-01-01")
        .with_previous(text.clone())
        .with_messages(vec![
            Message::user("also rename it"),
            Message::assistant("done"),
        ]);
    let again = run(&update);
    assert_eq!(section(&again, "## Goal"), goal, "{again}");
}

/// Issue 33, item 8, over the shared fixtures: summarizing a whole session, the goal quotes
/// its first real request (the first user message with text that is not a tagged block, an
/// interruption notice or a bare slash command; a slash command's arguments count).
#[test]
fn over_the_fixtures_the_goal_is_the_sessions_task() {
    let Some(files) = test_support::fixture_files() else {
        return;
    };
    for path in files {
        let text = std::fs::read_to_string(&path).unwrap();
        let messages = parse::parse_jsonl(&text).unwrap();
        let first = messages
            .iter()
            .filter(|m| *m.role() == compaction_core::Role::User)
            .map(|m| {
                // A slash command's arguments are its request.
                let t = m.text().trim().to_owned();
                match (t.find("<command-args>"), t.find("</command-args>")) {
                    (Some(a), Some(b)) if t.starts_with("<command-") && a < b => {
                        t[a + "<command-args>".len()..b].trim().to_owned()
                    }
                    _ => t,
                }
            })
            .find(|t| {
                !t.is_empty()
                    && !t.starts_with('<')
                    && !t.starts_with("[Request interrupted")
                    && (!t.starts_with('/') || t.contains(' '))
            });
        let req = SummaryRequest::new(SummaryKind::BatchFirst, "", 2_000, "2026-01-01")
            .with_messages(messages);
        let out = run(&req);
        let goal = section(&out, "## Goal").join("\n");
        match first {
            Some(first) => {
                let words: String = first
                    .split_whitespace()
                    .take(6)
                    .collect::<Vec<_>>()
                    .join(" ");
                let words = compaction_redact::redact(&words).into_owned();
                assert!(goal.contains(&words), "{}: {goal}", path.display());
            }
            None => assert!(!goal.is_empty(), "{}", path.display()),
        }
    }
}

/// Issue 33, item 9 (Hermes' own compressor tests): `MEDIA:` delivery lines never reach the
/// summary, and a summary that must fit a small budget still says what the middle was about
/// (a path every middle message names, though neither the last request nor the last reply
/// does).
#[test]
fn media_lines_stay_out_and_the_middles_subject_stays_in() {
    let path = "crates/parser/src/lexer.rs";
    let mut msgs = vec![Message::user("Set up the project.")];
    for i in 0..30 {
        msgs.push(Message::user(format!(
            "step {i}: look again at {path}, the tokens are wrong"
        )));
        msgs.push(Message::assistant(format!(
            "Looked at {path}: fixed case {i}.\nMEDIA:/tmp/hermes/shot-{i}.png"
        )));
    }
    msgs.push(Message::user("now run the tests"));
    msgs.push(Message::assistant_tool_calls(
        "",
        vec![ToolCall::function(
            "c1",
            "bash",
            r#"{"command":"cargo test"}"#,
        )],
    ));
    msgs.push(Message::tool_result("c1", "ok\nMEDIA:/tmp/hermes/out.ogg"));
    msgs.push(Message::assistant("All done.\nMEDIA:/tmp/hermes/final.png"));
    for ledger in [false, true] {
        let req = SummaryRequest::new(SummaryKind::BatchFirst, "", 300, "2026-01-01")
            .with_messages(msgs.clone())
            .with_ledger_kept(ledger);
        let text = run(&req);
        assert!(!text.contains("MEDIA:"), "{text}");
        assert!(!text.contains("/tmp/hermes"), "{text}");
        assert!(text.contains(path), "ledger {ledger}: {text}");
    }
}
