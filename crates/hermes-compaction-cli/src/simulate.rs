//! `simulate`: argument parsing and printing over the `compaction-sim` crate, which replays
//! transcripts as an agent lives them, under several policies, and compares them.

use std::io::IsTerminal;
use std::path::Path;

use compaction_sim::render::to_json;
use compaction_sim::run::Progress;
use compaction_sim::{Policy, Prices, Pricing, Simulation};
use hermes_compaction::Config;
use hermes_compaction::core::Message;

use crate::cli::SimulateArgs;
use crate::input::{Input, InputFormat, Strictness};
use crate::setup::{SummarizerKind, build_summarizer, load_config};
use crate::{Error, Result, write_atomically, write_out};

/// The `+trim` policies' limit when neither the flag nor the configuration sets one.
pub const DEFAULT_INSERT_TRIM_TOKENS: u64 = 8_000;

/// How [`simulate`] runs, beyond the configuration.
#[derive(Clone, Debug, PartialEq)]
pub struct Options {
    /// Each pricing replays every transcript under every policy.
    pub pricings: Vec<Pricing>,
    /// Seconds assumed between two requests when the messages carry no timestamps.
    pub request_gap_secs: u64,
    /// The trim limit of the `+trim` policies, tokens.
    pub insert_trim_tokens: u64,
    /// The summarizer (`None`: the configuration's).
    pub summarizer: Option<SummarizerKind>,
    /// Draw a progress bar on stderr.
    pub progress: bool,
    /// Record the per-request trace.
    pub trace: bool,
    /// Record each distinct message of the traced prompts once.
    pub trace_text: bool,
}

impl Default for Options {
    /// The price table, 30 s between requests, trimming at 8,000 tokens.
    fn default() -> Self {
        Options {
            pricings: vec![Pricing::Table(Prices::default())],
            request_gap_secs: compaction_sim::replay::DEFAULT_REQUEST_GAP_SECS,
            insert_trim_tokens: DEFAULT_INSERT_TRIM_TOKENS,
            summarizer: None,
            progress: false,
            trace: false,
            trace_text: false,
        }
    }
}

/// A simulator error as a command error (exit 2 for configuration, else 1).
pub(crate) fn sim_error(e: compaction_sim::Error) -> Error {
    match e {
        compaction_sim::Error::Config(m) => Error::Config(m),
        compaction_sim::Error::Store(e) => Error::Store(e),
        other => Error::Pass(other.to_string()),
    }
}

/// Replays `inputs` under `policies` with the summarizer of `config` (or `options`).
pub fn simulate(
    inputs: &[(String, Vec<Message>)],
    policies: &[Policy],
    config: &Config,
    options: &Options,
) -> Result<Simulation> {
    let variants: Vec<_> = policies
        .iter()
        .map(|p| p.variant(config, options.insert_trim_tokens))
        .collect();
    let sim_options = compaction_sim::Options {
        pricings: options.pricings.clone(),
        request_gap_secs: options.request_gap_secs,
        trace: options.trace,
        trace_text: options.trace_text,
        threads: 0,
    };
    let kind = options.summarizer;
    let factory =
        || build_summarizer(config, kind).map_err(|e| compaction_sim::Error::Config(e.to_string()));
    let show = options.progress;
    let sim = compaction_sim::simulate(inputs, &variants, &sim_options, &factory, &|p| {
        progress_line(show, &p)
    })
    .map_err(sim_error)?;
    if show {
        #[allow(clippy::print_stderr)]
        {
            eprintln!();
        }
    }
    Ok(sim)
}

/// Runs `simulate`.
pub fn run(args: &SimulateArgs, out: &mut dyn std::io::Write) -> Result<()> {
    let config = load_config(args.engine.config.as_deref(), args.engine.context_length)?;
    let pricings = Pricing::select(
        args.cache_profile.as_deref(),
        args.prices.as_deref(),
        &config,
    )
    .map_err(sim_error)?;
    if (args.trace.is_some() || args.trace_text.is_some()) && pricings.len() > 1 {
        return Err(Error::Config(
            "--trace and --trace-text take one pricing (not --cache-profile all)".into(),
        ));
    }
    let inputs = read_inputs(&args.input, args.format)?;
    let mut policies = Vec::new();
    for p in &args.policies {
        if !policies.contains(p) {
            policies.push(*p);
        }
    }
    let insert_trim_tokens =
        args.insert_trim_tokens
            .unwrap_or(match config.compression.insert_trim_tokens {
                0 => DEFAULT_INSERT_TRIM_TOKENS,
                n => n,
            });
    if insert_trim_tokens == 0 {
        return Err(Error::Config(
            "--insert-trim-tokens must be more than 0".into(),
        ));
    }
    let options = Options {
        pricings,
        request_gap_secs: args.request_gap_secs,
        insert_trim_tokens,
        summarizer: args.engine.summarizer,
        progress: std::io::stderr().is_terminal(),
        trace: args.trace.is_some(),
        trace_text: args.trace_text.is_some(),
    };
    let sim = simulate(&inputs, &policies, &config, &options)?;
    if let Some(path) = &args.json {
        let json = serde_json::to_string_pretty(&to_json(&sim))
            .map_err(|e| Error::Config(format!("cannot render JSON: {e}")))?;
        write_atomically(path, json.as_bytes())?;
    }
    if let Some(path) = &args.plot {
        write_atomically(path, compaction_sim::plot::occupancy_svg(&sim).as_bytes())?;
    }
    if let Some(path) = &args.trace {
        write_atomically(path, sim.trace_jsonl(false).as_bytes())?;
    }
    if let Some(path) = &args.trace_text {
        write_atomically(path, sim.trace_jsonl(true).as_bytes())?;
    }
    let names: Vec<&str> = inputs.iter().map(|(n, _)| n.as_str()).collect();
    write_out(out, &sim.report(&names, args.per_transcript))
}

/// Reads the transcripts, each named by its file name.
pub(crate) fn read_inputs(
    paths: &[std::path::PathBuf],
    format: InputFormat,
) -> Result<Vec<(String, Vec<Message>)>> {
    let mut inputs = Vec::new();
    for path in paths {
        let input = Input::read_format(path, format, Strictness::COMPACTION)?;
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

fn progress_line(tty: bool, p: &Progress<'_>) {
    #[allow(clippy::print_stderr)]
    if tty {
        let width = 30;
        let filled = p.done * width / p.total.max(1);
        eprint!(
            "\r[{}{}] {}/{} {:<12} {:<40.40}",
            "#".repeat(filled),
            " ".repeat(width - filled),
            p.done,
            p.total,
            p.policy,
            p.transcript
        );
    } else {
        eprintln!(
            "simulated {}/{}: {} {}",
            p.done, p.total, p.policy, p.transcript
        );
    }
}
