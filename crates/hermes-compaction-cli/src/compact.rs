//! `compact`: one kind of pass over one transcript file. The passes themselves are the
//! facade's ([`Compressor::one_shot`]); this module reads, writes and prints.

use std::sync::Arc;

use hermes_compaction::core::{Estimator, parse};
use hermes_compaction::{Compressor, Failure, OneShot, OneShotReport};

use crate::cli::{CompactArgs, Mode};
use crate::input::{Input, Strictness};
use crate::setup::{build_summarizer, load_config, telemetry_to_file};
use crate::{Error, Result, runtime, write_atomically, write_out};

impl Mode {
    /// The facade's one-shot run for this mode; `passes` limits micro runs and is a usage
    /// error (exit 2) with the other modes.
    pub fn one_shot(self, passes: Option<u32>) -> Result<OneShot> {
        match (self, passes) {
            (Mode::Micro, _) => Ok(OneShot::Micro { max_passes: passes }),
            (_, Some(_)) => Err(Error::Config(
                "--passes applies to --mode micro only".into(),
            )),
            (Mode::Batch, None) => Ok(OneShot::Batch),
            (Mode::Prune, None) => Ok(OneShot::Prune),
        }
    }
}

/// The one-line summary of a run: `mode=... outcome=... passes=... messages=A->B tokens=A->B
/// earliest_changed=... demoted_tail_outputs=... ms=... threshold=... over_threshold=...`.
/// Counts only.
pub fn summary_line(r: &OneShotReport) -> String {
    format!(
        "mode={} outcome={} passes={} messages={}->{} tokens={}->{} earliest_changed={} demoted_tail_outputs={} ms={} threshold={} over_threshold={}",
        r.mode,
        r.outcome,
        r.passes,
        r.messages_before,
        r.messages_after,
        r.tokens_before,
        r.tokens_after,
        r.earliest_changed_index
            .map_or("-".to_owned(), |i| i.to_string()),
        r.demoted_tail_outputs,
        r.duration.as_millis(),
        r.threshold_tokens,
        r.over_threshold(),
    )
}

/// `line`, preceded by a `note: ...` line when the run says why it could not go further
/// (a micro run that ended over the threshold).
pub fn with_note(r: &OneShotReport, line: String) -> String {
    match &r.note {
        Some(note) => format!("note: {note}\n{line}"),
        None => line,
    }
}

/// Why a failed run failed, in words, without content.
pub fn failure_text(f: &Failure) -> String {
    match f {
        Failure::Summarizer(class) => format!("the summarizer failed ({})", class.as_str()),
        Failure::StaleGeneration => {
            "another writer compacted the session first (stale generation)".into()
        }
        other => format!("{other:?}").to_lowercase(),
    }
}

/// The stderr warning when passes ran on the extractive fallback rather than the configured
/// summarizer (it failed, or its circuit breaker was open), so a run that exits 0 on the
/// fallback says so. `None` when every summary came from the summarizer.
pub fn fallback_warning(r: &OneShotReport) -> Option<String> {
    if r.fallback_passes == 0 {
        return None;
    }
    let n = r.fallback_passes;
    let skipped = match r.skipped_passes {
        0 => String::new(),
        k => format!(
            "; {k} of them did not call it (circuit breaker open after repeated failures, see auxiliary.compression.breaker_failures)"
        ),
    };
    Some(format!(
        "warning: {n} pass{} used the extractive fallback because the summarizer failed{skipped}",
        if n == 1 { "" } else { "es" }
    ))
}

/// A run that did not do what was asked: an error (exit 1) that says which pass failed, why,
/// and what came before it. `after` says what happened to the output.
pub fn check(r: &OneShotReport, after: &str) -> Result<()> {
    if let Some(w) = fallback_warning(r) {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("{w}");
        }
    }
    let Some(f) = &r.failure else { return Ok(()) };
    let earlier = match r.passes {
        0 => String::new(),
        n => format!(
            " after {n} successful pass{}",
            if n == 1 { "" } else { "es" }
        ),
    };
    let cause = r
        .failure_cause
        .as_deref()
        .map_or(String::new(), |c| format!(": {c}"));
    Err(Error::Pass(format!(
        "the {} pass failed{earlier}: {}{cause} (outcome {}); {after}",
        r.mode,
        failure_text(f),
        r.outcome
    )))
}

/// Runs `compact`: reads, compacts, writes the output atomically and prints the
/// [`summary_line`] to `out`. Nothing is written when a pass fails.
pub fn run(args: &CompactArgs, out: &mut dyn std::io::Write) -> Result<()> {
    let mode = args.mode.one_shot(args.passes)?;
    if args.focus.is_some() && args.mode != Mode::Batch {
        return Err(Error::Config("--focus applies to --mode batch only".into()));
    }
    let mut config = load_config(args.engine.config.as_deref(), args.engine.context_length)?;
    mode.configure(&mut config);
    let summarizer = build_summarizer(&config, args.engine.summarizer)?;
    let input = Input::read_format(&args.input, args.format, Strictness::COMPACTION)?;
    if let Some(telemetry) = &args.telemetry {
        crate::paths::refuse_same_file(telemetry, "--telemetry", &args.input, "the input")?;
        crate::paths::refuse_same_file(telemetry, "--telemetry", &args.output, "the output")?;
    }
    let telemetry = args
        .telemetry
        .as_deref()
        .map(telemetry_to_file)
        .transpose()?;
    let session = args
        .input
        .file_stem()
        .map_or("transcript".into(), |s| s.to_string_lossy().into_owned());
    let mut c = Compressor::new(config, summarizer, Arc::new(Estimator::default()), session);
    let anthropic = input.anthropic;
    let mut t = c.transcript(input.messages);
    let rt = runtime()?;
    let report = rt.block_on(c.one_shot_with_focus(&mut t, mode, args.focus.clone()));
    check(&report, "nothing was written")?;
    if let Some(telemetry) = telemetry {
        telemetry.finish()?;
    }
    let text = if anthropic {
        hermes_compaction::core::anthropic::to_jsonl(t.messages())
    } else {
        parse::to_jsonl(t.messages())
    };
    write_atomically(&args.output, text.as_bytes())?;
    write_out(out, &with_note(&report, summary_line(&report)))
}
