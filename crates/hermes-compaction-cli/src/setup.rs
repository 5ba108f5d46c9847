//! What every command builds first: the configuration and the summarizer (and for a one-shot
//! run, the compressor builder).

use std::sync::Arc;

use hermes_compaction::config::ConfigLoader;
use hermes_compaction::llm::Summarizer;
use hermes_compaction::{
    Compressor, CompressorBuilder, Config, OneShot, Provider, summarizer_from_config,
};

use crate::Error;
use crate::cli::EngineArgs;

/// The compressor builder the engine options give a one-shot `mode`: [`load_config`] and
/// the summarizer ([`build_summarizer`]).
pub fn compressor_builder(engine: &EngineArgs, mode: OneShot) -> Result<CompressorBuilder, Error> {
    let config = load_config(engine)?;
    let summarizer = build_summarizer(&config, engine.summarizer)?;
    Ok(Compressor::builder(config)
        .summarizer(summarizer)
        .one_shot(mode))
}

/// The configuration the engine options name, resolved by the facade's [`ConfigLoader`]:
/// defaults, `--config`, `HERMES_COMPACTION__*` variables, `--context-length`, then
/// `--profile`, validated once by [`Config::validate`] (its error names the key, e.g.
/// `model.context_length`, and the allowed range; an unknown profile names the profile).
/// Deprecation warnings go to stderr.
pub fn load_config(engine: &EngineArgs) -> Result<Config, Error> {
    let mut loader = ConfigLoader::new().env();
    if let Some(file) = engine.config.as_deref() {
        loader = loader.file(file);
    }
    if let Some(n) = engine.context_length {
        loader = loader.context_length(n);
    }
    if let Some(name) = engine.profile.as_deref() {
        loader = loader.profile(name);
    }
    let (config, warnings) = loader.load().map_err(|e| Error::Config(e.to_string()))?;
    for w in warnings {
        #[allow(clippy::print_stderr)]
        {
            eprintln!("warning: {w}");
        }
    }
    Ok(config)
}

/// Builds the summarizer with the facade's [`summarizer_from_config`]; `kind` (the
/// `--summarizer` flag) wins over `auxiliary.compression.provider` when given. A missing key
/// is a configuration error (exit 2) naming the variable, never its value.
pub fn build_summarizer(
    config: &Config,
    kind: Option<Provider>,
) -> Result<Arc<dyn Summarizer>, Error> {
    let mut config = config.clone();
    if let Some(kind) = kind {
        config.auxiliary.compression.provider = kind.name().into();
    }
    summarizer_from_config(&config).map_err(|e| Error::Config(e.to_string()))
}

/// [`build_summarizer`] as the simulator calls it, once per replay (its error is the
/// simulator's configuration error).
pub fn summarizer_factory(
    config: &Config,
    kind: Option<Provider>,
) -> impl Fn() -> compaction_sim::Result<Arc<dyn Summarizer>> + Sync + '_ {
    move || build_summarizer(config, kind).map_err(|e| compaction_sim::Error::Config(e.to_string()))
}
