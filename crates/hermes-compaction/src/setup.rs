//! The summarizer `auxiliary.compression` describes, built once for every caller (the command
//! line, an agent framework, the simulator).

use std::sync::Arc;

use compaction_llm::{ExtractiveSummarizer, Summarizer};

use crate::config::{Config, ConfigError};

/// Builds the summarizer `auxiliary.compression.provider` names.
///
/// `extractive` (or an empty provider) needs nothing else. `openai` (cargo feature `openai`)
/// reads `base_url`, `model` (empty means `model.name`), `api_key_env` (empty means no key,
/// for local servers), `timeout`, `max_retries` and `temperature`; a key variable that is
/// unset or blank is an error naming the variable, never a value. When `model` and
/// `model.name` are both set and differ, `model` is the summary model and `model.name` the
/// main model on the same endpoint: a summary-model failure that allows it (model not found,
/// 5xx, timeout, a 402 whose limit resets, a malformed response) is retried on the main model.
///
/// ```
/// use hermes_compaction::{Config, summarizer_from_config};
///
/// let s = summarizer_from_config(&Config::default()).unwrap();
/// assert_eq!(s.name(), "extractive");
/// ```
pub fn summarizer_from_config(config: &Config) -> Result<Arc<dyn Summarizer>, ConfigError> {
    match config.auxiliary.compression.provider.as_str() {
        "" | "extractive" => Ok(Arc::new(ExtractiveSummarizer::default())),
        "openai" => openai(config),
        other => Err(ConfigError::Invalid {
            key: "auxiliary.compression.provider",
            value: format!("{:?}", other.chars().take(32).collect::<String>()),
            allowed: "\"extractive\" or \"openai\"",
        }),
    }
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
    oc.summary_model = summary_model;
    oc.timeout = Duration::from_secs(aux.timeout.max(1));
    oc.temperature = Some(f64::from(aux.temperature));
    // A call (its retries included) lasts about what the timeout and retries say, no more: a
    // `Retry-After` is honoured up to the request timeout, and no retry starts past the budget.
    let defaults = RetryConfig::default();
    oc.retry = RetryConfig {
        max_retries: aux.max_retries,
        max_retry_after: defaults.max_retry_after.min(oc.timeout),
        max_total: Some(oc.timeout.saturating_mul(aux.max_retries.saturating_add(1))),
        ..defaults
    };
    let s = OpenAiSummarizer::new(oc).map_err(|e| ConfigError::Invalid {
        key: "auxiliary.compression",
        value: format!("provider \"openai\" ({})", e.class().as_str()),
        allowed: "settings the OpenAI-compatible client accepts",
    })?;
    Ok(Arc::new(s))
}

#[cfg(not(feature = "openai"))]
fn openai(_config: &Config) -> Result<Arc<dyn Summarizer>, ConfigError> {
    Err(ConfigError::Invalid {
        key: "auxiliary.compression.provider",
        value: "\"openai\"".into(),
        allowed: "\"extractive\" (this build has no `openai` cargo feature)",
    })
}

#[cfg(test)]
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
