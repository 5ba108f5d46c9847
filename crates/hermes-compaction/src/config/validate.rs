//! What [`Config::validate`] checks: every key's allowed range, in the tables the tuner's grid
//! is cut to ([`Config::f64_range`], [`Config::u64_range`]).

use crate::cache::CacheProfile;

use super::{Config, ConfigError, MIN_CONTEXT_LENGTH, MIN_THRESHOLD_TOKENS};

impl Config {
    /// The allowed range of a fractional key (`compression.*`,
    /// `auxiliary.compression.price_ratio`) that [`validate`](Self::validate) checks (`None`
    /// for any other key), so tools that search the space (the tuner) stay inside it.
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
        range_f64("compression.prepare_at", c.prepare_at)?;
        range_f64(
            "auxiliary.compression.price_ratio",
            self.auxiliary.compression.price_ratio,
        )?;
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
        let reserved = self
            .model
            .output_reserve_tokens
            .saturating_add(self.model.host_reserve_tokens);
        if reserved >= self.model.context_length {
            return invalid(
                "model.host_reserve_tokens",
                self.model.host_reserve_tokens,
                "less than model.context_length - model.output_reserve_tokens",
            );
        }
        let p = self.auxiliary.compression.provider.as_str();
        if super::provider::Provider::from_name(p).is_none() {
            return Err(super::provider::unknown(p));
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
        if let Some(field) = c.cache_custom.invalid_field() {
            return invalid(
                "compression.cache_custom",
                field,
                "finite non-negative prices and ratios, write ratio >= 1, cached ratio <= 1, cached price = input price x cached ratio",
            );
        }
        Ok(())
    }
}

/// `model.context_length`'s allowed range as written in errors (tested against
/// [`MIN_CONTEXT_LENGTH`]).
pub(super) const MIN_CONTEXT_LENGTH_ALLOWED: &str = "1024 tokens or more";

/// The count keys `validate` bounds: key, lowest, highest, the range as written in errors.
/// The tuner's grid is cut to the same table ([`Config::u64_range`]).
pub(super) const U64_RANGES: [(&str, u64, u64, &str); 6] = [
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

/// The fractional keys `validate` bounds: key, lowest, highest, the range as written in errors.
pub(super) const F64_RANGES: [(&str, f64, f64, &str); 8] = [
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
    ("compression.prepare_at", 0.0, 0.99, "0.0 (off) to 0.99"),
    (
        "auxiliary.compression.price_ratio",
        0.0,
        100.0,
        "0.0 to 100.0",
    ),
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
