//! [`ConfigLoader`]: the one way to load a configuration.

use std::path::Path;

use figment::Figment;
use figment::providers::{Format, Serialized, Toml};

use super::{Config, ConfigError, DEPRECATED_KEYS, ENV_PREFIX};

/// The one way to load a configuration: layers resolved in one place and validated once.
/// Whatever order the methods are called in, the layers apply in this order: the defaults,
/// then a TOML [`file`](Self::file) or [`toml`](Self::toml) text, then the
/// `HERMES_COMPACTION__*` environment variables when [`env`](Self::env) is asked for, then
/// [`context_length`](Self::context_length) (a command line's or a framework's model window),
/// then the named [`profile`](Self::profile) over `[compression]`. [`Config::validate`] runs
/// on the result, after every layer, so a value is judged by the one rule whatever layer set
/// it; then `compression.redaction_rules` is installed. [`load`](Self::load) returns the
/// deprecation warnings (a deprecated key, [`DEPRECATED_KEYS`], is read as its new name)
/// beside the configuration, for the caller to show.
///
/// ```
/// # #[cfg(feature = "config")] {
/// use hermes_compaction::config::ConfigLoader;
///
/// let dir = std::env::temp_dir().join(format!("loader-doc-{}", std::process::id()));
/// std::fs::create_dir_all(&dir).unwrap();
/// let file = dir.join("hermes.toml");
/// std::fs::write(&file, "[compression]\nthreshold = 0.6\n[profiles.sub]\nthreshold = 0.8\n").unwrap();
/// let (config, warnings) = ConfigLoader::new()
///     .file(&file)
///     .env()
///     .context_length(32_000)
///     .profile("sub")
///     .load()
///     .unwrap();
/// assert_eq!(config.model.context_length, 32_000);
/// assert_eq!(config.compression.threshold, 0.8);
/// assert!(warnings.is_empty());
/// // Every layer is checked by the same rule: a window the file would accept is refused
/// // when the override makes it too small, naming the key.
/// let err = ConfigLoader::new().context_length(10).load().unwrap_err();
/// assert!(err.to_string().contains("model.context_length"));
/// // TOML text (tests, embedding); a deprecated key is read as its new name, with a warning.
/// let (config, warnings) = ConfigLoader::new().toml("[compression]\ntarget_ratio = 0.1\n").load().unwrap();
/// assert_eq!(config.compression.tail_ratio, 0.1);
/// assert_eq!(
///     warnings,
///     ["configuration: `compression.target_ratio` is deprecated: write `compression.tail_ratio`"]
/// );
/// # std::fs::remove_dir_all(&dir).unwrap();
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default)]
pub struct ConfigLoader<'a> {
    source: Source<'a>,
    env: bool,
    context_length: Option<u64>,
    profile: Option<&'a str>,
}

/// The TOML layer of a [`ConfigLoader`].
#[derive(Clone, Copy, Debug, Default)]
enum Source<'a> {
    #[default]
    None,
    File(&'a Path),
    Text(&'a str),
}

impl<'a> ConfigLoader<'a> {
    /// The defaults alone; add layers with the other methods.
    pub fn new() -> ConfigLoader<'a> {
        ConfigLoader::default()
    }

    /// Reads the TOML file at `path` over the defaults (it must exist). Replaces an earlier
    /// [`toml`](Self::toml) text.
    pub fn file(mut self, path: &'a Path) -> ConfigLoader<'a> {
        self.source = Source::File(path);
        self
    }

    /// Reads TOML `text` over the defaults (tests, embedding). Replaces an earlier
    /// [`file`](Self::file).
    pub fn toml(mut self, text: &'a str) -> ConfigLoader<'a> {
        self.source = Source::Text(text);
        self
    }

    /// Reads the `HERMES_COMPACTION__*` environment variables over the file (a double
    /// underscore separates the key's parts: `HERMES_COMPACTION__COMPRESSION__THRESHOLD`).
    pub fn env(mut self) -> ConfigLoader<'a> {
        self.env = true;
        self
    }

    /// Sets the main model's context length over the file and the environment.
    pub fn context_length(mut self, tokens: u64) -> ConfigLoader<'a> {
        self.context_length = Some(tokens);
        self
    }

    /// Applies the `[profiles.NAME]` table over `[compression]` ([`Config::with_profile`]).
    pub fn profile(mut self, name: &'a str) -> ConfigLoader<'a> {
        self.profile = Some(name);
        self
    }

    /// Resolves every layer and validates the result once; returns the deprecation warnings
    /// (one line each, naming the old and the new key) and the redaction ruleset's beside it.
    pub fn load(self) -> Result<(Config, Vec<String>), ConfigError> {
        let mut fig = Figment::new();
        match self.source {
            Source::None => {}
            Source::File(path) => fig = fig.merge(Toml::file_exact(path)),
            Source::Text(text) => fig = fig.merge(Toml::string(text)),
        }
        if self.env {
            fig = fig.merge(
                crate::config_env::EnvOverrides::prefixed(ENV_PREFIX)
                    .with_text_keys(super::keys::text_keys()),
            );
        }
        let (mut config, warnings) = Config::from_figment(fig)?;
        if let Some(n) = self.context_length {
            config.model.context_length = n;
        }
        if let Some(name) = self.profile {
            config = config.apply_profile(name)?;
        }
        config.validate()?;
        let mut warnings = warnings;
        warnings.extend(config.install_redaction_rules()?);
        Ok((config, warnings))
    }
}

impl Config {
    /// The defaults, then `user` (what the file and the environment set), not yet validated.
    /// A deprecated key the user set is read through its serde alias, so its new name is left
    /// out of the defaults (else serde would see the field twice); both names set by the user
    /// is an error naming the field.
    fn from_figment(user: Figment) -> Result<(Config, Vec<String>), ConfigError> {
        let renamed: Vec<(&str, &str)> = DEPRECATED_KEYS
            .into_iter()
            .filter(|(old, _)| user.contains(&format!("compression.{old}")))
            .collect();
        let mut warnings: Vec<String> = renamed
            .iter()
            .map(|(old, new)| deprecation("compression", old, new))
            .collect();
        let mut defaults = figment::value::Value::serialize(Config::default()).map_err(Box::new)?;
        if let figment::value::Value::Dict(_, top) = &mut defaults
            && let Some(figment::value::Value::Dict(_, compression)) = top.get_mut("compression")
        {
            for (_, new) in &renamed {
                compression.remove(*new);
            }
        }
        let fig = Figment::from(Serialized::defaults(defaults)).merge(user);
        let cfg: Config = fig.extract().map_err(Box::new)?;
        for (name, table) in &cfg.profiles {
            for (old, new) in DEPRECATED_KEYS {
                if table.contains_key(old) {
                    warnings.push(deprecation(&format!("profiles.{name}"), old, new));
                }
            }
        }
        Ok((cfg, warnings))
    }
}

fn deprecation(table: &str, old: &str, new: &str) -> String {
    format!("configuration: `{table}.{old}` is deprecated: write `{table}.{new}`")
}
