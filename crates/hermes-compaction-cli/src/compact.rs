//! `compact`: one kind of pass over one transcript file. The passes themselves are the
//! facade's ([`Compressor::one_shot`]); this module reads, writes and prints.

use compaction_telemetry::FileSink;
use hermes_compaction::core::parse;
use hermes_compaction::{Compressor, CompressorBuilder, OneShot, OneShotReport};

use crate::cli::{CompactArgs, Mode, PassArgs};
use crate::input::{self, Strictness, TranscriptFile};
use crate::setup::compressor_builder;
use crate::{Error, Result, runtime, write_out, write_output};

impl PassArgs {
    /// The facade's one-shot run for `--mode`; `--passes` limits micro runs and is a usage
    /// error (exit 2) with the other modes.
    pub fn one_shot(self) -> Result<OneShot> {
        match (self.mode, self.passes) {
            (Mode::Micro, passes) => Ok(OneShot::Micro { max_passes: passes }),
            (_, Some(_)) => Err(Error::Config(
                "--passes applies to --mode micro only".into(),
            )),
            (Mode::Batch, None) => Ok(OneShot::batch()),
            (Mode::Prune, None) => Ok(OneShot::Prune),
        }
    }
}

/// `line`, preceded by a `note: ...` line when the run says why it could not go further
/// (a micro run that ended over the threshold).
pub fn with_note(r: &OneShotReport, line: String) -> String {
    match &r.detail.note {
        Some(note) => format!("note: {note}\n{line}"),
        None => line,
    }
}

/// A run that did not do what was asked: an error (exit 1) that says which pass failed, why,
/// and what came before it. `after` says what happened to the output.
pub fn check(r: &OneShotReport, after: &str) -> Result<()> {
    if let Some(w) = r.fallback_warning() {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("{w}");
        }
    }
    match r.failure_line() {
        Some(line) => Err(Error::Pass(format!("{line}; {after}"))),
        None => Ok(()),
    }
}

/// Runs `compact`: reads, compacts, writes the output atomically and prints the
/// summary line ([`OneShotReport`]'s `Display`) to `out`. Nothing is written when a pass fails.
pub fn run(args: &CompactArgs, out: &mut dyn std::io::Write) -> Result<()> {
    let mode = args.pass.one_shot()?;
    if args.focus.is_some() && args.pass.mode != Mode::Batch {
        return Err(Error::Config("--focus applies to --mode batch only".into()));
    }
    let mode = match mode {
        OneShot::Batch { .. } => OneShot::Batch {
            focus: args.focus.clone(),
        },
        other => other,
    };
    let builder = compressor_builder(&args.engine, mode.clone())?;
    let input = input::read(
        &args.input,
        args.input_format.format,
        Strictness::COMPACTION,
    )?;
    if args.dry_run {
        return dry_run(args, builder, input, out);
    }
    let output = args
        .output
        .as_deref()
        .ok_or_else(|| Error::Config("--output is required (or --dry-run to preview)".into()))?;
    // What is not a regular file is refused before any work (or written through, never
    // replaced).
    crate::paths::output_target(output, "--output")?;
    if let Some(telemetry) = &args.telemetry {
        crate::paths::output_target(telemetry, "--telemetry")?;
        crate::paths::refuse_same_file(telemetry, "--telemetry", &args.input, "the input")?;
        crate::paths::refuse_same_file(telemetry, "--telemetry", output, "the output")?;
    }
    // The lines are held until the passes succeed: a failed run leaves no file.
    let telemetry = args
        .telemetry
        .as_deref()
        .map(FileSink::deferred)
        .transpose()
        .map_err(Error::Telemetry)?;
    let mut c = compressor(args, builder)?;
    let anthropic = input.anthropic;
    let mut t = c.transcript(input.messages);
    let rt = runtime()?;
    let report = rt.block_on(c.one_shot(&mut t, mode));
    check(&report, "nothing was written")?;
    if let Some(telemetry) = telemetry {
        telemetry.finish().map_err(Error::Telemetry)?;
    }
    let text = if anthropic {
        compaction_anthropic::to_jsonl(t.messages())
    } else {
        parse::to_jsonl(t.messages())
    };
    write_output(output, "--output", text.as_bytes())?;
    write_out(out, &with_note(&report, report.to_string()))
}

/// The compressor of a `compact` run, named after the input file.
fn compressor(args: &CompactArgs, builder: CompressorBuilder) -> Result<Compressor> {
    let session = args
        .input
        .file_stem()
        .map_or("transcript".into(), |s| s.to_string_lossy().into_owned());
    builder
        .session(session)
        .build()
        .map_err(|e| Error::Config(e.to_string()))
}

/// `compact --dry-run`: the preview of the pass `--mode` would run, printed, nothing written.
fn dry_run(
    args: &CompactArgs,
    builder: CompressorBuilder,
    input: TranscriptFile,
    out: &mut dyn std::io::Write,
) -> Result<()> {
    let mut c = compressor(args, builder)?;
    let t = c.transcript(input.messages);
    let preview = match args.pass.mode {
        Mode::Batch => c.preview(&t, OneShot::batch()),
        Mode::Prune => c.preview(&t, OneShot::Prune),
        Mode::Micro => c.preview(&t, OneShot::Micro { max_passes: None }),
    };
    if args.json {
        let text = serde_json::to_string(&preview).map_err(|e| Error::Io {
            what: "cannot encode the preview".into(),
            source: std::io::Error::other(e),
        })?;
        return write_out(out, &text);
    }
    write_out(out, &preview.to_string())
}
