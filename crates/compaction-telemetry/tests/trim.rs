//! Insertion-time trim lines in the report: counted by outcome and source, savings summed
//! overall and per session, kept apart from the other figures; malformed ones skipped.

use compaction_core::micro::MicroOutcomeKind;
use compaction_telemetry::{
    BatchAttempt, BatchOutcome, MicroPass, Report, ReportOptions, SessionAccumulator,
    TriggerSource, Trim, TrimAccumulator, TrimOutcome, TrimSource, Turn, format_line,
};

const PER_SESSION: ReportOptions = ReportOptions {
    per_session: true,
    json: false,
};

/// A log of two sessions mixing every kind of line, in the human formatter's shape, with a
/// few malformed trim lines and unrelated lines among them.
fn mixed_log() -> String {
    let mut lines = Vec::new();
    let human =
        |line: String| format!("2026-03-14T10:00:00Z  INFO hermes_compaction::telemetry: {line}");

    // Session "a": two turns, a micro pass, three trims (two trimmed, one without a store).
    let mut trims_a = TrimAccumulator::default();
    let mut micro_a = SessionAccumulator::default();
    lines.push(human(format_line(&Turn::new(
        "a",
        0,
        Some(1_000),
        990,
        None,
    ))));
    for (outcome, source, original, appended) in [
        (TrimOutcome::Trimmed, TrimSource::ToolResult, 9_000, 400),
        (
            TrimOutcome::KeptNoStore,
            TrimSource::ToolResult,
            5_000,
            5_000,
        ),
        (TrimOutcome::Trimmed, TrimSource::UserPaste, 3_000, 500),
    ] {
        let mut t = Trim::new("a", outcome, source).tokens(original, appended);
        trims_a.record(&mut t);
        lines.push(human(format_line(&t)));
    }
    let mut pass = MicroPass::new("a", MicroOutcomeKind::Absorbed).tokens(6_000, 5_000);
    micro_a.record(&mut pass);
    lines.push(human(format_line(&pass)));
    lines.push(human(format_line(&Turn::new(
        "a",
        1,
        Some(5_100),
        5_000,
        None,
    ))));
    lines.push("2026-03-14T10:00:01Z  INFO agent.run: tool call finished".into());

    // Session "b": a batch compaction and one trim whose store write failed.
    lines.push(human(format_line(
        &BatchAttempt::new("b", TriggerSource::Threshold, BatchOutcome::PruneOnly)
            .tokens(20_000, 12_000),
    )));
    let mut trims_b = TrimAccumulator::default();
    let mut failed =
        Trim::new("b", TrimOutcome::KeptStoreFailed, TrimSource::ToolResult).tokens(7_000, 7_000);
    trims_b.record(&mut failed);
    lines.push(human(format_line(&failed)));

    // Malformed trim lines: cut, not an object, garbled.
    lines.push(human(
        r#"insert trim telemetry: {"outcome":"trimmed","session_id":"a","tok"#.into(),
    ));
    lines.push("insert trim telemetry: [1,2,3]".into());
    lines.push("insert trim telemetry: ".into());
    // A tracing JSON-formatter line of session "b" (a trimmed tool result).
    let mut json_trim =
        Trim::new("b", TrimOutcome::Trimmed, TrimSource::ToolResult).tokens(4_000, 300);
    trims_b.record(&mut json_trim);
    let envelope = serde_json::json!({
        "timestamp": "2026-03-14T10:00:02Z",
        "level": "INFO",
        "fields": {"message": format_line(&json_trim)},
        "target": "hermes_compaction::telemetry",
    });
    lines.push(envelope.to_string());
    lines.join("\n")
}

#[test]
fn trims_are_counted_by_outcome_and_source_with_savings_per_session() {
    let log = mixed_log();
    let r = Report::from_readers([log.as_bytes()], PER_SESSION).unwrap();

    assert_eq!(r.input.lines, 13);
    // 2 turns, 1 micro pass, 1 batch attempt, 5 trims.
    assert_eq!(r.input.events, 9, "{log}");
    assert_eq!(r.input.malformed_lines, 3);

    let a = &r.sessions["a"].trims;
    assert_eq!(a.trims, 3);
    assert_eq!(a.outcomes["trimmed"], 2);
    assert_eq!(a.outcomes["kept_no_store"], 1);
    assert_eq!(a.sources["tool_result"], 2);
    assert_eq!(a.sources["user_paste"], 1);
    assert_eq!(a.tokens_saved, 8_600 + 2_500);

    let b = &r.sessions["b"].trims;
    assert_eq!(b.trims, 2);
    assert_eq!(b.outcomes["kept_store_failed"], 1);
    assert_eq!(b.outcomes["trimmed"], 1);
    assert_eq!(b.tokens_saved, 3_700);

    let all = &r.overall.trims;
    assert_eq!(all.trims, 5);
    assert_eq!(all.outcomes.values().sum::<u64>(), 5);
    assert_eq!(all.outcomes["trimmed"], 3);
    assert_eq!(all.tokens_saved, 8_600 + 2_500 + 3_700);

    // The other kinds are read as before, and trims are folded into none of their figures.
    let o = &r.overall;
    assert_eq!((o.micro.passes, o.batch.attempts, o.turns.turns), (1, 1, 2));
    assert_eq!(o.micro.net_tokens_saved, 1_000);
    assert_eq!(o.economics.compression_events, 2);
    assert_eq!(o.economics.mean_tokens_reclaimed_per_event, Some(4_500.0));
    assert_eq!(o.sessions, 2);
}

#[test]
fn trims_appear_in_the_table_and_the_json() {
    let log = mixed_log();
    let r = Report::from_readers([log.as_bytes()], PER_SESSION).unwrap();
    let table = r.to_string();
    assert!(
        table.contains(
            "  insert trims                      5 (kept_no_store 1, kept_store_failed 1, trimmed 3)\n"
        ),
        "{table}"
    );
    assert!(
        table.contains("  insert trim sources               tool_result 4, user_paste 1\n"),
        "{table}"
    );
    assert!(
        table.contains("  tokens saved by trimming          14800\n"),
        "{table}"
    );
    // Session "b" has its own section with its own figure.
    let b = &table[table.find("== session b ==").unwrap()..];
    assert!(
        b.contains("  tokens saved by trimming          3700\n"),
        "{b}"
    );

    let json: serde_json::Value = serde_json::from_str(&r.to_json().unwrap()).unwrap();
    assert_eq!(json["overall"]["trims"]["trims"], 5);
    assert_eq!(json["overall"]["trims"]["tokens_saved"], 14_800);
    assert_eq!(json["overall"]["trims"]["outcomes"]["kept_store_failed"], 1);
    assert_eq!(json["sessions"]["a"]["trims"]["tokens_saved"], 11_100);
    assert_eq!(json["sessions"]["b"]["trims"]["sources"]["tool_result"], 2);
}

#[test]
fn a_kept_trim_saves_nothing_whatever_its_line_claims() {
    let log = concat!(
        r#"insert trim telemetry: {"outcome":"kept_no_store","session_id":"s","tokens_saved":999}"#,
        "\n",
        // An older or foreign line without `tokens_saved`: the counts give the saving.
        r#"insert trim telemetry: {"original_tokens":800,"outcome":"trimmed","session_id":"s","trimmed_tokens":50}"#,
    );
    let r = Report::from_readers([log.as_bytes()], ReportOptions::default()).unwrap();
    assert_eq!(r.input.events, 2);
    assert_eq!(r.overall.trims.trims, 2);
    assert_eq!(r.overall.trims.tokens_saved, 750);
    // Neither line names a source.
    assert!(r.overall.trims.sources.is_empty());
}
