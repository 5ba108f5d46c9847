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
/// context length given on the command line wins over all of them. The result is checked by
/// [`Config::validate`] alone (its error names the key, e.g. `model.context_length`, and the
/// allowed range), so every bound is stated in one place.
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

/// Writes this thread's telemetry lines (target [`TARGET`], INFO) to `path` until the
/// returned [`TelemetryFile`] is finished or dropped. The lines are the plain `tracing` format that `hermes-compaction report` reads.
pub fn telemetry_to_file(path: &Path) -> Result<TelemetryFile, Error> {
    use tracing_subscriber::util::SubscriberInitExt;
    let file = File::create(path).map_err(|e| Error::Io {
        what: format!("cannot create the telemetry file {}", path.display()),
        source: e,
    })?;
    let filter = tracing_subscriber::EnvFilter::try_new(format!("{TARGET}=info"))
        .map_err(|e| Error::Config(e.to_string()))?;
    let file = Arc::new(Mutex::new(CheckedFile { file, error: None }));
    let subscriber = tracing_subscriber::fmt()
        .with_env_filter(filter)
        .with_ansi(false)
        .with_writer(SharedFile(file.clone()))
        .finish();
    Ok(TelemetryFile {
        guard: Some(subscriber.set_default()),
        file,
        path: path.to_owned(),
    })
}

/// The telemetry sink of a command: event lines go to a file while it is alive. Call
/// [`TelemetryFile::finish`] when the passes are done: a line that could not be written (a
/// full disk, a device that refuses writes) is then an error naming the file, so a run never
/// reports success with its telemetry silently lost.
#[derive(Debug)]
pub struct TelemetryFile {
    guard: Option<tracing::subscriber::DefaultGuard>,
    file: Arc<Mutex<CheckedFile>>,
    path: std::path::PathBuf,
}

impl TelemetryFile {
    /// Stops collecting, flushes the file to disk and reports the first write failure.
    pub fn finish(mut self) -> Result<(), Error> {
        drop(self.guard.take());
        let mut file = self
            .file
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner);
        let synced = file.file.sync_all();
        let error = file.error.take().map_or(synced, Err);
        error.map_err(|e| Error::Io {
            what: format!("cannot write the telemetry file {}", self.path.display()),
            source: e,
        })
    }
}

/// A file that remembers its first write error (the logging layer drops errors).
#[derive(Debug)]
struct CheckedFile {
    file: File,
    error: Option<std::io::Error>,
}

impl std::io::Write for CheckedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        // All or nothing per line: a short write would leave half an event in the log.
        let result = self.file.write_all(buf).map(|()| buf.len());
        if let Err(e) = &result
            && self.error.is_none()
        {
            self.error = Some(std::io::Error::new(e.kind(), e.to_string()));
        }
        result
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.file.flush()
    }
}

/// A writer handed to the logging layer: one lock of the shared checked file per line.
#[derive(Debug, Clone)]
struct SharedFile(Arc<Mutex<CheckedFile>>);

impl std::io::Write for SharedFile {
    fn write(&mut self, buf: &[u8]) -> std::io::Result<usize> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .write(buf)
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.0
            .lock()
            .unwrap_or_else(std::sync::PoisonError::into_inner)
            .flush()
    }
}

impl<'a> tracing_subscriber::fmt::MakeWriter<'a> for SharedFile {
    type Writer = SharedFile;

    fn make_writer(&'a self) -> SharedFile {
        self.clone()
    }
}
