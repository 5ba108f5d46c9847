//! What every command builds first: the configuration, the summarizer and the telemetry sink.

use std::fs::File;
use std::path::Path;
use std::sync::{Arc, Mutex};

use hermes_compaction::llm::Summarizer;
use hermes_compaction::telemetry::TARGET;
use hermes_compaction::{Config, summarizer_from_config};

use crate::Error;

/// Which summarizer a command uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum SummarizerKind {
    /// Deterministic, no network (the embedded default).
    #[default]
    Extractive,
    /// An OpenAI-compatible endpoint from `auxiliary.compression.*`.
    Openai,
}

/// Loads the configuration: defaults, then `file`, then `HERMES_COMPACTION__*` variables; a
/// context length given on the command line wins over all of them.
/// [`load_config`], then the named profile of the configuration (`--profile`) applied over
/// `[compression]`; an unknown profile or a bad key in it is a configuration error (exit 2).
pub fn load_config_with_profile(
    file: Option<&Path>,
    context_length: Option<u64>,
    profile: Option<&str>,
) -> Result<Config, Error> {
    let config = load_config(file, context_length)?;
    match profile {
        None => Ok(config),
        Some(name) => config
            .with_profile(name)
            .map_err(|e| Error::Config(e.to_string())),
    }
}

pub fn load_config(file: Option<&Path>, context_length: Option<u64>) -> Result<Config, Error> {
    let mut config = Config::load(file).map_err(|e| Error::Config(e.to_string()))?;
    if let Some(n) = context_length {
        config.model.context_length = n;
    }
    if config.model.context_length < 1_000 {
        return Err(Error::Config(format!(
            "context length {} is too small (at least 1000 tokens)",
            config.model.context_length
        )));
    }
    config
        .validate()
        .map_err(|e| Error::Config(e.to_string()))?;
    Ok(config)
}

/// Builds the summarizer with the facade's [`summarizer_from_config`]; `kind` (the
/// `--summarizer` flag) wins over `auxiliary.compression.provider` when given. A missing key
/// is a configuration error (exit 2) naming the variable, never its value.
pub fn build_summarizer(
    config: &Config,
    kind: Option<SummarizerKind>,
) -> Result<Arc<dyn Summarizer>, Error> {
    let mut config = config.clone();
    if let Some(kind) = kind {
        config.auxiliary.compression.provider = match kind {
            SummarizerKind::Extractive => "extractive",
            SummarizerKind::Openai => "openai",
        }
        .into();
    }
    summarizer_from_config(&config).map_err(|e| Error::Config(e.to_string()))
}

/// Writes this thread's telemetry lines (target [`TARGET`], INFO) to `path` while the guard
/// lives. The lines are the plain `tracing` format that `hermes-compaction report` reads.
pub fn telemetry_to_file(path: &Path) -> Result<tracing::subscriber::DefaultGuard, Error> {
    use tracing_subscriber::util::SubscriberInitExt;
    let file = File::create(path).map_err(|e| Error::Io {
        what: format!("cannot create the telemetry file {}", path.display()),
        source: e,
    })?;
    let filter = tracing_subscriber::EnvFilter::try_new(format!("{TARGET}=info"))
        .map_err(|e| Error::Config(e.to_string()))?;
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(Mutex::new(file))
        .finish();
    Ok(subscriber.set_default())
}
