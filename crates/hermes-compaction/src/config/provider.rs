//! The provider table: each summarizer provider `auxiliary.compression.provider` may name,
//! and how it is built from the configuration. [`Config::validate`] accepts a provider by it,
//! [`summarizer_from_config`] builds by it and the command line's `--summarizer` lists it.
//! This crate's providers are its first rows ([`Provider::BUILT_IN`]); a provider of one's own
//! (an adapter over another model client) joins it with [`Provider::register`], before the
//! configuration naming it is loaded.

#[cfg(feature = "llm")]
use std::sync::Arc;
use std::sync::RwLock;

#[cfg(feature = "llm")]
use compaction_llm::{ExtractiveSummarizer, Summarizer};

#[cfg(feature = "llm")]
use super::Config;
use super::ConfigError;

/// Builds a provider's summarizer from the configuration (`auxiliary.compression`, and
/// `model.name` for a provider that falls back to the main model); a setting it cannot use
/// is a [`ConfigError::Invalid`] naming the key, never a secret.
#[cfg(feature = "llm")]
pub type BuildSummarizer = fn(&Config) -> Result<Arc<dyn Summarizer>, ConfigError>;

/// A row of the provider table: the name `auxiliary.compression.provider` and `--summarizer`
/// take, and its [`BuildSummarizer`]. Providers are equal when their names are.
///
/// ```
/// use hermes_compaction::{Config, Provider, summarizer_from_config};
///
/// let names: Vec<&str> = Provider::all().iter().map(|p| p.name()).collect();
/// assert_eq!(names[..2], ["extractive", "openai"]);
/// assert_eq!(Provider::from_name("openai"), Some(Provider::OPENAI));
/// assert_eq!(summarizer_from_config(&Config::default()).unwrap().name(), "extractive");
/// ```
#[derive(Clone, Copy)]
pub struct Provider {
    name: &'static str,
    #[cfg(feature = "llm")]
    build: BuildSummarizer,
}

/// The providers registered at run time, after this crate's own.
static REGISTERED: RwLock<Vec<Provider>> = RwLock::new(Vec::new());

impl Provider {
    /// The deterministic extractive summarizer: no network, nothing to configure (to
    /// [`summarizer_from_config`], an empty provider name means it too).
    pub const EXTRACTIVE: Provider = Provider {
        name: "extractive",
        #[cfg(feature = "llm")]
        build: extractive,
    };
    /// An OpenAI-compatible endpoint (cargo feature `openai`): `base_url`, `model` (empty
    /// means `model.name`), `api_key_env` (empty means no key, for local servers), `timeout`,
    /// `max_retries` and `temperature`; a key variable that is unset or blank is an error
    /// naming the variable, never a value. When `model` and `model.name` are both set and
    /// differ, `model` is the summary model and `model.name` the main model on the same
    /// endpoint: a summary-model failure that allows it (model not found, 5xx, timeout, a 402
    /// whose limit resets, a malformed response) is retried on the main model.
    pub const OPENAI: Provider = Provider {
        name: "openai",
        #[cfg(feature = "llm")]
        build: openai,
    };

    /// This crate's providers: the first rows of the table.
    pub const BUILT_IN: [Provider; 2] = [Provider::EXTRACTIVE, Provider::OPENAI];

    /// A provider of one's own: its name and how it is built. Add it to the table with
    /// [`register`](Self::register).
    #[cfg(feature = "llm")]
    pub const fn new(name: &'static str, build: BuildSummarizer) -> Provider {
        Provider { name, build }
    }

    /// Adds this provider to the table, so the configuration may name it. Registering a
    /// provider of a registered name again changes nothing; a built-in name, or an empty
    /// one, is an error naming it, and the table is left as it was.
    ///
    /// # Errors
    ///
    /// The name is taken by a built-in provider, or empty: the error is that name.
    pub fn register(self) -> Result<(), &'static str> {
        let mut registered = REGISTERED.write().unwrap_or_else(|e| e.into_inner());
        if self.name.is_empty() || Provider::BUILT_IN.contains(&self) {
            return Err(self.name);
        }
        if !registered.contains(&self) {
            registered.push(self);
        }
        Ok(())
    }

    /// Every provider: this crate's, then the registered ones in the order they were
    /// registered.
    pub fn all() -> Vec<Provider> {
        let registered = REGISTERED.read().unwrap_or_else(|e| e.into_inner());
        Provider::BUILT_IN
            .iter()
            .chain(registered.iter())
            .copied()
            .collect()
    }

    /// The provider of a name.
    pub fn from_name(name: &str) -> Option<Provider> {
        Provider::all().into_iter().find(|p| p.name == name)
    }

    /// The name.
    pub fn name(self) -> &'static str {
        self.name
    }

    /// Builds this provider's summarizer from `config`.
    ///
    /// # Errors
    ///
    /// A setting the provider cannot use, naming the key.
    #[cfg(feature = "llm")]
    pub fn build(self, config: &Config) -> Result<Arc<dyn Summarizer>, ConfigError> {
        (self.build)(config)
    }
}

impl PartialEq for Provider {
    fn eq(&self, other: &Provider) -> bool {
        self.name == other.name
    }
}

impl Eq for Provider {}

impl std::fmt::Debug for Provider {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_tuple("Provider").field(&self.name).finish()
    }
}

/// The error for a provider name no row has (the name shortened, the table's names listed
/// in the allowed text).
pub(super) fn unknown(name: &str) -> ConfigError {
    ConfigError::Invalid {
        key: "auxiliary.compression.provider",
        value: format!("{:?}", name.chars().take(32).collect::<String>()),
        allowed: "a provider of the table: \"extractive\", \"openai\" or one registered with Provider::register",
    }
}

/// Builds the summarizer `auxiliary.compression.provider` names, by the provider table
/// ([`Provider`]; empty means `extractive`).
///
/// ```
/// use hermes_compaction::{Config, summarizer_from_config};
///
/// let s = summarizer_from_config(&Config::default()).unwrap();
/// assert_eq!(s.name(), "extractive");
/// ```
///
/// # Errors
///
/// A provider no row has, or a setting its row cannot use (see [`Provider::OPENAI`]).
#[cfg(feature = "llm")]
pub fn summarizer_from_config(config: &Config) -> Result<Arc<dyn Summarizer>, ConfigError> {
    let name = match config.auxiliary.compression.provider.as_str() {
        "" => "extractive",
        name => name,
    };
    Provider::from_name(name)
        .ok_or_else(|| unknown(name))?
        .build(config)
}

#[cfg(feature = "llm")]
fn extractive(_: &Config) -> Result<Arc<dyn Summarizer>, ConfigError> {
    Ok(Arc::new(ExtractiveSummarizer::default()))
}

#[cfg(feature = "openai")]
fn openai(config: &Config) -> Result<Arc<dyn Summarizer>, ConfigError> {
    use std::time::Duration;

    use compaction_llm::{ApiKey, OpenAiConfig, OpenAiSummarizer, RetryConfig};

    let aux = &config.auxiliary.compression;
    let (aux_model, main_model) = (aux.model.trim(), config.model.name.trim());
    // The main model is the fallback of a separate summary model (the chain drops a summary
    // model equal to it).
    let (model, summary_model) = match (aux_model.is_empty(), main_model.is_empty()) {
        (true, _) => (main_model.to_owned(), None),
        (false, true) => (aux_model.to_owned(), None),
        (false, false) => (main_model.to_owned(), Some(aux_model.to_owned())),
    };
    if model.is_empty() {
        return Err(ConfigError::Invalid {
            key: "auxiliary.compression.model",
            value: "\"\"".into(),
            allowed: "a model name (or set model.name) for the openai summarizer",
        });
    }
    let base = aux.base_url.trim();
    if !(base.starts_with("http://") || base.starts_with("https://")) {
        // The URL itself is not printed: it may carry credentials.
        return Err(ConfigError::Invalid {
            key: "auxiliary.compression.base_url",
            value: "a URL without http:// or https://".into(),
            allowed: "an http:// or https:// URL",
        });
    }
    let key = if aux.api_key_env.is_empty() {
        ApiKey::None
    } else {
        match std::env::var(&aux.api_key_env) {
            Ok(v) if !v.trim().is_empty() => ApiKey::Env(aux.api_key_env.clone()),
            _ => {
                return Err(ConfigError::Invalid {
                    key: "auxiliary.compression.api_key_env",
                    value: format!("{:?} (unset or empty in the environment)", aux.api_key_env),
                    allowed: "the name of an environment variable holding the API key, or \"\" for a server without keys",
                });
            }
        }
    };
    let mut oc = OpenAiConfig::new(base.to_owned(), model, key);
    let chat = &mut oc.chat;
    chat.summary_model = summary_model;
    chat.timeout = Duration::from_secs(aux.timeout.max(1));
    chat.temperature = Some(f64::from(aux.temperature));
    // A call (its retries included) lasts about what the timeout and retries say, no more: a
    // `Retry-After` is honoured up to the request timeout, and no retry starts past the budget.
    let defaults = RetryConfig::default();
    chat.retry = Some(RetryConfig {
        max_retries: aux.max_retries,
        max_retry_after: defaults.max_retry_after.min(chat.timeout),
        max_total: Some(
            chat.timeout
                .saturating_mul(aux.max_retries.saturating_add(1)),
        ),
        ..defaults
    });
    let s = OpenAiSummarizer::new(oc).map_err(|e| ConfigError::Invalid {
        key: "auxiliary.compression",
        value: format!("provider \"openai\" ({})", e.class().as_str()),
        allowed: "settings the OpenAI-compatible client accepts",
    })?;
    Ok(Arc::new(s))
}

#[cfg(all(feature = "llm", not(feature = "openai")))]
fn openai(_config: &Config) -> Result<Arc<dyn Summarizer>, ConfigError> {
    Err(ConfigError::Invalid {
        key: "auxiliary.compression.provider",
        value: "\"openai\"".into(),
        allowed: "\"extractive\" (this build has no `openai` cargo feature)",
    })
}

#[cfg(all(test, feature = "llm"))]
mod tests {
    use super::*;

    #[test]
    fn extractive_is_the_default_and_an_unknown_provider_is_named() {
        let mut config = Config::default();
        assert_eq!(
            summarizer_from_config(&config).unwrap().name(),
            "extractive"
        );
        config.auxiliary.compression.provider = "mystery".into();
        let e = summarizer_from_config(&config).err().unwrap().to_string();
        assert!(e.contains("auxiliary.compression.provider"), "{e}");
    }

    #[cfg(feature = "openai")]
    #[test]
    fn openai_without_a_key_names_the_variable_and_not_a_value() {
        let mut config = Config::default();
        let aux = &mut config.auxiliary.compression;
        aux.provider = "openai".into();
        aux.model = "m".into();
        aux.base_url = "http://127.0.0.1:9/v1".into();
        aux.api_key_env = "HERMES_FACADE_TEST_NO_SUCH_KEY".into();
        let e = summarizer_from_config(&config).err().unwrap().to_string();
        assert!(e.contains("HERMES_FACADE_TEST_NO_SUCH_KEY"), "{e}");
        config.auxiliary.compression.api_key_env = String::new();
        let s = summarizer_from_config(&config).unwrap();
        assert_ne!(s.name(), "extractive");
        config.model.name.clear();
        config.auxiliary.compression.model.clear();
        let e = summarizer_from_config(&config).err().unwrap().to_string();
        assert!(e.contains("auxiliary.compression.model"), "{e}");
    }
}
