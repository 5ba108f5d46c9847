//! Configuration with figment: defaults, then a TOML file, then `HERMES_COMPACTION__*`
//! environment variables. `config/default.toml` in the repository documents every key.

#[cfg(feature = "config")]
use std::path::Path;

#[cfg(feature = "config")]
use figment::Figment;
#[cfg(feature = "config")]
use figment::providers::{Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

use compaction_core::cache::CacheProfile;
use compaction_core::defaults;
use compaction_core::regions::{RegionConfig, WindowConfig};
use compaction_core::trim::TrimConfig;

/// The smallest absolute threshold cap `compression.threshold_tokens` accepts (0 turns the cap
/// off).
pub const MIN_THRESHOLD_TOKENS: u64 = 1_024;

/// The smallest `model.context_length` accepted (the CLI's `--context-length` included).
pub const MIN_CONTEXT_LENGTH: u64 = defaults::MIN_CONTEXT_LENGTH;

/// Keys of `[compression]` (and of a profile) that were renamed: the old name is still
/// accepted, with a warning, as the new one. Old name, new name.
pub const DEPRECATED_KEYS: [(&str, &str); 1] = [("target_ratio", "tail_ratio")];

/// Prefix of environment overrides; `__` separates levels.
pub const ENV_PREFIX: &str = "HERMES_COMPACTION__";

/// The whole configuration.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
///
/// ```
/// use hermes_compaction::Config;
///
/// // Plain data: build it in code...
/// let mut config = Config::default();
/// config.model.context_length = 32_000;
/// config.compression.threshold = 0.6;
/// assert!(config.validate().is_ok());
/// config.compression.threshold = 1.5;
/// assert!(config.validate().unwrap_err().to_string().contains("compression.threshold"));
///
/// // ...or (feature `config`) load it: defaults, then a TOML file, then `HERMES_COMPACTION__*`.
/// # #[cfg(feature = "config")] {
/// let config = Config::from_toml_str("[model]\ncontext_length = 32000\n").unwrap();
/// assert_eq!(config.model.context_length, 32_000);
/// # }
/// ```
pub struct Config {
    /// The main model.
    pub model: ModelConfig,
    /// Compaction policy.
    pub compression: CompressionConfig,
    /// Auxiliary models.
    pub auxiliary: AuxiliaryConfig,
    /// Named policies for kinds of sessions (`[profiles.subagent]`): each is a table of
    /// `compression` keys that override the `[compression]` table for a session built with
    /// [`Config::with_profile`] (the CLI's `--profile`). Empty by default.
    pub profiles: std::collections::BTreeMap<String, serde_json::Map<String, serde_json::Value>>,
}

/// The main model.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct ModelConfig {
    /// Context window in tokens.
    pub context_length: u64,
    /// Tokens reserved for output.
    pub output_reserve_tokens: u64,
    /// Model name: telemetry, and the main-model fallback of the `openai` summarizer when
    /// `auxiliary.compression.model` names another model.
    pub name: String,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            context_length: defaults::CONTEXT_LENGTH,
            output_reserve_tokens: 0,
            name: String::new(),
        }
    }
}

/// Compaction policy. See `config/default.toml` for what each key does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompressionConfig {
    pub enabled: bool,
    pub threshold: f64,
    pub small_window_tokens: u64,
    pub small_window_min_threshold: f64,
    pub threshold_floor_tokens: u64,
    pub floor_cap: f64,
    pub threshold_tokens: u64,
    pub protect_first_n: usize,
    pub protect_last_n: usize,
    pub min_tail_user_messages: usize,
    /// The tail budget as a fraction of the threshold (formerly `target_ratio`, still
    /// accepted with a warning).
    #[serde(alias = "target_ratio")]
    pub tail_ratio: f64,
    pub tail_soft_ceiling: f64,
    pub max_attempts: u32,
    pub prune_minimum_tokens: u64,
    pub prune_runway_ratio: f64,
    pub prune_tool_output_min_tokens: u64,
    pub prune_argument_max_chars: usize,
    pub proactive_prune_tokens: u64,
    pub prune_keep_cited: bool,
    pub prune_names_max_chars: usize,
    pub proactive_prune_min_reclaim_tokens: u64,
    pub protected_tools: Vec<String>,
    pub fallback_to_extractive: bool,
    pub failure_cooldown_secs: u64,
    pub failure_cooldown_max_secs: u64,
    pub anti_thrash_max_ineffective: u32,
    pub anti_thrash_probe_secs: u64,
    pub strict_alternation: bool,
    pub summary_max_tokens: u32,
    pub ledger_max_tokens: u64,
    pub micro_compact: bool,
    pub micro_compact_every_n_turns: u64,
    pub micro_compact_defrag_threshold_tokens: u64,
    pub micro_compact_max_consecutive_failures: u32,
    pub micro_compact_min_reclaim_tokens: ReclaimGate,
    pub micro_compact_gate_horizon_requests: u64,
    pub insert_trim_tokens: u64,
    pub insert_trim_head_chars: usize,
    pub insert_trim_tail_chars: usize,
    pub insert_trim_user_pastes: bool,
    pub cache_profile: String,
    pub cache_aware: bool,
    pub cache_custom: CacheProfile,
}

impl Default for CompressionConfig {
    fn default() -> Self {
        CompressionConfig {
            enabled: true,
            threshold: defaults::THRESHOLD,
            small_window_tokens: defaults::SMALL_WINDOW_TOKENS,
            small_window_min_threshold: defaults::SMALL_WINDOW_MIN_THRESHOLD,
            threshold_floor_tokens: defaults::THRESHOLD_FLOOR_TOKENS,
            floor_cap: defaults::FLOOR_CAP,
            threshold_tokens: defaults::THRESHOLD_CAP_TOKENS,
            protect_first_n: defaults::PROTECT_FIRST_N,
            protect_last_n: defaults::PROTECT_LAST_N,
            min_tail_user_messages: defaults::MIN_TAIL_USER_MESSAGES,
            tail_ratio: defaults::TAIL_RATIO,
            tail_soft_ceiling: defaults::TAIL_SOFT_CEILING,
            max_attempts: 3,
            prune_minimum_tokens: defaults::PRUNE_MINIMUM_TOKENS,
            prune_runway_ratio: defaults::PRUNE_RUNWAY_RATIO,
            prune_tool_output_min_tokens: defaults::PRUNE_TOOL_OUTPUT_MIN_TOKENS,
            prune_argument_max_chars: defaults::PRUNE_ARGUMENT_MAX_CHARS,
            proactive_prune_tokens: defaults::PROACTIVE_PRUNE_TOKENS,
            prune_keep_cited: defaults::PRUNE_KEEP_CITED,
            prune_names_max_chars: defaults::PRUNE_NAMES_MAX_CHARS,
            proactive_prune_min_reclaim_tokens: 4_096,
            protected_tools: defaults::protected_tools(),
            fallback_to_extractive: true,
            failure_cooldown_secs: 60,
            failure_cooldown_max_secs: 900,
            anti_thrash_max_ineffective: 2,
            anti_thrash_probe_secs: 300,
            strict_alternation: defaults::STRICT_ALTERNATION,
            summary_max_tokens: defaults::SUMMARY_MAX_TOKENS,
            ledger_max_tokens: defaults::LEDGER_MAX_TOKENS,
            micro_compact: false,
            micro_compact_every_n_turns: 1,
            micro_compact_defrag_threshold_tokens: defaults::MICRO_DEFRAG_THRESHOLD_TOKENS,
            micro_compact_max_consecutive_failures: defaults::MICRO_MAX_CONSECUTIVE_FAILURES,
            micro_compact_min_reclaim_tokens: ReclaimGate::Off,
            micro_compact_gate_horizon_requests: 2,
            insert_trim_tokens: defaults::INSERT_TRIM_TOKENS,
            insert_trim_head_chars: defaults::INSERT_TRIM_HEAD_CHARS,
            insert_trim_tail_chars: defaults::INSERT_TRIM_TAIL_CHARS,
            insert_trim_user_pastes: false,
            cache_profile: "auto".into(),
            cache_aware: true,
            cache_custom: CacheProfile {
                name: "custom".into(),
                ..CacheProfile::local()
            },
        }
    }
}

/// The micro reclaim gate, `compression.micro_compact_min_reclaim_tokens`: a number of tokens
/// or `"auto"`.
///
/// - `0` (the default, [`ReclaimGate::Off`]): no gate; with `micro_compact = true` every pass
///   absorbs the oldest exchange at the configured cadence (the seed's micro-compaction).
/// - a number `N` ([`ReclaimGate::Tokens`]): absorb only when the absorbable exchanges together
///   reclaim at least `N` tokens, in one splice.
/// - `"auto"` ([`ReclaimGate::Auto`]): the gate the provider's cache economics suggest, computed
///   at each pass (see `cache_aware` in `config/default.toml` and docs/ECONOMICS.md).
///
/// Anything else (a negative number, a fraction, another string) is refused with an error
/// naming the key and what it accepts.
///
/// ```
/// use hermes_compaction::ReclaimGate;
///
/// assert_eq!(ReclaimGate::Auto.to_string(), "auto");
/// assert_eq!("2000".parse::<ReclaimGate>(), Ok(ReclaimGate::Tokens(2_000)));
/// # #[cfg(feature = "config")] {
/// use hermes_compaction::Config;
///
/// let off = Config::from_toml_str("[compression]\nmicro_compact = true\n").unwrap();
/// assert_eq!(off.compression.micro_compact_min_reclaim_tokens, ReclaimGate::Off);
/// let auto = Config::from_toml_str("[compression]\nmicro_compact_min_reclaim_tokens = \"auto\"\n")
///     .unwrap();
/// assert_eq!(auto.compression.micro_compact_min_reclaim_tokens, ReclaimGate::Auto);
/// let fixed = Config::from_toml_str("[compression]\nmicro_compact_min_reclaim_tokens = 4000\n")
///     .unwrap();
/// assert_eq!(fixed.compression.micro_compact_min_reclaim_tokens, ReclaimGate::Tokens(4_000));
/// let err = Config::from_toml_str("[compression]\nmicro_compact_min_reclaim_tokens = \"on\"\n")
///     .unwrap_err();
/// assert!(err.to_string().contains("micro_compact_min_reclaim_tokens"), "{err}");
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ReclaimGate {
    /// No gate (written `0`).
    #[default]
    Off,
    /// The gate the cache economics suggest (written `"auto"`).
    Auto,
    /// At least this many tokens reclaimed per pass (written as the number; never 0, which
    /// reads as [`ReclaimGate::Off`]).
    Tokens(u64),
}

impl ReclaimGate {
    /// The gate for a number of tokens: [`Off`](Self::Off) for 0.
    pub fn tokens(n: u64) -> ReclaimGate {
        if n == 0 {
            ReclaimGate::Off
        } else {
            ReclaimGate::Tokens(n)
        }
    }

    /// The fixed gate in tokens (0 for [`Off`](Self::Off) and [`Auto`](Self::Auto), whose value
    /// is computed at each pass).
    pub fn fixed_tokens(self) -> u64 {
        match self {
            ReclaimGate::Tokens(n) => n,
            ReclaimGate::Off | ReclaimGate::Auto => 0,
        }
    }

    /// What the key accepts, as written in errors.
    pub const EXPECTED: &'static str = "a number of tokens (0: no gate) or \"auto\"";
}

impl std::fmt::Display for ReclaimGate {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            ReclaimGate::Off => f.write_str("0"),
            ReclaimGate::Auto => f.write_str("auto"),
            ReclaimGate::Tokens(n) => write!(f, "{n}"),
        }
    }
}

impl std::str::FromStr for ReclaimGate {
    type Err = String;

    /// `auto`, or a whole number of tokens (for command lines and environment values).
    fn from_str(s: &str) -> Result<ReclaimGate, String> {
        let s = s.trim();
        if s.eq_ignore_ascii_case("auto") {
            return Ok(ReclaimGate::Auto);
        }
        s.parse::<u64>().map(ReclaimGate::tokens).map_err(|_| {
            format!(
                "invalid reclaim gate {:?}: expected {}",
                s.chars().take(32).collect::<String>(),
                ReclaimGate::EXPECTED
            )
        })
    }
}

impl Serialize for ReclaimGate {
    fn serialize<S: serde::Serializer>(&self, s: S) -> Result<S::Ok, S::Error> {
        match self {
            ReclaimGate::Auto => s.serialize_str("auto"),
            other => s.serialize_u64(other.fixed_tokens()),
        }
    }
}

impl<'de> Deserialize<'de> for ReclaimGate {
    fn deserialize<D: serde::Deserializer<'de>>(d: D) -> Result<ReclaimGate, D::Error> {
        struct Visitor;
        impl serde::de::Visitor<'_> for Visitor {
            type Value = ReclaimGate;

            fn expecting(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
                f.write_str(ReclaimGate::EXPECTED)
            }

            fn visit_u64<E: serde::de::Error>(self, v: u64) -> Result<ReclaimGate, E> {
                Ok(ReclaimGate::tokens(v))
            }

            fn visit_i64<E: serde::de::Error>(self, v: i64) -> Result<ReclaimGate, E> {
                u64::try_from(v)
                    .map(ReclaimGate::tokens)
                    .map_err(|_| E::invalid_value(serde::de::Unexpected::Signed(v), &self))
            }

            fn visit_str<E: serde::de::Error>(self, v: &str) -> Result<ReclaimGate, E> {
                if v.trim().eq_ignore_ascii_case("auto") {
                    Ok(ReclaimGate::Auto)
                } else {
                    // Never echo a long value back.
                    let shown: String = v.chars().take(32).collect();
                    Err(E::invalid_value(serde::de::Unexpected::Str(&shown), &self))
                }
            }
        }
        d.deserialize_any(Visitor)
    }
}

/// Auxiliary models.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct AuxiliaryConfig {
    /// The summarizer.
    pub compression: SummarizerConfig,
}

/// The summarizer endpoint.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct SummarizerConfig {
    /// `extractive` or `openai`.
    pub provider: String,
    /// Summary model; empty means the main model.
    pub model: String,
    /// Endpoint base URL.
    pub base_url: String,
    /// Environment variable holding the API key.
    pub api_key_env: String,
    /// Request timeout, seconds.
    pub timeout: u64,
    /// Retries on rate limits and transient errors.
    pub max_retries: u32,
    /// Sampling temperature.
    pub temperature: f32,
    /// Consecutive transient failures (timeouts, 5xx, rate limits, network) after which
    /// passes stop calling the summarizer and use the fallback until `breaker_probe_secs`
    /// have passed; 0 turns the circuit breaker off.
    pub breaker_failures: u32,
    /// Seconds the open breaker waits before one call probes the summarizer again.
    pub breaker_probe_secs: u64,
}

impl Default for SummarizerConfig {
    fn default() -> Self {
        SummarizerConfig {
            provider: "extractive".into(),
            model: String::new(),
            base_url: "https://api.openai.com/v1".into(),
            api_key_env: "OPENAI_API_KEY".into(),
            timeout: 60,
            max_retries: 2,
            temperature: 0.2,
            breaker_failures: 3,
            breaker_probe_secs: 120,
        }
    }
}

/// A configuration that could not be loaded.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum ConfigError {
    /// The file or environment could not be read or has the wrong shape (figment names the key).
    #[cfg(feature = "config")]
    #[error("configuration: {0}")]
    Load(#[from] Box<figment::Error>),
    /// A profile that does not exist, or whose keys do not fit `[compression]`.
    #[error("configuration: profile `{name}`: {reason}")]
    Profile {
        /// The profile's name.
        name: String,
        /// What is wrong (an unknown key is named).
        reason: String,
    },
    /// A value is outside its allowed range.
    #[error("configuration: `{key}` = {value} is invalid: allowed {allowed}")]
    Invalid {
        /// Dotted key.
        key: &'static str,
        /// The value given.
        value: String,
        /// The allowed range.
        allowed: &'static str,
    },
}

impl Config {
    /// Defaults, then `file` (if given), then the environment. A deprecated key
    /// ([`DEPRECATED_KEYS`]) is read as its new name and logged as a `tracing` warning
    /// ([`load_with_warnings`](Self::load_with_warnings) returns the warnings instead).
    #[cfg(feature = "config")]
    pub fn load(file: Option<&Path>) -> Result<Config, ConfigError> {
        Config::load_with_warnings(file).map(log_warnings)
    }

    /// [`load`](Self::load), returning the deprecation warnings (one line each, naming the old
    /// and the new key) instead of logging them.
    #[cfg(feature = "config")]
    pub fn load_with_warnings(file: Option<&Path>) -> Result<(Config, Vec<String>), ConfigError> {
        let mut fig = Figment::new();
        if let Some(path) = file {
            fig = fig.merge(Toml::file_exact(path));
        }
        fig = fig.merge(crate::config_env::EnvOverrides::prefixed(ENV_PREFIX));
        Config::from_figment(fig)
    }

    /// Defaults, then a TOML string (for tests and embedding), then nothing else. Deprecated
    /// keys are handled as in [`load`](Self::load).
    #[cfg(feature = "config")]
    pub fn from_toml_str(toml: &str) -> Result<Config, ConfigError> {
        Config::from_toml_str_with_warnings(toml).map(log_warnings)
    }

    /// [`from_toml_str`](Self::from_toml_str), returning the deprecation warnings.
    ///
    /// ```
    /// # #[cfg(feature = "config")] {
    /// use hermes_compaction::Config;
    ///
    /// let (config, warnings) =
    ///     Config::from_toml_str_with_warnings("[compression]\ntarget_ratio = 0.1\n").unwrap();
    /// assert_eq!(config.compression.tail_ratio, 0.1);
    /// assert_eq!(
    ///     warnings,
    ///     ["configuration: `compression.target_ratio` is deprecated: write `compression.tail_ratio`"]
    /// );
    /// # }
    /// ```
    #[cfg(feature = "config")]
    pub fn from_toml_str_with_warnings(toml: &str) -> Result<(Config, Vec<String>), ConfigError> {
        Config::from_figment(Figment::from(Toml::string(toml)))
    }

    /// The defaults, then `user` (what the file and the environment set). A deprecated key
    /// the user set is read through its serde alias, so its new name is left out of the
    /// defaults (else serde would see the field twice); both names set by the user is an
    /// error naming the field.
    #[cfg(feature = "config")]
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
        cfg.validate()?;
        Ok((cfg, warnings))
    }

    /// This configuration with profile `name` applied: its keys replace those of
    /// `compression` (a nested table, like `cache_custom`, merges key by key), and the result
    /// is validated like any configuration. An unknown profile, an unknown key or a value of
    /// the wrong type fails with [`ConfigError::Profile`], naming the profile and the reason.
    ///
    /// ```
    /// # #[cfg(feature = "config")] {
    /// use hermes_compaction::Config;
    ///
    /// let config = Config::from_toml_str(
    ///     "[compression]\nthreshold = 0.5\n[profiles.subagent]\nthreshold = 0.8\nprotect_last_n = 2\n",
    /// )
    /// .unwrap();
    /// let sub = config.with_profile("subagent").unwrap();
    /// assert_eq!(sub.compression.threshold, 0.8);
    /// assert_eq!(sub.compression.protect_last_n, 2);
    /// assert_eq!(config.compression.threshold, 0.5); // the parent's policy is unchanged
    /// assert!(config.with_profile("nope").is_err());
    /// # }
    /// ```
    pub fn with_profile(&self, name: &str) -> Result<Config, ConfigError> {
        let profile_error = |reason: String| ConfigError::Profile {
            name: name.chars().take(64).collect(),
            reason,
        };
        let overrides = self
            .profiles
            .get(name)
            .ok_or_else(|| profile_error("no such profile in [profiles]".into()))?;
        let mut merged = serde_json::to_value(&self.compression)
            .map_err(|e| profile_error(format!("cannot read [compression]: {e}")))?;
        let mut overrides = overrides.clone();
        for (old, new) in DEPRECATED_KEYS {
            if let Some(v) = overrides.remove(old) {
                overrides.entry(new).or_insert(v);
            }
        }
        merge(&mut merged, &overrides);
        let compression: CompressionConfig =
            serde_json::from_value(merged).map_err(|e| profile_error(e.to_string()))?;
        let mut out = self.clone();
        out.compression = compression;
        out.validate()?;
        Ok(out)
    }

    /// The allowed range of a fractional `compression.*` key that [`validate`](Self::validate)
    /// checks (`None` for any other key), so tools that search the space (the tuner) stay
    /// inside it.
    ///
    /// ```
    /// use hermes_compaction::Config;
    ///
    /// assert_eq!(Config::f64_range("compression.prune_runway_ratio"), Some((0.0, 0.9)));
    /// assert_eq!(Config::f64_range("compression.enabled"), None);
    /// ```
    pub fn f64_range(key: &str) -> Option<(f64, f64)> {
        F64_RANGES
            .iter()
            .find(|(k, ..)| *k == key)
            .map(|&(_, lo, hi, _)| (lo, hi))
    }

    /// The allowed range of a count key of `compression.*` (`None` for any other key), from
    /// the same table [`validate`](Self::validate) checks.
    ///
    /// ```
    /// use hermes_compaction::Config;
    ///
    /// assert_eq!(Config::u64_range("compression.micro_compact_every_n_turns"), Some((1, u64::MAX)));
    /// assert_eq!(Config::u64_range("compression.threshold"), None);
    /// ```
    pub fn u64_range(key: &str) -> Option<(u64, u64)> {
        U64_RANGES
            .iter()
            .find(|(k, ..)| *k == key)
            .map(|&(_, lo, hi, _)| (lo, hi))
    }

    /// Checks every value against its allowed range.
    pub fn validate(&self) -> Result<(), ConfigError> {
        let c = &self.compression;
        range_f64("compression.threshold", c.threshold)?;
        range_f64(
            "compression.small_window_min_threshold",
            c.small_window_min_threshold,
        )?;
        range_f64("compression.floor_cap", c.floor_cap)?;
        range_f64("compression.tail_ratio", c.tail_ratio)?;
        range_f64("compression.tail_soft_ceiling", c.tail_soft_ceiling)?;
        range_f64("compression.prune_runway_ratio", c.prune_runway_ratio)?;
        range_u64("compression.max_attempts", u64::from(c.max_attempts))?;
        range_u64("compression.protect_first_n", c.protect_first_n as u64)?;
        range_u64("compression.protect_last_n", c.protect_last_n as u64)?;
        if c.threshold_tokens != 0 && c.threshold_tokens < MIN_THRESHOLD_TOKENS {
            return invalid(
                "compression.threshold_tokens",
                c.threshold_tokens,
                "0 (no cap) or 1024 tokens or more",
            );
        }
        range_u64(
            "compression.min_tail_user_messages",
            c.min_tail_user_messages as u64,
        )?;
        range_u64(
            "compression.micro_compact_max_consecutive_failures",
            u64::from(c.micro_compact_max_consecutive_failures),
        )?;
        range_u64(
            "compression.micro_compact_every_n_turns",
            c.micro_compact_every_n_turns,
        )?;
        if self.model.context_length < MIN_CONTEXT_LENGTH {
            return invalid(
                "model.context_length",
                self.model.context_length,
                MIN_CONTEXT_LENGTH_ALLOWED,
            );
        }
        if self.model.output_reserve_tokens >= self.model.context_length {
            return invalid(
                "model.output_reserve_tokens",
                self.model.output_reserve_tokens,
                "less than model.context_length",
            );
        }
        let p = self.auxiliary.compression.provider.as_str();
        if !matches!(p, "extractive" | "openai") {
            return invalid(
                "auxiliary.compression.provider",
                format!("{p:?}"),
                "\"extractive\" or \"openai\"",
            );
        }
        if self.auxiliary.compression.timeout == 0 {
            return invalid("auxiliary.compression.timeout", 0, "1 second or more");
        }
        let profile = c.cache_profile.as_str();
        if !matches!(profile, "auto" | "none" | "custom") && CacheProfile::named(profile).is_none()
        {
            return invalid(
                "compression.cache_profile",
                format!("{profile:?}"),
                "\"auto\", \"none\", \"custom\", \"anthropic\", \"openai\", \"openai-gpt5\", \"google\" or \"local\"",
            );
        }
        if let Err(compaction_core::Error::Invalid { field, .. }) = c.cache_custom.validate() {
            return invalid(
                "compression.cache_custom",
                field,
                "finite non-negative prices and ratios, write ratio >= 1, cached ratio <= 1, cached price = input price x cached ratio",
            );
        }
        Ok(())
    }

    /// The window configuration core uses.
    pub fn window(&self) -> WindowConfig {
        let c = &self.compression;
        WindowConfig {
            context_length: self.model.context_length,
            output_reserve_tokens: self.model.output_reserve_tokens,
            threshold: c.threshold,
            small_window_tokens: c.small_window_tokens,
            small_window_min_threshold: c.small_window_min_threshold,
            threshold_floor_tokens: c.threshold_floor_tokens,
            floor_cap: c.floor_cap,
            threshold_cap_tokens: c.threshold_tokens,
        }
    }

    /// The region configuration core uses.
    pub fn regions(&self) -> RegionConfig {
        let c = &self.compression;
        RegionConfig {
            protect_first_n: c.protect_first_n,
            protect_last_n: c.protect_last_n,
            tail_ratio: c.tail_ratio,
            tail_soft_ceiling: c.tail_soft_ceiling,
            min_tail_user_messages: c.min_tail_user_messages,
        }
    }

    /// The insertion-time trimming policy core uses (`insert_trim_*` keys, the pruning list of
    /// protected tools).
    pub fn trim(&self) -> TrimConfig {
        let c = &self.compression;
        TrimConfig {
            max_tokens: c.insert_trim_tokens,
            head_chars: c.insert_trim_head_chars,
            tail_chars: c.insert_trim_tail_chars,
            protected_tools: c.protected_tools.clone(),
        }
    }

    /// The provider cache profile `compression.cache_profile` selects: a named profile,
    /// `custom` (the `[compression.cache_custom]` table), `auto` (from `model.name`, `None` when
    /// it names no known provider) or `none`.
    pub fn cache_profile(&self) -> Option<CacheProfile> {
        match self.compression.cache_profile.as_str() {
            "none" => None,
            "auto" => CacheProfile::for_model(&self.model.name),
            "custom" => Some(self.compression.cache_custom.clone()),
            name => CacheProfile::named(name),
        }
    }

    /// `micro_compact_every_n_turns` (at least 1 once validated; 0 reads as 1 here).
    pub fn micro_every_n_turns(&self) -> u64 {
        self.compression.micro_compact_every_n_turns.max(1)
    }
}

/// `model.context_length`'s allowed range as written in errors (tested against
/// [`MIN_CONTEXT_LENGTH`]).
const MIN_CONTEXT_LENGTH_ALLOWED: &str = "1024 tokens or more";

/// The count keys `validate` bounds: key, lowest, highest, the range as written in errors.
/// The tuner's grid is cut to the same table ([`Config::u64_range`]).
const U64_RANGES: [(&str, u64, u64, &str); 6] = [
    ("compression.max_attempts", 1, 10, "1 to 10"),
    ("compression.protect_first_n", 0, 1_000, "0 to 1000"),
    ("compression.protect_last_n", 0, 1_000, "0 to 1000"),
    ("compression.min_tail_user_messages", 0, 1_000, "0 to 1000"),
    (
        "compression.micro_compact_max_consecutive_failures",
        1,
        u64::MAX,
        "1 or more",
    ),
    (
        "compression.micro_compact_every_n_turns",
        1,
        u64::MAX,
        "1 or more",
    ),
];

fn range_u64(key: &'static str, v: u64) -> Result<(), ConfigError> {
    match U64_RANGES.iter().find(|(k, ..)| *k == key) {
        Some(&(_, lo, hi, allowed)) if !(lo..=hi).contains(&v) => invalid(key, v, allowed),
        _ => Ok(()),
    }
}

#[cfg(feature = "config")]
fn deprecation(table: &str, old: &str, new: &str) -> String {
    format!("configuration: `{table}.{old}` is deprecated: write `{table}.{new}`")
}

#[cfg(feature = "config")]
fn log_warnings((config, warnings): (Config, Vec<String>)) -> Config {
    for w in warnings {
        tracing::warn!(target: "hermes_compaction::config", "{w}");
    }
    config
}

/// The fractional keys `validate` bounds: key, lowest, highest, the range as written in errors.
const F64_RANGES: [(&str, f64, f64, &str); 6] = [
    ("compression.threshold", 0.05, 0.95, "0.05 to 0.95"),
    (
        "compression.small_window_min_threshold",
        0.05,
        0.95,
        "0.05 to 0.95",
    ),
    ("compression.floor_cap", 0.05, 0.95, "0.05 to 0.95"),
    ("compression.tail_ratio", 0.05, 0.8, "0.05 to 0.8"),
    ("compression.tail_soft_ceiling", 1.0, 4.0, "1.0 to 4.0"),
    ("compression.prune_runway_ratio", 0.0, 0.9, "0.0 to 0.9"),
];

fn range_f64(key: &'static str, v: f64) -> Result<(), ConfigError> {
    let Some(&(_, lo, hi, allowed)) = F64_RANGES.iter().find(|(k, ..)| *k == key) else {
        return Ok(());
    };
    if v.is_finite() && (lo..=hi).contains(&v) {
        Ok(())
    } else {
        Err(ConfigError::Invalid {
            key,
            value: v.to_string(),
            allowed,
        })
    }
}

fn invalid(
    key: &'static str,
    value: impl ToString,
    allowed: &'static str,
) -> Result<(), ConfigError> {
    Err(ConfigError::Invalid {
        key,
        value: value.to_string(),
        allowed,
    })
}

#[cfg(all(test, feature = "config"))]
mod tests {
    use super::*;

    #[test]
    fn shipped_default_file_matches_the_code_defaults() {
        let text = include_str!("../../../config/default.toml");
        let from_file = Config::from_toml_str(text).expect("default.toml loads");
        assert_eq!(from_file, Config::default());
    }

    #[test]
    fn invalid_values_name_key_value_and_range() {
        let err = Config::from_toml_str("[compression]\nthreshold = 1.5\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "configuration: `compression.threshold` = 1.5 is invalid: allowed 0.05 to 0.95"
        );
        let err = Config::from_toml_str("[compression]\nmax_attempts = 0\n").unwrap_err();
        assert!(
            err.to_string().contains("compression.max_attempts"),
            "{err}"
        );
        let err = Config::from_toml_str("[compression]\nthreshhold = 0.5\n").unwrap_err();
        assert!(err.to_string().contains("threshhold"), "{err}");
    }

    /// Issue 21, item 15: `compression.threshold_tokens` caps the trigger whatever the window
    /// (spec section 4, "Trigger"), 0 leaves it alone, and a cap below 1024 is refused.
    #[test]
    fn the_absolute_threshold_cap_bounds_every_window() {
        for window in [8_000u64, 64_000, 128_000, 200_000, 1_000_000, 2_000_000] {
            let text = format!("[model]\ncontext_length = {window}\n");
            let free = Config::from_toml_str(&text)
                .unwrap()
                .window()
                .threshold_tokens();
            let capped =
                Config::from_toml_str(&format!("{text}[compression]\nthreshold_tokens = 50000\n"))
                    .unwrap()
                    .window()
                    .threshold_tokens();
            assert_eq!(capped, free.min(50_000), "window {window}");
        }
        for bad in [1u64, 1_023] {
            let err = Config::from_toml_str(&format!("[compression]\nthreshold_tokens = {bad}\n"))
                .unwrap_err();
            assert!(
                err.to_string().contains("compression.threshold_tokens"),
                "{err}"
            );
        }
        assert!(Config::from_toml_str("[compression]\nthreshold_tokens = 1024\n").is_ok());
    }

    /// Issue 21, item 16: `compression.min_tail_user_messages` reaches the core region policy
    /// and is range-checked.
    #[test]
    fn min_tail_user_messages_is_passed_on_and_checked() {
        let cfg = Config::from_toml_str("[compression]\nmin_tail_user_messages = 3\n").unwrap();
        assert_eq!(cfg.regions().min_tail_user_messages, 3);
        assert_eq!(Config::default().regions().min_tail_user_messages, 0);
        let err =
            Config::from_toml_str("[compression]\nmin_tail_user_messages = 5000\n").unwrap_err();
        assert!(
            err.to_string()
                .contains("compression.min_tail_user_messages"),
            "{err}"
        );
    }

    #[test]
    #[allow(clippy::result_large_err)]
    fn environment_overrides_file() {
        figment::Jail::expect_with(|jail| {
            jail.create_file(
                "c.toml",
                "[compression]\nthreshold = 0.6\nmicro_compact = true\n",
            )?;
            jail.set_env("HERMES_COMPACTION__COMPRESSION__THRESHOLD", "0.7");
            let cfg = Config::load(Some(Path::new("c.toml"))).expect("loads");
            assert_eq!(cfg.compression.threshold, 0.7);
            assert!(cfg.compression.micro_compact);
            jail.set_env("HERMES_COMPACTION__COMPRESSION__THRESHOLD", "2");
            let err = Config::load(Some(Path::new("c.toml"))).unwrap_err();
            assert!(err.to_string().contains("compression.threshold"));
            Ok(())
        });
    }

    #[test]
    fn cache_profiles_resolve_by_name_model_or_custom_table() {
        let cfg = Config::default();
        assert_eq!(cfg.cache_profile(), None, "auto without a model name");
        let cfg = Config::from_toml_str("[model]\nname = \"claude-sonnet-4-5\"\n").unwrap();
        assert_eq!(cfg.cache_profile().unwrap().name, "anthropic");
        let cfg = Config::from_toml_str(
            "[model]\nname = \"claude-sonnet-4-5\"\n[compression]\ncache_profile = \"none\"\n",
        )
        .unwrap();
        assert_eq!(cfg.cache_profile(), None);
        let cfg = Config::from_toml_str("[compression]\ncache_profile = \"openai\"\n").unwrap();
        assert_eq!(cfg.cache_profile(), Some(CacheProfile::openai()));
        let cfg = Config::from_toml_str(
            "[compression]\ncache_profile = \"custom\"\n[compression.cache_custom]\n\
             cached_input_price_ratio = 0.2\ncache_ttl_secs = 600\ninput_price_per_mtok = 1.0\n\
             cached_input_price_per_mtok = 0.2\n",
        )
        .unwrap();
        let p = cfg.cache_profile().unwrap();
        assert_eq!((p.name.as_str(), p.cache_ttl_secs), ("custom", 600));
        let err = Config::from_toml_str("[compression]\ncache_profile = \"azure\"\n").unwrap_err();
        assert!(
            err.to_string().contains("compression.cache_profile"),
            "{err}"
        );
        let err = Config::from_toml_str(
            "[compression.cache_custom]\ninput_price_per_mtok = 1.0\ncached_input_price_per_mtok = 0.7\n",
        )
        .unwrap_err();
        assert!(
            err.to_string().contains("cached_input_price_per_mtok"),
            "{err}"
        );
    }

    #[test]
    fn trim_config_follows_the_insert_trim_keys() {
        let cfg = Config::from_toml_str(
            "[compression]\ninsert_trim_tokens = 8000\ninsert_trim_head_chars = 100\n",
        )
        .unwrap();
        let t = cfg.trim();
        assert_eq!(
            (t.max_tokens, t.head_chars, t.tail_chars),
            (8_000, 100, 2_000)
        );
        assert_eq!(t.protected_tools, cfg.compression.protected_tools);
    }

    /// Issue 20, item 6: the micro reclaim gate is off unless asked for, and takes a number of
    /// tokens or `"auto"` from a file, a profile or the environment; anything else is refused
    /// with an error that names the key and what it accepts.
    #[test]
    #[allow(clippy::result_large_err)]
    fn the_micro_reclaim_gate_is_a_number_or_auto() {
        let gate = |toml: &str| {
            Config::from_toml_str(&format!("[compression]\n{toml}\n"))
                .map(|c| c.compression.micro_compact_min_reclaim_tokens)
        };
        assert_eq!(
            Config::default()
                .compression
                .micro_compact_min_reclaim_tokens,
            ReclaimGate::Off
        );
        assert_eq!(gate("micro_compact = true").unwrap(), ReclaimGate::Off);
        assert_eq!(
            gate("micro_compact_min_reclaim_tokens = 0").unwrap(),
            ReclaimGate::Off
        );
        assert_eq!(
            gate("micro_compact_min_reclaim_tokens = 4000").unwrap(),
            ReclaimGate::Tokens(4_000)
        );
        assert_eq!(
            gate("micro_compact_min_reclaim_tokens = \"auto\"").unwrap(),
            ReclaimGate::Auto
        );
        assert_eq!(
            gate("micro_compact_min_reclaim_tokens = \"AUTO\"").unwrap(),
            ReclaimGate::Auto
        );
        for bad in ["-1", "1.5", "\"on\"", "\"4000\"", "\"\"", "true", "[1]"] {
            let err = gate(&format!("micro_compact_min_reclaim_tokens = {bad}")).unwrap_err();
            let text = err.to_string();
            assert!(
                text.contains("micro_compact_min_reclaim_tokens")
                    && text.contains("a number of tokens (0: no gate) or \"auto\""),
                "{bad}: {text}"
            );
        }
        // A long bad value is not echoed whole.
        let long = "x".repeat(500);
        let err = gate(&format!("micro_compact_min_reclaim_tokens = \"{long}\"")).unwrap_err();
        assert!(!err.to_string().contains(&long[..100]), "{err}");
        // The core planner gets the fixed part; "auto" is computed per pass by the compressor.
        let c = Config::from_toml_str("[compression]\nmicro_compact_min_reclaim_tokens = 2500\n")
            .unwrap();
        assert_eq!(
            crate::compressor::micro_config(&c).min_reclaim_tokens,
            2_500
        );
        let c =
            Config::from_toml_str("[compression]\nmicro_compact_min_reclaim_tokens = \"auto\"\n")
                .unwrap();
        assert_eq!(crate::compressor::micro_config(&c).min_reclaim_tokens, 0);
        // Serialized back as written, so a profile (merged through JSON) keeps it.
        let c = Config::from_toml_str(
            "[compression]\nmicro_compact_min_reclaim_tokens = \"auto\"\n\
             [profiles.fixed]\nmicro_compact_min_reclaim_tokens = 300\n\
             [profiles.bad]\nmicro_compact_min_reclaim_tokens = \"sometimes\"\n",
        )
        .unwrap();
        assert_eq!(
            serde_json::to_value(&c.compression).unwrap()["micro_compact_min_reclaim_tokens"],
            "auto"
        );
        assert_eq!(
            c.with_profile("fixed")
                .unwrap()
                .compression
                .micro_compact_min_reclaim_tokens,
            ReclaimGate::Tokens(300)
        );
        let err = c.with_profile("bad").unwrap_err().to_string();
        assert!(
            err.contains("profile `bad`") && err.contains("\"auto\""),
            "{err}"
        );
        // The environment.
        figment::Jail::expect_with(|jail| {
            jail.set_env(
                "HERMES_COMPACTION__COMPRESSION__MICRO_COMPACT_MIN_RECLAIM_TOKENS",
                "auto",
            );
            assert_eq!(
                Config::load(None)
                    .unwrap()
                    .compression
                    .micro_compact_min_reclaim_tokens,
                ReclaimGate::Auto
            );
            jail.set_env(
                "HERMES_COMPACTION__COMPRESSION__MICRO_COMPACT_MIN_RECLAIM_TOKENS",
                "6000",
            );
            assert_eq!(
                Config::load(None)
                    .unwrap()
                    .compression
                    .micro_compact_min_reclaim_tokens,
                ReclaimGate::Tokens(6_000)
            );
            jail.set_env(
                "HERMES_COMPACTION__COMPRESSION__MICRO_COMPACT_MIN_RECLAIM_TOKENS",
                "-5",
            );
            let err = Config::load(None).unwrap_err().to_string();
            assert!(err.contains("micro_compact_min_reclaim_tokens"), "{err}");
            Ok(())
        });
        // The command-line form.
        assert_eq!("auto".parse::<ReclaimGate>(), Ok(ReclaimGate::Auto));
        assert_eq!("0".parse::<ReclaimGate>(), Ok(ReclaimGate::Off));
        assert_eq!(" 128 ".parse::<ReclaimGate>(), Ok(ReclaimGate::Tokens(128)));
        let err = "-3".parse::<ReclaimGate>().unwrap_err();
        assert!(err.contains("\"auto\""), "{err}");
    }

    /// Issue 25, item 3: the cadence is an unsigned count; 0 and negatives are refused with
    /// an error naming the key (they used to read as 1).
    #[test]
    fn cadence_below_one_is_refused_naming_the_key() {
        for bad in ["0", "-3", "-1"] {
            let err = Config::from_toml_str(&format!(
                "[compression]\nmicro_compact_every_n_turns = {bad}\n"
            ))
            .unwrap_err()
            .to_string();
            assert!(err.contains("micro_compact_every_n_turns"), "{bad}: {err}");
        }
        let err =
            Config::from_toml_str("[compression]\nmicro_compact_every_n_turns = 0\n").unwrap_err();
        assert_eq!(
            err.to_string(),
            "configuration: `compression.micro_compact_every_n_turns` = 0 is invalid: allowed 1 or more"
        );
        let cfg =
            Config::from_toml_str("[compression]\nmicro_compact_every_n_turns = 4\n").unwrap();
        assert_eq!(cfg.micro_every_n_turns(), 4);
    }

    /// Issue 25, item 3: `target_ratio` was renamed `tail_ratio`; files, the environment and
    /// profiles that use the old name keep working, with a warning naming both.
    #[test]
    #[allow(clippy::result_large_err)]
    fn the_old_tail_key_is_a_deprecated_alias() {
        let (old, warnings) =
            Config::from_toml_str_with_warnings("[compression]\ntarget_ratio = 0.25\n").unwrap();
        let (new, none) =
            Config::from_toml_str_with_warnings("[compression]\ntail_ratio = 0.25\n").unwrap();
        assert_eq!(old, new);
        assert_eq!(old.regions().tail_ratio, 0.25);
        assert!(none.is_empty(), "{none:?}");
        assert_eq!(warnings.len(), 1);
        assert!(
            warnings[0].contains("compression.target_ratio")
                && warnings[0].contains("compression.tail_ratio"),
            "{warnings:?}"
        );
        // The old name is range-checked under the new one.
        let err = Config::from_toml_str("[compression]\ntarget_ratio = 0.9\n").unwrap_err();
        assert!(err.to_string().contains("compression.tail_ratio"), "{err}");
        // Both names at once is ambiguous, and refused.
        assert!(
            Config::from_toml_str("[compression]\ntarget_ratio = 0.1\ntail_ratio = 0.2\n").is_err()
        );
        // A profile with the old name.
        let (cfg, warnings) =
            Config::from_toml_str_with_warnings("[profiles.sub]\ntarget_ratio = 0.3\n").unwrap();
        assert!(
            warnings[0].contains("profiles.sub.target_ratio"),
            "{warnings:?}"
        );
        assert_eq!(cfg.with_profile("sub").unwrap().compression.tail_ratio, 0.3);
        // The environment.
        figment::Jail::expect_with(|jail| {
            jail.set_env("HERMES_COMPACTION__COMPRESSION__TARGET_RATIO", "0.2");
            let (cfg, warnings) = Config::load_with_warnings(None).expect("loads");
            assert_eq!(cfg.compression.tail_ratio, 0.2);
            assert_eq!(warnings.len(), 1, "{warnings:?}");
            Ok(())
        });
    }

    /// Issue 25, item 3: one minimum context length, stated once.
    #[test]
    fn the_context_length_minimum_is_stated_once() {
        assert_eq!(
            MIN_CONTEXT_LENGTH_ALLOWED,
            format!("{MIN_CONTEXT_LENGTH} tokens or more")
        );
        let at = format!("[model]\ncontext_length = {MIN_CONTEXT_LENGTH}\n");
        assert!(Config::from_toml_str(&at).is_ok());
        let below = format!("[model]\ncontext_length = {}\n", MIN_CONTEXT_LENGTH - 1);
        let err = Config::from_toml_str(&below).unwrap_err().to_string();
        assert!(err.contains("model.context_length"), "{err}");
    }
}

/// Merges `overrides` into the object `base`, table by table.
fn merge(base: &mut serde_json::Value, overrides: &serde_json::Map<String, serde_json::Value>) {
    let serde_json::Value::Object(map) = base else {
        return;
    };
    for (k, v) in overrides {
        match (map.get_mut(k), v) {
            (Some(existing @ serde_json::Value::Object(_)), serde_json::Value::Object(inner)) => {
                merge(existing, inner)
            }
            _ => {
                map.insert(k.clone(), v.clone());
            }
        }
    }
}

#[cfg(all(test, feature = "config"))]
mod profile_tests {
    use super::*;

    const TOML: &str = "[compression]\nthreshold = 0.5\nmicro_compact = false\n\
        [compression.cache_custom]\nname = \"custom\"\ncache_ttl_secs = 10\n\
        [profiles.subagent]\nthreshold = 0.8\nmicro_compact = true\n\
        [profiles.subagent.cache_custom]\ncache_ttl_secs = 300\n\
        [profiles.typo]\nthreshhold = 0.8\n\
        [profiles.wrong_type]\nthreshold = \"high\"\n\
        [profiles.out_of_range]\nthreshold = 1.5\n";

    #[test]
    fn a_profile_overrides_compression_keys_and_nothing_else() {
        let config = Config::from_toml_str(TOML).unwrap();
        let sub = config.with_profile("subagent").unwrap();
        assert_eq!(sub.compression.threshold, 0.8);
        assert!(sub.compression.micro_compact);
        // A nested table merges key by key.
        assert_eq!(sub.compression.cache_custom.cache_ttl_secs, 300);
        assert_eq!(sub.compression.cache_custom.name, "custom");
        assert_eq!(sub.model, config.model);
        assert_eq!(sub.auxiliary, config.auxiliary);
        let mut back = sub.clone();
        back.compression = config.compression.clone();
        assert_eq!(back, config, "only [compression] changed");
    }

    #[test]
    fn bad_profiles_name_the_profile_and_the_problem() {
        let config = Config::from_toml_str(TOML).unwrap();
        for (name, needle) in [
            ("missing", "no such profile"),
            ("typo", "threshhold"),
            ("wrong_type", "invalid type"),
        ] {
            let e = config.with_profile(name).unwrap_err().to_string();
            assert!(
                e.contains(&format!("profile `{name}`")) && e.contains(needle),
                "{e}"
            );
        }
        let e = config.with_profile("out_of_range").unwrap_err().to_string();
        assert!(e.contains("compression.threshold"), "{e}");
    }
}
