//! `tune`: argument parsing and printing over `compaction_sim::tune` (which checks the options:
//! [`Pricing::select_one`], [`TuneOptions::check`]).

use std::io::IsTerminal;
use std::time::Instant;

use compaction_sim::Pricing;
use compaction_sim::render::progress_bar;
use compaction_sim::tune::{TuneOptions, tune};

use crate::cli::TuneArgs;
use crate::setup::{load_config, summarizer_factory};
use crate::simulate::read_inputs;
use crate::{Result, end_progress, write_json, write_out, write_output};

/// Runs `tune`.
pub fn run(args: &TuneArgs, out: &mut dyn std::io::Write) -> Result<()> {
    for (path, flag) in [
        (&args.output, "--output"),
        (&args.plot, "--plot"),
        (&args.json, "--json"),
    ] {
        if let Some(path) = path {
            crate::paths::output_target(path, flag)?;
        }
    }
    let mut config = load_config(&args.engine)?;
    if let Some(ratio) = args.summary_price_ratio {
        config.auxiliary.compression.price_ratio = ratio;
        config
            .validate()
            .map_err(|e| crate::Error::Config(format!("--summary-price-ratio: {e}")))?;
    }
    let pricing = Pricing::select_one(args.cache_profile.as_deref(), None, &config)?;
    let options = TuneOptions {
        pricing: pricing.clone(),
        request_gap_secs: args.request_gap_secs,
        budget: args.budget,
        seed: args.seed,
        micro: !args.no_micro,
        trim: !args.no_trim,
        warm: !args.no_warm,
        min_recall: args.min_recall,
        min_retention: args.min_retention,
        max_summary_calls: args.max_summary_calls,
        ..TuneOptions::default()
    };
    options.check()?;
    let inputs = read_inputs(&args.input, args.input_format.format)?;
    let factory = summarizer_factory(&config, args.engine.summarizer);
    let tty = std::io::stderr().is_terminal();
    let started = Instant::now();
    let show = |done: usize, total: usize| {
        #[allow(clippy::print_stderr)]
        if tty {
            let label = format!("configurations, {:.0} s", started.elapsed().as_secs_f64());
            eprint!("\r{}", progress_bar(done, total, &label));
        } else if done == total || done.is_multiple_of(8) {
            eprintln!("tuned {done}/{total} configurations");
        }
    };
    let tuning = tune(&inputs, &config, &options, &factory, &show)?;
    end_progress(tty);
    let toml = tuning.toml(&config, &pricing);
    if let Some(path) = &args.plot {
        write_output(path, "--plot", tuning.svg().as_bytes())?;
    }
    if let Some(path) = &args.json {
        write_json(path, "--json", &tuning)?;
    }
    let mut text = format!(
        "tuned over {} session(s) [{}], context {} tokens, in {:.1} s\n{}",
        inputs.len(),
        pricing.name(),
        config.model.context_length,
        started.elapsed().as_secs_f64(),
        tuning.table()
    );
    match &args.output {
        Some(path) => {
            write_output(path, "--output", toml.as_bytes())?;
            text.push_str(&format!(
                "recommended configuration written to {}\n",
                path.display()
            ));
        }
        None => {
            text.push_str("\nrecommended configuration:\n");
            text.push_str(&toml);
        }
    }
    write_out(out, &text)
}
