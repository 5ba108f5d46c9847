//! Configuration with figment: defaults, then a TOML file, then `HERMES_COMPACTION__*`
//! environment variables. `config/default.toml` in the repository documents every key.

use serde::{Deserialize, Serialize};

use crate::cache::CacheProfile;
use compaction_core::batch::BatchConfig;
use compaction_core::micro::MicroConfig;
use compaction_core::prune::PruneConfig;
use compaction_core::regions::{RegionConfig, WindowConfig};
use compaction_core::trim::TrimConfig;

mod keys;
#[cfg(feature = "config")]
mod load;
mod provider;
mod validate;

pub use keys::{ConfigKey, KeyKind, KeyRange};
#[cfg(feature = "config")]
pub use load::ConfigLoader;
pub use provider::Provider;
#[cfg(feature = "llm")]
pub use provider::{BuildSummarizer, summarizer_from_config};

/// The smallest absolute threshold cap `compression.threshold_tokens` accepts (0 turns the cap
/// off).
pub const MIN_THRESHOLD_TOKENS: u64 = 1_024;

/// The smallest `model.context_length` accepted (the CLI's `--context-length` included).
pub const MIN_CONTEXT_LENGTH: u64 = 1_024;

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
/// let config = hermes_compaction::ConfigLoader::new().toml("[model]\ncontext_length = 32000\n").load().unwrap().0;
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
    /// Tokens of what the host sends beside the transcript: its system preamble and tool
    /// definitions (counted nowhere else). Subtracted from the window with
    /// `output_reserve_tokens`.
    pub host_reserve_tokens: u64,
    /// Model name: telemetry, and the main-model fallback of the `openai` summarizer when
    /// `auxiliary.compression.model` names another model.
    pub name: String,
    /// The agent's endpoint base URL, when known (empty: not stated). Read by
    /// `auxiliary.compression.warm_cache = "auto"`: the summarizer is the agent's own model
    /// only when it is `name` at this endpoint.
    pub base_url: String,
}

impl Default for ModelConfig {
    fn default() -> Self {
        ModelConfig {
            context_length: WindowConfig::default().context_length,
            output_reserve_tokens: 0,
            host_reserve_tokens: 0,
            name: String::new(),
            base_url: String::new(),
        }
    }
}

/// Compaction policy. See `config/default.toml` for what each key does.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CompressionConfig {
    pub enabled: bool,
    /// When automatic passes may run ([`Timing`]).
    pub timing: Timing,
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
    /// A gitleaks-format TOML ruleset for redaction (empty: the bundled one); installed by
    /// [`ConfigLoader::load`] and [`Config::install_redaction_rules`].
    pub redaction_rules: String,
    pub proactive_prune_min_reclaim_tokens: u64,
    /// What a proactive prune (under the threshold) may rewrite: only an old tool output
    /// above this many tokens, or a tool call whose string arguments are longer than four
    /// characters a token of it: one message too big to carry. Under the trigger a session
    /// keeps the rest of its content. At or below `prune_tool_output_min_tokens` it prunes as
    /// a threshold pass's prune does. Default 16,000 (docs/ECONOMICS.md, "Proactive pruning
    /// under the trigger").
    pub proactive_prune_output_min_tokens: u64,
    /// A summary prepared ahead: past this fraction of the threshold (and below it), the
    /// compressor starts the summary of the span it will compact in a background task, and
    /// applies it at the trigger when the span and the session are unchanged. 0 turns it off
    /// (the default); allowed 0.0 to 0.99.
    pub prepare_at: f64,
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
    /// A micro pass folds only messages at least this many answers old (assistant messages
    /// after them, markers not counted); at or over the threshold, when nothing that old is
    /// left, and with 0, any age. Default 8: a message is needed by
    /// one of the next eight answers with a chance of 15% at four to seven answers old and 8%
    /// at eight to fifteen (docs/ECONOMICS.md, "What predicts the next answers' needs").
    pub micro_compact_min_age_answers: u64,
    pub insert_trim_tokens: u64,
    pub insert_trim_head_chars: usize,
    pub insert_trim_tail_chars: usize,
    pub insert_trim_user_pastes: bool,
    pub cache_profile: String,
    pub cache_aware: bool,
    /// Once the provider's cache has expired (the gap since the previous request reaches the
    /// profile's time-to-live), a rewrite costs nothing extra: the cache-aware gates let
    /// through what they would otherwise hold back.
    pub cold_cache_rewrites: bool,
    pub cache_custom: CacheProfile,
}

impl Default for CompressionConfig {
    /// Every policy number core also knows comes from core's configuration defaults, so a
    /// core-only user and a facade user get the same threshold, tail and runway.
    fn default() -> Self {
        let window = WindowConfig::default();
        let regions = RegionConfig::default();
        let prune = PruneConfig::default();
        let batch = BatchConfig::default();
        let micro = MicroConfig::default();
        let trim = TrimConfig::default();
        CompressionConfig {
            enabled: true,
            timing: Timing::Eager,
            threshold: window.threshold,
            small_window_tokens: window.small_window_tokens,
            small_window_min_threshold: window.small_window_min_threshold,
            threshold_floor_tokens: window.threshold_floor_tokens,
            floor_cap: window.floor_cap,
            threshold_tokens: window.threshold_cap_tokens,
            protect_first_n: regions.protect_first_n,
            protect_last_n: regions.protect_last_n,
            min_tail_user_messages: regions.min_tail_user_messages,
            tail_ratio: regions.tail_ratio,
            tail_soft_ceiling: regions.tail_soft_ceiling,
            max_attempts: 3,
            prune_minimum_tokens: batch.prune_minimum_tokens,
            prune_runway_ratio: batch.prune_runway_ratio,
            prune_tool_output_min_tokens: prune.tool_output_min_tokens,
            prune_argument_max_chars: prune.argument_max_chars,
            // A facade-only policy (core has no proactive prune).
            proactive_prune_tokens: 16_000,
            prune_keep_cited: prune.keep_cited,
            prune_names_max_chars: prune.names_max_chars,
            redaction_rules: String::new(),
            proactive_prune_min_reclaim_tokens: 4_096,
            proactive_prune_output_min_tokens: 16_000,
            prepare_at: 0.0,
            protected_tools: prune.protected_tools,
            fallback_to_extractive: true,
            failure_cooldown_secs: 60,
            failure_cooldown_max_secs: 900,
            anti_thrash_max_ineffective: 2,
            anti_thrash_probe_secs: 300,
            strict_alternation: batch.strict_alternation,
            summary_max_tokens: u32::try_from(batch.summary_max_tokens).unwrap_or(u32::MAX),
            ledger_max_tokens: batch.ledger_max_tokens,
            micro_compact: false,
            micro_compact_every_n_turns: 1,
            micro_compact_defrag_threshold_tokens: micro.defrag_threshold_tokens,
            micro_compact_max_consecutive_failures: micro.max_consecutive_failures,
            micro_compact_min_reclaim_tokens: ReclaimGate::Auto,
            micro_compact_gate_horizon_requests: 2,
            micro_compact_min_age_answers: micro.min_age_answers as u64,
            insert_trim_tokens: trim.max_tokens,
            insert_trim_head_chars: trim.head_chars,
            insert_trim_tail_chars: trim.tail_chars,
            insert_trim_user_pastes: false,
            cache_profile: "auto".into(),
            cache_aware: true,
            cold_cache_rewrites: true,
            cache_custom: CacheProfile {
                name: "custom".into(),
                ..CacheProfile::default()
            },
        }
    }
}

/// The micro reclaim gate, `compression.micro_compact_min_reclaim_tokens`: a number of tokens
/// or `"auto"`.
///
/// - `0` ([`ReclaimGate::Off`]): no gate; with `micro_compact = true` every pass absorbs the
///   oldest exchange at the configured cadence (the seed's micro-compaction, at about 1.6x to
///   1.8x the cost of `batch`: docs/ECONOMICS.md).
/// - a number `N` ([`ReclaimGate::Tokens`]): absorb only when the absorbable exchanges together
///   reclaim at least `N` tokens, in one splice.
/// - `"auto"` (the default, [`ReclaimGate::Auto`]): the gate the provider's cache economics
///   suggest, computed at each pass (see `cache_aware` in `config/default.toml` and
///   docs/ECONOMICS.md), so `micro_compact = true` alone costs about what `batch` does: 0.92x
///   to 1.00x on the sets measured first, up to 1.09x on sessions where an early fold forgets
///   what the agent reads again (the gate prices a fold's rewrite, not its forgetting). With
///   no cache to protect (`cache_profile = "none"`, `cache_aware = false`, or a profile
///   without a cache) it lets every pass through, like `0`.
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
/// use hermes_compaction::ConfigLoader;
///
/// let gated = ConfigLoader::new().toml("[compression]\nmicro_compact = true\n").load().unwrap().0;
/// assert_eq!(gated.compression.micro_compact_min_reclaim_tokens, ReclaimGate::Auto);
/// let off = ConfigLoader::new().toml("[compression]\nmicro_compact_min_reclaim_tokens = 0\n").load()
///     .unwrap().0;
/// assert_eq!(off.compression.micro_compact_min_reclaim_tokens, ReclaimGate::Off);
/// let fixed = ConfigLoader::new().toml("[compression]\nmicro_compact_min_reclaim_tokens = 4000\n").load()
///     .unwrap().0;
/// assert_eq!(fixed.compression.micro_compact_min_reclaim_tokens, ReclaimGate::Tokens(4_000));
/// let err = ConfigLoader::new().toml("[compression]\nmicro_compact_min_reclaim_tokens = \"on\"\n").load()
///     .unwrap_err();
/// assert!(err.to_string().contains("micro_compact_min_reclaim_tokens"), "{err}");
/// # }
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash)]
pub enum ReclaimGate {
    /// No gate (written `0`).
    Off,
    /// The gate the cache economics suggest (written `"auto"`; the default).
    #[default]
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
    /// Request timeout, seconds (one HTTP request, connect to last byte). A transient failure
    /// whose call took at least this long opens the circuit breaker at once.
    pub timeout: u64,
    /// Retries on rate limits and transient errors.
    pub max_retries: u32,
    /// The most real time one pass waits on the summarizer, seconds, over all its calls with
    /// their retries, regenerations and model fallback; a call still running then is
    /// abandoned as a timeout and the fallback (if on) writes the summary. 0: no deadline.
    pub deadline_secs: u64,
    /// Sampling temperature.
    pub temperature: f32,
    /// Consecutive transient failures (timeouts, 5xx, rate limits, network) after which
    /// passes stop calling the summarizer and use the fallback until `breaker_probe_secs`
    /// have passed; 0 turns the circuit breaker off.
    pub breaker_failures: u32,
    /// Seconds the open breaker waits before one call probes the summarizer again, counted
    /// from the end of the call that failed.
    pub breaker_probe_secs: u64,
    /// Whether a batch summary request is the agent's last request plus one instruction, so
    /// the provider's prompt cache serves its input (see [`WarmCache`]).
    pub warm_cache: WarmCache,
    /// The summary model's price per token relative to the agent model's, input and output
    /// alike (0.3: a model at 30% of the agent's prices). Only cost accounting reads it: the
    /// simulator prices a standalone summary request at this ratio (a warm-cache one is the
    /// agent's own model, at 1.0), and the tuner weighs the two forms with it
    /// (docs/ECONOMICS.md, "The warm-cache summary request"). The compressor does not.
    pub price_ratio: f64,
}

/// `compression.timing`: when automatic passes may run. Explicit passes
/// ([`Compressor::one_shot`](crate::Compressor::one_shot), a model's `compact_context`
/// request) and [`Compressor::on_context_overflow`](crate::Compressor::on_context_overflow)
/// run whatever it says.
///
/// ```
/// use hermes_compaction::config::{ConfigLoader, Timing};
///
/// let c = ConfigLoader::new().toml("[compression]\ntiming = \"between_turns\"\n").load().unwrap().0;
/// assert_eq!(c.compression.timing, Timing::BetweenTurns);
/// assert!(ConfigLoader::new().toml("[compression]\ntiming = \"sometimes\"\n").load().is_err());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum Timing {
    /// Every hook: before each request and after each response (also inside a tool loop, so
    /// a long loop cannot overflow), after each tool round and at the end of each turn.
    #[default]
    Eager,
    /// Only where no tool loop is under way: at the end of a turn and before the first
    /// request of a turn (the ask is the last message); inside a tool loop only when the
    /// prompt is over 90% of the effective window (`NEAR_WINDOW_RATIO`), where the request
    /// would be refused otherwise. `after_tool_round` makes no pass.
    BetweenTurns,
    /// No automatic pass: only explicit ones and context-overflow passes.
    Manual,
}

/// `auxiliary.compression.warm_cache`: when a batch summary request reuses the agent's last
/// request as its prefix (docs/ECONOMICS.md, "The warm-cache summary request").
///
/// ```
/// use hermes_compaction::Config;
/// use hermes_compaction::config::WarmCache;
///
/// let mut c = Config::default();
/// assert_eq!(c.auxiliary.compression.warm_cache, WarmCache::Auto);
/// assert!(!c.warm_cache_on(), "the extractive summarizer is not the agent's model");
/// c.auxiliary.compression.provider = "openai".into();
/// c.model.name = "main".into();
/// c.model.base_url = "https://api.openai.com/v1/".into();
/// assert!(c.warm_cache_on(), "same model, same endpoint");
/// c.auxiliary.compression.model = "small".into();
/// assert!(!c.warm_cache_on(), "another model: standalone");
/// c.auxiliary.compression.warm_cache = WarmCache::On;
/// assert!(c.warm_cache_on());
/// ```
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum WarmCache {
    /// On when the summarizer is the agent's own model: provider `openai`, the summary model
    /// is `model.name` (`auxiliary.compression.model` empty or equal to it), and
    /// `model.base_url` is set and equal to `auxiliary.compression.base_url` (a trailing `/`
    /// aside). An unstated agent endpoint counts as another one: a warm request sent where
    /// the agent's prefix is not cached costs more than a standalone one.
    #[default]
    Auto,
    /// Always (for a summarizer you bring that serves the agent's model).
    On,
    /// Never: standalone requests.
    Off,
}

impl Default for SummarizerConfig {
    fn default() -> Self {
        SummarizerConfig {
            provider: "extractive".into(),
            model: String::new(),
            base_url: "https://api.openai.com/v1".into(),
            api_key_env: "OPENAI_API_KEY".into(),
            timeout: 30,
            max_retries: 1,
            deadline_secs: 60,
            temperature: 0.2,
            breaker_failures: 3,
            breaker_probe_secs: 120,
            warm_cache: WarmCache::Auto,
            price_ratio: 1.0,
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
        /// The profile's name (at most 64 characters, control characters escaped).
        name: String,
        /// What is wrong (an unknown key is named).
        reason: String,
    },
    /// `compression.redaction_rules` names a file that cannot be read or is not a ruleset.
    #[error("configuration: `compression.redaction_rules` = {path}: {reason}")]
    RedactionRules {
        /// The path as configured.
        path: String,
        /// What is wrong (the parser's message names the line).
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
    /// This configuration with profile `name` applied: its keys replace those of
    /// `compression` (a nested table, like `cache_custom`, merges key by key), and the result
    /// is validated like any configuration. An unknown profile, an unknown key or a value of
    /// the wrong type fails with [`ConfigError::Profile`], naming the profile and the reason.
    ///
    /// ```
    /// # #[cfg(feature = "config")] {
    /// use hermes_compaction::ConfigLoader;
    ///
    /// let config = ConfigLoader::new().toml(
    ///     "[compression]\nthreshold = 0.5\n[profiles.subagent]\nthreshold = 0.8\nprotect_last_n = 2\n",
    /// ).load()
    /// .unwrap().0;
    /// let sub = config.with_profile("subagent").unwrap();
    /// assert_eq!(sub.compression.threshold, 0.8);
    /// assert_eq!(sub.compression.protect_last_n, 2);
    /// assert_eq!(config.compression.threshold, 0.5); // the parent's policy is unchanged
    /// assert!(config.with_profile("nope").is_err());
    /// # }
    /// ```
    pub fn with_profile(&self, name: &str) -> Result<Config, ConfigError> {
        let out = self.apply_profile(name)?;
        out.validate()?;
        Ok(out)
    }

    /// [`with_profile`](Self::with_profile) without the validation (the loader validates the
    /// result once, after every layer).
    fn apply_profile(&self, name: &str) -> Result<Config, ConfigError> {
        let profile_error = |reason: String| ConfigError::Profile {
            // The name is the user's text, echoed: control characters as escapes.
            name: name
                .chars()
                .take(64)
                .flat_map(|c| {
                    let escaped = c.is_control().then(|| c.escape_default());
                    escaped
                        .into_iter()
                        .flatten()
                        .chain((!c.is_control()).then_some(c))
                })
                .collect(),
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
        Ok(out)
    }

    /// The window configuration core uses.
    pub fn window(&self) -> WindowConfig {
        let c = &self.compression;
        WindowConfig {
            context_length: self.model.context_length,
            output_reserve_tokens: self.model.output_reserve_tokens,
            host_reserve_tokens: self.model.host_reserve_tokens,
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

    /// Whether batch summary requests are warm-cache ones
    /// (`auxiliary.compression.warm_cache`, [`WarmCache`]).
    pub fn warm_cache_on(&self) -> bool {
        let aux = &self.auxiliary.compression;
        match aux.warm_cache {
            WarmCache::On => true,
            WarmCache::Off => false,
            WarmCache::Auto => {
                let main = self.model.name.trim();
                let summary = match aux.model.trim() {
                    "" => main,
                    m => m,
                };
                let endpoint = |u: &str| u.trim().trim_end_matches('/').to_owned();
                aux.provider == "openai"
                    && !main.is_empty()
                    && summary == main
                    && !self.model.base_url.trim().is_empty()
                    && endpoint(&self.model.base_url) == endpoint(&aux.base_url)
            }
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

    /// Reads the ruleset `compression.redaction_rules` names and installs it for every
    /// redaction in this process ([`compaction_redact::install`]); nothing when the key
    /// is empty (the bundled ruleset, or one installed earlier, stays). Returns one warning
    /// per rule of the file that is not in force (its id and why: a regex the `regex` crate
    /// does not compile, a path-only rule), so none is skipped silently; the loader returns
    /// them with its other warnings. A file that cannot be read or parsed is an error naming
    /// the key and the path.
    ///
    /// ```
    /// # #[cfg(feature = "config")] {
    /// use hermes_compaction::Config;
    ///
    /// let mut config = Config::default();
    /// assert!(config.install_redaction_rules().unwrap().is_empty()); // bundled: nothing to do
    /// config.compression.redaction_rules = "/no/such/rules.toml".into();
    /// let err = config.install_redaction_rules().unwrap_err().to_string();
    /// assert!(err.contains("compression.redaction_rules"), "{err}");
    /// # }
    /// ```
    #[cfg(feature = "config")]
    pub fn install_redaction_rules(&self) -> Result<Vec<String>, ConfigError> {
        let path = &self.compression.redaction_rules;
        if path.is_empty() {
            return Ok(Vec::new());
        }
        let fail = |reason: String| ConfigError::RedactionRules {
            path: path.chars().take(256).collect(),
            reason,
        };
        let text = std::fs::read_to_string(path).map_err(|e| fail(e.to_string()))?;
        let rules =
            compaction_redact::Ruleset::from_toml(&text).map_err(|e| fail(e.to_string()))?;
        let skipped = rules.skipped().iter().map(|s| {
            format!(
                "configuration: `compression.redaction_rules`: rule `{}` is not in force: {}",
                s.id, s.reason
            )
        });
        let unused = rules.problems().iter().map(|s| {
            format!(
                "configuration: `compression.redaction_rules`: {}: entry not used (the rule \
                 stays in force): {}",
                s.id, s.reason
            )
        });
        let warnings = skipped.chain(unused).collect();
        tracing::info!(
            target: "hermes_compaction::config",
            "redaction ruleset: {}",
            rules.describe()
        );
        compaction_redact::install(rules);
        Ok(warnings)
    }

    /// `micro_compact_every_n_turns` (at least 1 once validated; 0 reads as 1 here).
    pub fn micro_every_n_turns(&self) -> u64 {
        self.compression.micro_compact_every_n_turns.max(1)
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

/// The cached-read price ratio the cache-aware rules (the micro reclaim gate, the time-to-live
/// rule) assume when the provider's cache profile is unknown: 0.1 of the input price
/// (Anthropic, OpenAI's GPT-5 family, and the issue 13 cost model). With `cache_profile =
/// "none"` no gate is assumed.
pub const ASSUMED_CACHED_READ_RATIO: f64 = 0.1;

/// An unknown provider: cached reads at [`ASSUMED_CACHED_READ_RATIO`], no write premium, output
/// at 5x input (the issue 13 cost model's prices).
#[cfg(feature = "llm")]
pub(crate) fn assumed_profile() -> CacheProfile {
    CacheProfile {
        name: "assumed".into(),
        cached_input_price_ratio: ASSUMED_CACHED_READ_RATIO,
        cache_write_price_ratio: 1.0,
        input_price_per_mtok: 1.0,
        cached_input_price_per_mtok: ASSUMED_CACHED_READ_RATIO,
        output_price_per_mtok: 5.0,
        cache_ttl_secs: 300,
        min_cacheable_prefix_tokens: 1_024,
        automatic: true,
    }
}

#[cfg(all(test, feature = "config"))]
mod profile_tests;
#[cfg(all(test, feature = "config"))]
mod tests;
