//! Content-free guarantee: telemetry for passes over every shared fixture transcript never
//! contains 16 or more consecutive bytes of any message's content.
//!
//! The events are synthetic (built from the fixtures' real token counts, regions and
//! exchanges) until the compaction passes land; they go through the real formatting and
//! both tracing formatters.
//!
//! Some transcripts hold JSON of their own (API usage blocks such as `"input_tokens":11,"se`),
//! so a window can match by coincidence with our own key names and a number. A matching
//! window counts as a leak unless, with digit runs collapsed, it also occurs in the telemetry
//! of a small transcript that is not a fixture (the schema's own vocabulary).

use compaction_core::micro::MicroOutcomeKind;
use std::collections::HashSet;

use compaction_core::exchange::exchanges_from;
use compaction_core::parse::parse_transcript;
use compaction_core::regions::{RegionConfig, WindowConfig, partition};
use compaction_core::{Estimator, Message, Transcript};
use compaction_telemetry::{
    BatchAttempt, BatchOutcome, MicroPass, SessionAccumulator, TriggerSource, Trim,
    TrimAccumulator, TrimOutcome, TrimSource, Turn, Window, emit_batch, emit_micro, emit_trim,
    emit_turn, format_line,
};

use crate::common::capture;

const WINDOW_BYTES: usize = 16;

/// Every 16-byte window of the telemetry output.
fn windows(text: &str) -> HashSet<[u8; WINDOW_BYTES]> {
    text.as_bytes()
        .windows(WINDOW_BYTES)
        .map(|w| w.try_into().unwrap())
        .collect()
}

/// The first 16-byte window of `content` found in `seen`. A 16-character substring is at
/// least 16 bytes long, so checking bytes is at least as strict as checking characters.
fn leak<'a>(content: &'a str, seen: &HashSet<[u8; WINDOW_BYTES]>) -> Option<&'a [u8]> {
    content
        .as_bytes()
        .windows(WINDOW_BYTES)
        .find(|w| seen.contains(*w))
}

/// `bytes` with every run of ASCII digits collapsed to one `0`.
fn collapse_digits(bytes: &[u8]) -> Vec<u8> {
    let mut out = Vec::with_capacity(bytes.len());
    let mut in_digits = false;
    for &b in bytes {
        let digit = b.is_ascii_digit();
        if !digit {
            out.push(b);
        } else if !in_digits {
            out.push(b'0');
        }
        in_digits = digit;
    }
    out
}

/// Whether a matching window is explained by the schema alone.
fn explained(window: &[u8], skeleton: &[u8]) -> bool {
    let w = collapse_digits(window);
    skeleton.windows(w.len()).any(|s| s == w.as_slice())
}

/// Telemetry of a small transcript that is not a fixture, digit runs collapsed.
fn skeleton() -> Vec<u8> {
    let mut messages = vec![Message::system("be brief"), Message::user("q0")];
    for i in 0..8 {
        messages.push(Message::assistant(format!("a{i}")));
        messages.push(Message::user(format!("q{}", i + 1)));
    }
    messages.push(Message::assistant_tool_calls(
        "",
        vec![compaction_core::ToolCall::function("c0", "f", "{}")],
    ));
    messages.push(Message::tool_result("c0", "r0"));
    let mut lines = Vec::new();
    emit_for("fixture-0", messages, &mut lines);
    lines.push(format_line(&Turn::new("fixture-0", 0, None, 1, None)));
    collapse_digits(lines.join("\n").as_bytes())
}

/// The texts of a message: its content and its tool-call arguments and names.
fn contents(m: &Message) -> Vec<String> {
    let mut out = vec![m.text().into_owned()];
    for call in m.tool_calls() {
        out.push(call.function.arguments.clone());
        out.push(call.function.name.clone());
    }
    out
}

/// Telemetry of synthetic passes over one transcript: a turn per user message, an insertion
/// trim per user message and tool result (outcomes in turn), a micro pass per exchange, a
/// batch attempt for the whole middle.
fn emit_for(session: &str, messages: Vec<Message>, out: &mut Vec<String>) {
    let estimator = Estimator::default();
    let t = Transcript::new(messages, &estimator);
    let cfg = WindowConfig::for_context(32_000);
    let window = Window::from_config(&cfg);
    let regions = partition(&t, window.threshold_tokens, &RegionConfig::default(), false);
    let total = t.estimated_total();
    let msgs = t.messages();

    let mut turn = 0;
    for (i, m) in msgs.iter().enumerate() {
        if m.is_user() {
            let ev = Turn::new(
                session,
                turn,
                Some(t.tokens_in(0..i + 1)),
                t.tokens_in(0..i),
                Some(window),
            );
            out.push(format_line(&ev));
            emit_turn(&ev);
            turn += 1;
        }
    }

    let mut trims = TrimAccumulator::default();
    let outcomes = [
        TrimOutcome::Trimmed,
        TrimOutcome::KeptNoStore,
        TrimOutcome::KeptStoreFailed,
    ];
    for (i, m) in msgs.iter().enumerate() {
        let source = if m.is_user() {
            TrimSource::UserPaste
        } else if m.tool_call_id().is_some() {
            TrimSource::ToolResult
        } else {
            continue;
        };
        let outcome = outcomes[i % outcomes.len()];
        let original = t.tokens_in(i..i + 1);
        let appended = match outcome {
            TrimOutcome::Trimmed => original.min(200),
            _ => original,
        };
        let mut trim = Trim::new(session, outcome, source).tokens(original, appended);
        trims.record(&mut trim);
        out.push(format_line(&trim));
        emit_trim(&trim);
    }

    let mut acc = SessionAccumulator::default();
    let mut tokens = total;
    for ex in exchanges_from(msgs, regions.middle.clone(), regions.middle.start) {
        let ex_tokens = t.tokens_in(ex.clone());
        let after = tokens.saturating_sub(ex_tokens) + 60;
        let mut pass = MicroPass::new(session, MicroOutcomeKind::Absorbed)
            .tokens(tokens, after)
            .messages(msgs.len() as u64, (msgs.len() - ex.len() + 1) as u64)
            .window(Some(window));
        pass.exchange_tokens = ex_tokens;
        pass.cursor = ex.end as u64;
        pass.earliest_changed_index = Some(ex.start as u64);
        pass.rolling_summary_tokens = 60;
        pass.main_model = Some("main-model".into());
        pass.aux_model = Some("aux-model".into());
        acc.record(&mut pass);
        out.push(format_line(&pass));
        emit_micro(&pass);
        tokens = after;
    }

    let mut batch = BatchAttempt::new(session, TriggerSource::Threshold, BatchOutcome::Compacted)
        .window(Some(window))
        .tokens(
            total,
            t.tokens_in(regions.head.clone()) + t.tokens_in(regions.tail.clone()) + 400,
        )
        .regions(
            t.tokens_in(regions.head.clone()),
            t.tokens_in(regions.middle.clone()),
            t.tokens_in(regions.tail.clone()),
        )
        .messages(
            msgs.len() as u64,
            (msgs.len() - regions.middle.len() + 1) as u64,
        );
    batch.earliest_changed_index = Some(regions.middle.start as u64);
    batch.summary_model = Some("aux-model".into());
    out.push(format_line(&batch));
    emit_batch(&batch);
}

#[test]
fn no_fixture_content_reaches_telemetry() {
    let Some(files) = test_support::fixture_files() else {
        return;
    };
    assert!(
        files.len() >= 21,
        "expected the 21 shared transcripts, found {}",
        files.len()
    );

    let mut transcripts = Vec::new();
    for path in &files {
        let (messages, _) = parse_transcript(&std::fs::read(path).unwrap())
            .unwrap_or_else(|e| panic!("{}: {e}", path.display()));
        transcripts.push(messages);
    }

    let mut lines = Vec::new();
    let emit_all = || {
        let mut out = Vec::new();
        for (i, messages) in transcripts.iter().enumerate() {
            emit_for(&format!("fixture-{i}"), messages.clone(), &mut out);
        }
        out
    };
    let human = capture(false, || lines = emit_all());
    let json = capture(true, || {
        emit_all();
    });
    assert!(lines.len() > 21 * 2, "only {} events", lines.len());
    assert_eq!(human.lines().count(), lines.len());
    assert_eq!(json.lines().count(), lines.len());

    // What the formatters add around a line (timestamps, level, target, JSON envelope) is
    // not ours and may well occur in a transcript; the telemetry is the message.
    let mut messages = Vec::new();
    for line in human.lines() {
        let at = line.find(" telemetry: ").unwrap();
        let start = line[..at].rfind(": ").unwrap() + 2;
        messages.push(line[start..].to_owned());
    }
    for line in json.lines() {
        let v: serde_json::Value = serde_json::from_str(line).unwrap();
        messages.push(v["fields"]["message"].as_str().unwrap().to_owned());
    }
    assert_eq!(messages[..lines.len()], lines[..]);
    assert_eq!(messages[lines.len()..], lines[..]);
    let telemetry = lines.join("\n");
    let seen = windows(&telemetry);

    // The detector itself works: a content snippet planted in the output is found.
    let sample = transcripts
        .iter()
        .flatten()
        .map(|m| m.text().into_owned())
        .find(|t| t.len() >= 40)
        .unwrap();
    let planted = windows(&format!("{telemetry}{sample}"));
    assert!(leak(&sample, &planted).is_some());

    let skeleton = skeleton();
    assert!(!explained(&sample.as_bytes()[..WINDOW_BYTES], &skeleton));
    let mut checked = 0usize;
    for (path, messages) in files.iter().zip(&transcripts) {
        for (i, m) in messages.iter().enumerate() {
            for text in contents(m) {
                checked += text.len();
                if let Some(w) = leak(&text, &seen).filter(|w| !explained(w, &skeleton)) {
                    panic!(
                        "{} message {i}: telemetry contains content bytes {:?}",
                        path.display(),
                        String::from_utf8_lossy(w)
                    );
                }
            }
        }
    }
    assert!(checked > 1_000_000, "only {checked} content bytes checked");
}
