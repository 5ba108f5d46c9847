//! What every command builds first: the configuration, the summarizer and the telemetry sink.

use std::fs::File;
use std::path::Path;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};

use hermes_compaction::core::tokens::estimate_text;
use hermes_compaction::llm::{Summarizer, SummaryFuture, SummaryRequest};
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

/// A summarizer wrapper that counts calls and tokens. Providers that report usage are taken
/// at their word; for the others (the extractive summarizer reports none) the prompt is
/// estimated from the material, the previous summary and the focus (or from the messages when
/// there is no material) and the output from the summary text, with the default estimator.
pub struct CountingSummarizer {
    inner: Arc<dyn Summarizer>,
    calls: AtomicU64,
    prompt_tokens: AtomicU64,
    output_tokens: AtomicU64,
    estimated: AtomicU64,
}

/// What a [`CountingSummarizer`] saw.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct SummaryUsage {
    /// Calls made (successful or not).
    pub calls: u64,
    /// Prompt tokens (reported or estimated).
    pub prompt_tokens: u64,
    /// Output tokens (reported or estimated).
    pub output_tokens: u64,
    /// Calls whose tokens were estimated because the summarizer reported no usage.
    pub estimated_calls: u64,
}

impl std::fmt::Debug for CountingSummarizer {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("CountingSummarizer")
            .field("inner", &self.inner.name())
            .field("usage", &self.usage())
            .finish()
    }
}

impl CountingSummarizer {
    /// Wraps `inner`.
    pub fn new(inner: Arc<dyn Summarizer>) -> CountingSummarizer {
        CountingSummarizer {
            inner,
            calls: AtomicU64::new(0),
            prompt_tokens: AtomicU64::new(0),
            output_tokens: AtomicU64::new(0),
            estimated: AtomicU64::new(0),
        }
    }

    /// What was counted so far.
    pub fn usage(&self) -> SummaryUsage {
        SummaryUsage {
            calls: self.calls.load(Ordering::Relaxed),
            prompt_tokens: self.prompt_tokens.load(Ordering::Relaxed),
            output_tokens: self.output_tokens.load(Ordering::Relaxed),
            estimated_calls: self.estimated.load(Ordering::Relaxed),
        }
    }
}

impl Summarizer for CountingSummarizer {
    fn name(&self) -> &str {
        self.inner.name()
    }

    fn summarize<'a>(&'a self, req: &'a SummaryRequest) -> SummaryFuture<'a> {
        Box::pin(async move {
            self.calls.fetch_add(1, Ordering::Relaxed);
            let out = self.inner.summarize(req).await;
            if let Ok(resp) = &out {
                let (p, o) = match resp.usage {
                    Some(u) => (u.prompt_tokens, u.completion_tokens),
                    None => {
                        self.estimated.fetch_add(1, Ordering::Relaxed);
                        (estimate_prompt(req), estimate_text(&resp.text))
                    }
                };
                self.prompt_tokens.fetch_add(p, Ordering::Relaxed);
                self.output_tokens.fetch_add(o, Ordering::Relaxed);
            }
            out
        })
    }
}

fn estimate_prompt(req: &SummaryRequest) -> u64 {
    let body = if req.material.is_empty() {
        req.messages
            .iter()
            .map(|m| estimate_text(&m.text()))
            .sum::<u64>()
    } else {
        estimate_text(&req.material)
    };
    body + req.previous_summary.as_deref().map_or(0, estimate_text)
        + req.focus.as_deref().map_or(0, estimate_text)
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
