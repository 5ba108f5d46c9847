//! What every command builds first: the configuration and the summarizer (and for a one-shot
//! run, the compressor builder).

use std::path::Path;
use std::sync::Arc;

use hermes_compaction::llm::Summarizer;
use hermes_compaction::{Compressor, CompressorBuilder, Config, OneShot, summarizer_from_config};

use crate::Error;
use crate::cli::{EngineArgs, SummarizerKind};

/// The compressor builder the engine options give a one-shot `mode`: [`load_config`], then
/// the named profile of the configuration (`--profile`) applied over `[compression]` (an
/// unknown profile or a bad key in it is a configuration error, exit 2), and the summarizer
/// ([`build_summarizer`]).
pub fn compressor_builder(engine: &EngineArgs, mode: OneShot) -> Result<CompressorBuilder, Error> {
    let mut config = load_config(engine.config.as_deref(), engine.context_length)?;
    if let Some(name) = &engine.profile {
        config = config
            .with_profile(name)
            .map_err(|e| Error::Config(e.to_string()))?;
    }
    let summarizer = build_summarizer(&config, engine.summarizer)?;
    Ok(Compressor::builder(config)
        .summarizer(summarizer)
        .one_shot(mode))
}

/// Loads the configuration: defaults, then `file`, then `HERMES_COMPACTION__*` variables; a
/// context length given on the command line wins over all of them. The result is checked by
/// [`Config::validate`] alone (its error names the key, e.g. `model.context_length`, and the
/// allowed range), so every bound is stated in one place.
pub fn load_config(file: Option<&Path>, context_length: Option<u64>) -> Result<Config, Error> {
    let (mut config, warnings) =
        Config::load_with_warnings(file).map_err(|e| Error::Config(e.to_string()))?;
    for w in warnings {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("warning: {w}");
        }
    }
    if let Some(n) = context_length {
        config.model.context_length = n;
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
