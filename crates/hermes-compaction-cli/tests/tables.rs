//! The command line takes its lists from the tables: a log format and a summarizer provider
//! registered in-process are accepted by `--format` and `--summarizer` with no change to the
//! command line's code (the recipes of docs/ARCHITECTURE.md, seen from the CLI).

use std::sync::Arc;

use clap::Parser;
use compaction_logs::serde_json::{Map, Value};
use compaction_logs::{Error, Format, Log, LogReader, Options, TranscriptFormat};
use hermes_compaction::llm::{ExtractiveSummarizer, Summarizer};
use hermes_compaction::{Config, ConfigError, Provider};
use hermes_compaction_cli::{Cli, Command};

#[derive(Debug, Default)]
struct Nothing;

impl LogReader for Nothing {
    fn push_line(&mut self, _: usize, _: &str) -> Result<(), Error> {
        Ok(())
    }

    fn finish(self: Box<Self>) -> Result<Log, Error> {
        Ok(Log::default())
    }
}

fn never(_: &Map<String, Value>) -> bool {
    false
}

fn nothing(_: Options) -> Box<dyn LogReader> {
    Box::new(Nothing)
}

fn extractive(_: &Config) -> Result<Arc<dyn Summarizer>, ConfigError> {
    Ok(Arc::new(ExtractiveSummarizer::default()))
}

fn parse(format: &str, summarizer: &str) -> Result<Cli, clap::Error> {
    Cli::try_parse_from([
        "hermes-compaction",
        "simulate",
        "--input",
        "x.jsonl",
        "--format",
        format,
        "--summarizer",
        summarizer,
    ])
}

#[test]
fn format_and_summarizer_accept_what_the_tables_hold() {
    assert!(parse("cli-acme", "extractive").is_err());
    assert!(parse("codex", "cli-acme").is_err());
    Format::lines("cli-acme", "a CLI Acme line", never, nothing)
        .register()
        .unwrap();
    Provider::new("cli-acme", extractive).register().unwrap();
    let cli = parse("cli-acme", "cli-acme").expect("both registered names are accepted");
    let Command::Simulate(args) = cli.command else {
        panic!("simulate expected");
    };
    assert_eq!(
        args.input_format.format,
        TranscriptFormat::from_name("cli-acme").unwrap()
    );
    assert_eq!(args.engine.summarizer.map(Provider::name), Some("cli-acme"));
}
