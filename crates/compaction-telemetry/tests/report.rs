//! The report on small hand-written logs: golden table and JSON, gzip, Hermes Agent lines.

use compaction_telemetry::{Error, Report, ReportOptions, report};

use compaction_telemetry::{Turn, emit_batch, emit_micro, emit_trim, emit_turn};

use crate::common::{capture, check_golden, data};
use crate::line_format::{WINDOW, batch, micro, trim};

fn inputs() -> [std::path::PathBuf; 2] {
    [data("mixed.log"), data("json-formatter.log")]
}

#[test]
fn human_table_golden() {
    let out = report::run(
        &inputs(),
        ReportOptions {
            per_session: true,
            json: false,
        },
    )
    .unwrap();
    check_golden("report.per-session.txt", &out);
}

#[test]
fn json_golden() {
    let out = report::run(
        &inputs(),
        ReportOptions {
            per_session: true,
            json: true,
        },
    )
    .unwrap();
    check_golden("report.per-session.json", &out);
}

#[test]
fn overall_only_table_golden() {
    let out = report::run(&inputs(), ReportOptions::default()).unwrap();
    check_golden("report.overall.txt", &out);
}

/// The numbers of session "alpha", worked out by hand from `mixed.log`.
#[test]
fn alpha_numbers_by_hand() {
    let r = Report::from_paths(
        &[data("mixed.log")],
        ReportOptions {
            per_session: true,
            json: false,
        },
    )
    .unwrap();
    let a = &r.sessions["alpha"];
    assert_eq!(a.micro.passes, 3);
    assert_eq!(a.micro.outcomes["absorbed"], 2);
    assert_eq!(a.micro.outcomes["summarize_failed"], 1);
    assert_eq!(a.micro.net_tokens_saved, -330 + 800);
    assert_eq!(a.micro.mean_absorbed_exchange_tokens, Some(900.0));
    let d = a.micro.duration_ms.unwrap();
    assert_eq!((d.median, d.max), (40.0, 100));
    let o = a.micro.occupancy_pct.unwrap();
    assert_eq!((o.min, o.median, o.max), (33.3, 42.0, 42.0));
    assert_eq!(a.batch.compactions, 1);
    assert_eq!(a.batch.micro_passes_per_batch, Some(3.0));
    assert_eq!(a.turns.turns, 5);
    let t = a.turns.occupancy_pct.unwrap();
    assert_eq!((t.min, t.median, t.max), (10.0, 35.0, 90.0));
    let e = &a.economics;
    assert_eq!(e.compression_events, 3);
    assert_eq!(e.compression_events_per_100_turns, Some(60.0));
    // Events after turn lines 2, 3 and 4: gaps of one turn each.
    assert_eq!(e.mean_turns_between_compressions, Some(1.0));
    assert_eq!(e.summary_calls, 4);
    assert_eq!(e.mean_tokens_reclaimed_per_event, Some(2323.33));
    assert_eq!(e.prompt_tokens, 21_500);
    assert_eq!(e.summary_tokens, 3_100);
    assert_eq!(e.prompt_plus_summary_tokens, 24_600);
    let ec = e.earliest_changed_index.unwrap();
    assert_eq!((ec.min, ec.median), (1, 3.0));
    assert_eq!((e.prune_only, e.full_summary), (0, 1));
    assert_eq!(e.prune_only_to_full_summary, Some(0.0));

    let b = &r.sessions["beta"];
    assert_eq!((b.economics.prune_only, b.economics.full_summary), (1, 0));
    assert_eq!(b.economics.prune_only_to_full_summary, None);
    assert_eq!(b.batch.failure_classes["quota"], 1);
    // The failed attempt called the summarizer (it spent time there) but changed nothing.
    assert_eq!(b.economics.summary_calls, 1);
    assert_eq!(b.economics.compression_events, 1);
    assert_eq!(b.micro.occupancy_pct, None);

    // Hermes Agent lines have no session id and are grouped under "".
    let h = &r.sessions[""];
    assert_eq!(h.micro.net_tokens_saved, 679);
    assert_eq!(h.batch.outcomes["compacted"], 1);
    assert_eq!(h.batch.fallback_used, 1);
    assert_eq!(
        h.economics.mean_tokens_reclaimed_per_event,
        Some(((679 + 231_200 - 18_432) as f64 / 2.0 * 100.0).round() / 100.0)
    );

    assert_eq!(r.input.lines, 20);
    assert_eq!(r.input.events, 16);
    assert_eq!(r.input.malformed_lines, 1);
    assert_eq!(r.overall.sessions, 3);
}

#[cfg(feature = "gzip")]
#[test]
fn gzip_logs_read_like_plain_ones_and_cut_archives_are_counted() {
    use std::io::Write;

    let plain = std::fs::read(data("mixed.log")).unwrap();
    let mut enc = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::default());
    enc.write_all(&plain).unwrap();
    let gz = enc.finish().unwrap();
    let dir = tempfile::tempdir().unwrap();
    let path = dir.path().join("agent.log.gz");
    std::fs::write(&path, &gz).unwrap();

    let opts = ReportOptions {
        per_session: true,
        json: false,
    };
    let from_plain = Report::from_paths(&[data("mixed.log")], opts).unwrap();
    let from_gz = Report::from_paths(&[&path], opts).unwrap();
    assert_eq!(from_gz, from_plain);

    // Cut the archive in half: what was decoded counts, the input is reported truncated.
    let cut = Report::from_readers([&gz[..gz.len() / 2]], opts).unwrap();
    assert_eq!(cut.input.truncated_inputs, 1);
    assert!(cut.input.events < from_plain.input.events);
    assert_eq!(from_plain.input.truncated_inputs, 0);
}

#[test]
fn a_missing_file_is_an_error_naming_it() {
    let missing = data("no-such.log");
    let err = Report::from_paths(&[&missing], ReportOptions::default()).unwrap_err();
    match err {
        Error::Io { path, .. } => assert_eq!(path, missing),
        other => panic!("unexpected error {other:?}"),
    }
}

#[test]
fn empty_input_gives_an_empty_report() {
    let r = Report::from_readers([&b""[..]], ReportOptions::default()).unwrap();
    assert_eq!(r.input.inputs, 1);
    assert_eq!(r.input.lines, 0);
    assert_eq!(r.overall.sessions, 0);
    assert_eq!(r.overall.micro.duration_ms, None);
    assert!(
        r.to_string()
            .contains("mean absorbed exchange tokens     -")
    );
}

#[test]
fn emitted_lines_read_back_in_both_formatters() {
    let emit_all = || {
        emit_micro(&micro());
        emit_batch(&batch());
        emit_turn(&Turn::new("sess-1", 0, Some(10), 9, Some(WINDOW)));
        emit_trim(&trim());
    };
    for json in [false, true] {
        let text = capture(json, emit_all);
        if json {
            assert!(
                text.contains(r#""fields":{"message":"micro compaction telemetry: {\"aux_model\""#),
                "{text}"
            );
        }
        let report = Report::from_readers([text.as_bytes()], ReportOptions::default()).unwrap();
        assert_eq!(report.input.events, 4, "json={json}: {text}");
        assert_eq!(report.input.skipped_lines(), 0);
        assert_eq!(report.overall.micro.passes, 1);
        assert_eq!(report.overall.micro.net_tokens_saved, 679);
        assert_eq!(report.overall.batch.failure_classes["rate_limited"], 1);
        assert_eq!(report.overall.turns.turns, 1);
        assert_eq!(report.overall.trims.outcomes["trimmed"], 1);
        assert_eq!(report.overall.trims.tokens_saved, 8_710);
    }
}
