//! `simulate`: argument parsing and printing over the `compaction-sim` crate, which replays
//! transcripts as an agent lives them, under several policies, and compares them (and
//! resolves the options: [`Policy::variants`], [`Pricing::select`], [`Options::check`]).

use std::io::IsTerminal;
use std::path::Path;

use compaction_sim::latency::{LatencyModel, LatencyOptions};
use compaction_sim::render::{progress_bar, to_json};
use compaction_sim::run::Progress;
use compaction_sim::score::ForeignTrace;
use compaction_sim::{Options, Policy, Pricing, Simulation, Variant};
use hermes_compaction::Config;
use hermes_compaction::core::Message;

use crate::cli::SimulateArgs;
use crate::input::{self, Strictness, TranscriptFormat};
use crate::setup::{load_config, summarizer_factory};
use crate::{Result, end_progress, write_json, write_out, write_output};

/// Replays `inputs` under `variants` with the summarizer of `config` (or `summarizer`),
/// drawing a progress bar on stderr when it is a terminal.
pub fn simulate(
    inputs: &[(String, Vec<Message>)],
    variants: &[Variant],
    config: &Config,
    summarizer: Option<hermes_compaction::Provider>,
    options: &Options,
) -> Result<Simulation> {
    let factory = summarizer_factory(config, summarizer);
    let tty = std::io::stderr().is_terminal();
    let sim = compaction_sim::simulate(inputs, variants, options, &factory, &|p| {
        show_progress(tty, &p)
    })?;
    end_progress(tty);
    Ok(sim)
}

/// Runs `simulate`.
pub fn run(args: &SimulateArgs, out: &mut dyn std::io::Write) -> Result<()> {
    for (path, flag) in [
        (&args.json, "--json"),
        (&args.plot, "--plot"),
        (&args.trace, "--trace"),
        (&args.trace_text, "--trace-text"),
        (&args.needs, "--needs"),
    ] {
        if let Some(path) = path {
            crate::paths::output_target(path, flag)?;
        }
    }
    let config = load_config(&args.engine)?;
    let options = Options {
        pricings: Pricing::select(
            args.cache_profile.as_deref(),
            args.prices.as_deref(),
            &config,
        )?,
        request_gap_secs: args.request_gap_secs,
        trace: args.trace.is_some(),
        trace_text: args.trace_text.is_some(),
        threads: 0,
        latency: LatencyOptions {
            model: LatencyModel {
                fixed_ms: args.summary_latency_ms,
                per_output_token_ms: args.summary_ms_per_token,
            },
            prepare_at: args.prepare_at,
        },
        check_laws: args.check_laws,
    };
    options.check()?;
    let inputs = read_inputs(&args.input, args.input_format.format)?;
    if let Some(path) = &args.needs {
        let mut lines = String::new();
        for (name, msgs) in &inputs {
            lines.push_str(&compaction_sim::foresight::Needs::of(msgs).json_line(name, msgs));
            lines.push('\n');
        }
        write_output(path, "--needs", lines.as_bytes())?;
    }
    let mut variants = Policy::variants(&args.policies, &config, args.insert_trim_tokens)?;
    if args.ttl_compare {
        variants = variants
            .into_iter()
            .flat_map(|v| {
                let off = v.without_ttl_rule();
                [v, off]
            })
            .collect();
    }
    if !args.foresight.is_empty() {
        variants = variants
            .into_iter()
            .flat_map(|v| {
                let bounds: Vec<_> = args
                    .foresight
                    .iter()
                    .map(|&n| v.with_foresight(usize::try_from(n).unwrap_or(usize::MAX)))
                    .collect();
                std::iter::once(v).chain(bounds)
            })
            .collect();
    }
    if args.score_trace.is_some() && options.pricings.len() > 1 {
        return Err(crate::Error::Config(
            "--score-trace takes one pricing (not --cache-profile all)".into(),
        ));
    }
    let mut sim = simulate(
        &inputs,
        &variants,
        &config,
        args.engine.summarizer,
        &options,
    )?;
    if let (Some(trace), Some(text)) = (&args.score_trace, &args.score_text) {
        score_foreign(
            &mut sim,
            &inputs,
            &config,
            trace,
            text,
            args.score_totals.as_deref(),
        )?;
    }
    if let Some(path) = &args.json {
        write_json(path, "--json", &to_json(&sim))?;
    }
    if let Some(path) = &args.plot {
        write_output(
            path,
            "--plot",
            compaction_sim::plot::occupancy_svg(&sim).as_bytes(),
        )?;
    }
    if let Some(path) = &args.trace {
        write_output(path, "--trace", sim.trace_jsonl(false).as_bytes())?;
    }
    if let Some(path) = &args.trace_text {
        write_output(path, "--trace-text", sim.trace_jsonl(true).as_bytes())?;
    }
    let names: Vec<&str> = inputs.iter().map(|(n, _)| n.as_str()).collect();
    write_out(out, &sim.report(&names, args.per_transcript))?;
    if args.check_laws {
        let replays = sim.rows.len();
        write_out(
            out,
            &compaction_sim::render::law_lines(&sim.violations, replays),
        )?;
        if !sim.violations.is_empty() {
            return Err(crate::Error::Pass(format!(
                "{} law violations in {replays} replays (listed above)",
                sim.violations.len()
            )));
        }
    }
    Ok(())
}

/// Scores another compressor's trace over `inputs` with the simulator's scorer and adds it
/// to `sim` as one more policy.
fn score_foreign(
    sim: &mut Simulation,
    inputs: &[(String, Vec<Message>)],
    config: &Config,
    trace: &Path,
    text: &Path,
    totals: Option<&Path>,
) -> Result<()> {
    let read = |p: &Path| {
        std::fs::read_to_string(p).map_err(|source| crate::Error::Io {
            what: format!("reading {}", p.display()),
            source,
        })
    };
    let totals_text = totals.map(read).transpose()?;
    let names = [
        trace.display().to_string(),
        text.display().to_string(),
        totals.map(|p| p.display().to_string()).unwrap_or_default(),
    ];
    let foreign = ForeignTrace::parse(
        &read(trace)?,
        &read(text)?,
        totals_text.as_deref(),
        [&names[0], &names[1], &names[2]],
    )?;
    let profile = sim
        .pricings
        .first()
        .map_or("prices", Pricing::name)
        .to_owned();
    let (rows, total) = compaction_sim::score::score_foreign(
        &foreign,
        inputs,
        config.model.context_length,
        &profile,
    )?;
    sim.policies.push(total.policy.clone());
    sim.rows.extend(rows);
    sim.totals.push(total);
    Ok(())
}

/// Reads the transcripts, each named by its file name. A message read from a line that carries
/// a `timestamp` (every line of a Claude Code, Codex or pi log) is stamped with it
/// ([`compaction_sim::time::stamp_from_lines`]), so the replay sees the session's real gaps.
pub(crate) fn read_inputs(
    paths: &[std::path::PathBuf],
    format: TranscriptFormat,
) -> Result<Vec<(String, Vec<Message>)>> {
    let mut inputs = Vec::new();
    for path in paths {
        let mut input = input::read(path, format, Strictness::COMPACTION)?;
        if let Ok(text) = std::fs::read_to_string(path) {
            let line_of = |i| match input.position_of(i) {
                compaction_logs::TranscriptPosition::Line(n) => Some(n),
                _ => None,
            };
            let lines: Vec<Option<usize>> = (0..input.messages.len()).map(line_of).collect();
            compaction_sim::time::stamp_from_lines(&mut input.messages, &text, |i| lines[i]);
        }
        inputs.push((display_name(path), input.messages));
    }
    Ok(inputs)
}

fn display_name(path: &Path) -> String {
    path.file_name().map_or_else(
        || path.display().to_string(),
        |n| n.to_string_lossy().into_owned(),
    )
}

fn show_progress(tty: bool, p: &Progress<'_>) {
    #[allow(clippy::print_stderr)]
    if tty {
        let label = format!("{:<12} {:<40.40}", p.policy, p.transcript);
        eprint!("\r{}", progress_bar(p.done, p.total, &label));
    } else {
        eprintln!(
            "simulated {}/{}: {} {}",
            p.done, p.total, p.policy, p.transcript
        );
    }
}
