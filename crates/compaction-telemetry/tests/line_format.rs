//! The exact line forms, and their emission through tracing.

use compaction_core::micro::MicroOutcomeKind;
use compaction_telemetry::{
    BatchAttempt, BatchOutcome, FailureClass, MicroPass, SessionAccumulator, TARGET, TriggerSource,
    Trim, TrimAccumulator, TrimOutcome, TrimSource, Turn, Window, emit_batch, emit_micro,
    emit_trim, emit_turn, format_line,
};
#[cfg(feature = "subscriber")]
use compaction_telemetry::{LogFormat, init_subscriber};

use crate::common::capture;

pub(crate) const WINDOW: Window = Window {
    threshold_tokens: 34_816,
    context_limit: 40_960,
};

pub(crate) fn micro() -> MicroPass {
    let mut acc = SessionAccumulator::default();
    let mut pass = MicroPass::new("sess-1", MicroOutcomeKind::Absorbed)
        .tokens(12_739, 12_060)
        .messages(37, 36)
        .window(Some(WINDOW));
    pass.exchange_tokens = 868;
    pass.rolling_summary_tokens = 31;
    pass.cursor = 12;
    pass.duration_ms = 14;
    pass.main_model = Some("main-large".into());
    pass.aux_model = Some("aux-small".into());
    pass.earliest_changed_index = Some(5);
    pass.summary_tokens = 1_234;
    acc.record(&mut pass);
    pass
}

pub(crate) fn batch() -> BatchAttempt {
    let mut a = BatchAttempt::new("sess-1", TriggerSource::OverflowError, BatchOutcome::Failed)
        .window(Some(WINDOW))
        .tokens(40_000, 40_000)
        .regions(900, 35_000, 4_100)
        .messages(120, 120);
    a.failure_class = Some(FailureClass::RateLimited);
    a.fell_through = true;
    a.summary_model = Some("aux-small".into());
    a.main_model = Some("main-large".into());
    a.prune_ms = 3;
    a.summarize_ms = 850;
    a.total_duration_ms = 860;
    a
}

/// The second trim of a session: one earlier trim saved 2,000 tokens.
pub(crate) fn trim() -> Trim {
    let mut acc = TrimAccumulator {
        trims_total: 1,
        tokens_saved_total: 2_000,
    };
    let mut t =
        Trim::new("sess-1", TrimOutcome::Trimmed, TrimSource::ToolResult).tokens(9_120, 410);
    acc.record(&mut t);
    t
}

#[test]
fn micro_line_is_exact() {
    assert_eq!(
        format_line(&micro()),
        concat!(
            "micro compaction telemetry: {",
            r#""aux_model":"aux-small","context_limit":40960,"cursor":12,"duration_ms":14,"#,
            r#""earliest_changed_index":5,"event":"micro_compaction","exchange_tokens":868,"#,
            r#""main_model":"main-large","messages_after":36,"messages_before":37,"#,
            r#""occupancy_pct":34.6,"outcome":"absorbed","passes_total":1,"#,
            r#""rolling_summary_tokens":31,"session_id":"sess-1","summary_tokens":1234,"#,
            r#""threshold_tokens":34816,"tokens_after":12060,"tokens_before":12739,"#,
            r#""tokens_delta":-679,"tokens_saved_total":679}"#
        )
    );
}

#[test]
fn micro_line_without_window_has_nulls() {
    let pass = MicroPass::new("s", MicroOutcomeKind::Noop).tokens(100, 100);
    assert_eq!(
        format_line(&pass),
        concat!(
            "micro compaction telemetry: {",
            r#""aux_model":null,"context_limit":null,"cursor":0,"duration_ms":0,"#,
            r#""earliest_changed_index":null,"event":"micro_compaction","exchange_tokens":0,"#,
            r#""main_model":null,"messages_after":0,"messages_before":0,"occupancy_pct":null,"#,
            r#""outcome":"noop","passes_total":0,"rolling_summary_tokens":0,"session_id":"s","#,
            r#""summary_tokens":0,"threshold_tokens":null,"tokens_after":100,"#,
            r#""tokens_before":100,"tokens_delta":0,"tokens_saved_total":0}"#
        )
    );
}

/// The fallback flags appear only when set, so an ordinary line keeps its fields.
#[test]
fn fallback_flags_are_written_when_set() {
    let mut pass = MicroPass::new("s", MicroOutcomeKind::Absorbed).tokens(100, 60);
    assert!(!format_line(&pass).contains("fallback_used"));
    pass.fallback_used = true;
    pass.summarizer_skipped = true;
    let line = format_line(&pass);
    assert!(line.contains(r#""fallback_used":true"#), "{line}");
    assert!(line.contains(r#""summarizer_skipped":true"#), "{line}");
    let mut a = batch();
    a.summarizer_skipped = true;
    assert!(format_line(&a).contains(r#""summarizer_skipped":true"#));
}

/// A prepared summary's fate and waste appear only when one was waiting.
#[test]
fn prepared_fields_are_written_when_set() {
    let mut a = batch();
    let line = format_line(&a);
    assert!(!line.contains("prepared"), "{line}");
    a.prepared = Some("discarded_span_changed".into());
    a.prepared_wasted_tokens = 1_100;
    let line = format_line(&a);
    assert!(
        line.contains(r#""prepared":"discarded_span_changed""#),
        "{line}"
    );
    assert!(line.contains(r#""prepared_wasted_tokens":1100"#), "{line}");
}

#[test]
fn batch_line_is_exact() {
    assert_eq!(
        format_line(&batch()),
        concat!(
            "context compression attempt telemetry: {",
            r#""commit_status":"aborted","context_limit":40960,"earliest_changed_index":null,"#,
            r#""event":"compression_attempt","failure_class":"rate_limited","fallback_used":false,"#,
            r#""fell_through":true,"head_tokens":900,"main_model":"main-large","#,
            r#""messages_after":120,"messages_before":120,"middle_tokens":35000,"#,
            r#""occupancy_pct":114.9,"outcome":"failed","prune_accepted":false,"prune_ms":3,"#,
            r#""session_id":"sess-1","summarize_ms":850,"summary_model":"aux-small","#,
            r#""summary_tokens":0,"tail_tokens":4100,"threshold_tokens":34816,"#,
            r#""tokens_after":40000,"tokens_before":40000,"total_duration_ms":860,"#,
            r#""trigger_source":"overflow_error"}"#
        )
    );
}

#[test]
fn turn_line_is_exact() {
    let turn = Turn::new("sess-1", 7, None, 17_408, Some(WINDOW));
    assert_eq!(
        format_line(&turn),
        concat!(
            "compaction turn telemetry: {",
            r#""context_limit":40960,"estimated_tokens":17408,"event":"compaction_turn","#,
            r#""occupancy_pct":50.0,"prompt_tokens":null,"session_id":"sess-1","#,
            r#""threshold_tokens":34816,"turn":7}"#
        )
    );
}

#[test]
fn trim_line_is_exact() {
    assert_eq!(
        format_line(&trim()),
        concat!(
            "insert trim telemetry: {",
            r#""event":"insert_trim","original_tokens":9120,"outcome":"trimmed","#,
            r#""session_id":"sess-1","source":"tool_result","tokens_saved":8710,"#,
            r#""tokens_saved_total":10710,"trimmed_tokens":410,"trims_total":2}"#
        )
    );
    let kept = Trim::new("s", TrimOutcome::KeptStoreFailed, TrimSource::UserPaste).tokens(700, 700);
    assert_eq!(
        format_line(&kept),
        concat!(
            "insert trim telemetry: {",
            r#""event":"insert_trim","original_tokens":700,"outcome":"kept_store_failed","#,
            r#""session_id":"s","source":"user_paste","tokens_saved":0,"#,
            r#""tokens_saved_total":0,"trimmed_tokens":700,"trims_total":0}"#
        )
    );
}

#[test]
fn every_enum_value_has_the_documented_name() {
    let outcomes = [
        (MicroOutcomeKind::Absorbed, "absorbed"),
        (MicroOutcomeKind::SummarizeFailed, "summarize_failed"),
        (MicroOutcomeKind::ExchangeSkipped, "exchange_skipped"),
        (MicroOutcomeKind::Defrag, "defrag"),
        (MicroOutcomeKind::DefragFailed, "defrag_failed"),
        (MicroOutcomeKind::Gated, "gated"),
        (MicroOutcomeKind::Noop, "noop"),
    ];
    for (o, name) in outcomes {
        assert_eq!(o.as_str(), name);
        assert_eq!(serde_json::to_value(o).unwrap(), name);
    }
    let triggers = [
        (TriggerSource::Threshold, "threshold"),
        (TriggerSource::Preflight, "preflight"),
        (TriggerSource::Usage, "usage"),
        (TriggerSource::OverflowError, "overflow_error"),
        (TriggerSource::Manual, "manual"),
        (TriggerSource::Proactive, "proactive"),
    ];
    for (t, name) in triggers {
        assert_eq!(serde_json::to_value(t).unwrap(), name);
    }
    for (o, name) in [
        (BatchOutcome::Compacted, "compacted"),
        (BatchOutcome::PruneOnly, "prune_only"),
        (BatchOutcome::Failed, "failed"),
        (BatchOutcome::Skipped, "skipped"),
        (BatchOutcome::IrreducibleFloor, "irreducible_floor"),
    ] {
        assert_eq!(o.as_str(), name);
        assert_eq!(serde_json::to_value(o).unwrap(), name);
    }
    assert_eq!(
        serde_json::to_value(FailureClass::StaleGeneration).unwrap(),
        "stale_generation"
    );
    for (o, name) in [
        (TrimOutcome::Trimmed, "trimmed"),
        (TrimOutcome::KeptNoStore, "kept_no_store"),
        (TrimOutcome::KeptStoreFailed, "kept_store_failed"),
    ] {
        assert_eq!(o.as_str(), name);
        assert_eq!(serde_json::to_value(o).unwrap(), name);
    }
    for (s, name) in [
        (TrimSource::ToolResult, "tool_result"),
        (TrimSource::UserPaste, "user_paste"),
    ] {
        assert_eq!(s.as_str(), name);
        assert_eq!(serde_json::to_value(s).unwrap(), name);
    }
}

#[test]
fn events_round_trip_through_serde() {
    let m = micro();
    let back: MicroPass = serde_json::from_str(&serde_json::to_string(&m).unwrap()).unwrap();
    assert_eq!(back, m);
    // The line's JSON (with `event` and derived keys) reads back as the same event.
    let line = format_line(&batch());
    let json = line
        .strip_prefix("context compression attempt telemetry: ")
        .unwrap();
    let back: BatchAttempt = serde_json::from_str(json).unwrap();
    assert_eq!(back, batch());
    let line = format_line(&trim());
    let back: Trim =
        serde_json::from_str(line.strip_prefix("insert trim telemetry: ").unwrap()).unwrap();
    assert_eq!(back, trim());
}

#[test]
fn emission_writes_exactly_one_line_per_event_with_the_target() {
    let text = capture(false, || {
        emit_micro(&micro());
        emit_batch(&batch());
        emit_turn(&Turn::new("sess-1", 0, Some(10), 9, None));
        emit_trim(&trim());
    });
    let lines: Vec<&str> = text.lines().collect();
    assert_eq!(lines.len(), 4, "{text}");
    assert!(lines[0].contains(&format!(" INFO {TARGET}: {}", format_line(&micro()))));
    assert!(lines[1].ends_with(&format_line(&batch())));
    assert!(lines[3].contains(&format!(" INFO {TARGET}: {}", format_line(&trim()))));
    assert!(lines[2].ends_with("compaction turn telemetry: {\"context_limit\":null,\"estimated_tokens\":9,\"event\":\"compaction_turn\",\"occupancy_pct\":null,\"prompt_tokens\":10,\"session_id\":\"sess-1\",\"threshold_tokens\":null,\"turn\":0}"));
}

#[test]
fn nothing_is_formatted_when_the_target_is_disabled() {
    let sink = crate::common::Capture::default();
    let writer = sink.clone();
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter("warn")
        .with_writer(move || writer.clone())
        .finish();
    tracing::subscriber::with_default(subscriber, || emit_micro(&micro()));
    assert_eq!(sink.text(), "");
}

#[cfg(feature = "subscriber")]
#[test]
fn init_subscriber_reports_errors_instead_of_panicking() {
    let bad = init_subscriber(LogFormat::Human, "hermes_compaction=notalevel");
    assert!(
        matches!(bad, Err(compaction_telemetry::Error::Filter(_))),
        "{bad:?}"
    );
    // The first install may succeed or find one already set by the harness; the second
    // must report that one is set.
    let _first = init_subscriber(LogFormat::Json, "error");
    let second = init_subscriber(LogFormat::Human, "error");
    assert!(
        matches!(
            second,
            Err(compaction_telemetry::Error::SubscriberAlreadySet(_))
        ),
        "{second:?}"
    );
}
