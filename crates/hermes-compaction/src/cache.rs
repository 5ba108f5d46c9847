//! Provider cache profiles: what a transcript rewrite costs with a given provider's prompt
//! cache, as plain data and pure arithmetic.
//!
//! Every rewrite of history breaks the prompt cache at the first changed message: the next
//! request pays full (or, with explicit caching, cache-write) price for everything after that
//! point instead of the cached-read price. How much that matters depends on the provider:
//!
//! | profile | cached read | cache write | TTL | min prefix | caching |
//! |---|---|---|---|---|---|
//! | `anthropic` (Claude Sonnet 4: $3 / $0.30 / $15 per Mtok) | 0.1x | 1.25x | 300 s | 1024 | explicit |
//! | `openai` (GPT-4o: $2.50 / $1.25 / $10) | 0.5x | 1x | 300 s | 1024 | automatic |
//! | `openai-gpt5` (GPT-5: $1.25 / $0.125 / $10) | 0.1x | 1x | 300 s | 1024 | automatic |
//! | `google` (Gemini 2.5 Pro, prompts up to 200k: $1.25 / $0.3125 / $10) | 0.25x | 1x | 300 s | 2048 | automatic (implicit) |
//! | `local` (self-hosted: no prices) | 1x | 1x | none | 0 | automatic |
//!
//! Figures are the providers' published list prices at the time of writing and change; a
//! `custom` profile from configuration replaces them. OpenAI and Google do not publish a fixed
//! time-to-live for automatic caches (OpenAI says 5-10 minutes of inactivity); 300 seconds is
//! the conservative figure used for both.
//!
//! The facade keeps what its gates need: the profile, the time-to-live rule
//! ([`rewrite_is_free`]), the micro reclaim gate and the prune runway a profile suggests.
//! Pricing a whole session request by request is the simulator's (`compaction_sim::pricing`).
//! Pure arithmetic on plain data, like the transcript algebra of `compaction_core`, which
//! knows no provider.
//!
//! ```
//! use hermes_compaction::cache::{self, CacheProfile};
//!
//! let anthropic = CacheProfile::named("anthropic").unwrap();
//! // A micro rewrite 50k tokens deep, with ten requests before the next one and a summary
//! // that costs nothing to write, must reclaim at least this much to pay for itself:
//! assert_eq!(cache::micro_reclaim_gate(&anthropic, 50_000, 0, 10), 25_556);
//! // ...but right after the cache expired the rewrite costs nothing extra.
//! assert!(!cache::rewrite_is_free(&anthropic, Some(299)));
//! assert!(cache::rewrite_is_free(&anthropic, Some(301)));
//! ```

use serde::{Deserialize, Serialize};

/// What the cost of a rewrite depends on, for one provider (or model).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct CacheProfile {
    /// Profile name (`anthropic`, `openai`, `openai-gpt5`, `google`, `local`, `custom`).
    pub name: String,
    /// Price of a cached input token as a fraction of the input price (0.1 = 90% off).
    pub cached_input_price_ratio: f64,
    /// Price of writing a token into the cache as a fraction of the input price (1.25 for
    /// Anthropic's 5-minute cache; 1.0 where writes cost nothing extra).
    pub cache_write_price_ratio: f64,
    /// How long an unused cache entry lives, seconds; 0 = no cache.
    pub cache_ttl_secs: u64,
    /// Prompts shorter than this are never cached.
    pub min_cacheable_prefix_tokens: u64,
    /// Whether the provider caches prefixes by itself (`false`: the caller marks breakpoints,
    /// and the new part of each prompt is written at the cache-write price).
    pub automatic: bool,
    /// Dollars per million uncached input tokens.
    pub input_price_per_mtok: f64,
    /// Dollars per million cached input tokens.
    pub cached_input_price_per_mtok: f64,
    /// Dollars per million output tokens.
    pub output_price_per_mtok: f64,
}

impl Default for CacheProfile {
    /// The `local` profile.
    fn default() -> Self {
        CacheProfile::local()
    }
}

/// The names [`CacheProfile::named`] knows.
pub const PROFILE_NAMES: [&str; 5] = ["anthropic", "openai", "openai-gpt5", "google", "local"];

impl CacheProfile {
    /// Anthropic (Claude Sonnet 4 list prices): explicit caching, reads at 0.1x, writes at
    /// 1.25x, 5-minute TTL refreshed on use, 1024-token minimum.
    fn anthropic() -> CacheProfile {
        CacheProfile {
            name: "anthropic".into(),
            cached_input_price_ratio: 0.1,
            cache_write_price_ratio: 1.25,
            cache_ttl_secs: 300,
            min_cacheable_prefix_tokens: 1_024,
            automatic: false,
            input_price_per_mtok: 3.0,
            cached_input_price_per_mtok: 0.3,
            output_price_per_mtok: 15.0,
        }
    }

    /// OpenAI (GPT-4o list prices): automatic caching of prefixes of 1024 tokens or more,
    /// cached input at 0.5x, no write premium.
    fn openai() -> CacheProfile {
        CacheProfile {
            name: "openai".into(),
            cached_input_price_ratio: 0.5,
            cache_write_price_ratio: 1.0,
            cache_ttl_secs: 300,
            min_cacheable_prefix_tokens: 1_024,
            automatic: true,
            input_price_per_mtok: 2.5,
            cached_input_price_per_mtok: 1.25,
            output_price_per_mtok: 10.0,
        }
    }

    /// OpenAI's newer models (GPT-5 list prices): as `openai` with cached input at 0.1x.
    fn openai_gpt5() -> CacheProfile {
        CacheProfile {
            name: "openai-gpt5".into(),
            cached_input_price_ratio: 0.1,
            input_price_per_mtok: 1.25,
            cached_input_price_per_mtok: 0.125,
            output_price_per_mtok: 10.0,
            ..CacheProfile::openai()
        }
    }

    /// Google (Gemini 2.5 Pro list prices for prompts up to 200k tokens): implicit caching,
    /// cached input at 0.25x, no write premium.
    fn google() -> CacheProfile {
        CacheProfile {
            name: "google".into(),
            cached_input_price_ratio: 0.25,
            cache_write_price_ratio: 1.0,
            cache_ttl_secs: 300,
            min_cacheable_prefix_tokens: 2_048,
            automatic: true,
            input_price_per_mtok: 1.25,
            cached_input_price_per_mtok: 0.3125,
            output_price_per_mtok: 10.0,
        }
    }

    /// A self-hosted model: no prices and no cache pricing, so a rewrite never costs extra.
    fn local() -> CacheProfile {
        CacheProfile {
            name: "local".into(),
            cached_input_price_ratio: 1.0,
            cache_write_price_ratio: 1.0,
            cache_ttl_secs: 0,
            min_cacheable_prefix_tokens: 0,
            automatic: true,
            input_price_per_mtok: 0.0,
            cached_input_price_per_mtok: 0.0,
            output_price_per_mtok: 0.0,
        }
    }

    /// A named profile (see [`PROFILE_NAMES`]): the one table of vendor profiles,
    /// list prices included (the micro gate weighs the summary's output price).
    pub fn named(name: &str) -> Option<CacheProfile> {
        Some(match name {
            "anthropic" => CacheProfile::anthropic(),
            "openai" => CacheProfile::openai(),
            "openai-gpt5" => CacheProfile::openai_gpt5(),
            "google" => CacheProfile::google(),
            "local" => CacheProfile::local(),
            _ => return None,
        })
    }

    /// The profile a model name suggests: `claude*` is anthropic, `gpt-5*` openai-gpt5,
    /// other `gpt*`/`o1`/`o3`/`o4` openai, `gemini*` google; `None` otherwise. A provider
    /// prefix (`anthropic/claude-...`) is ignored.
    pub fn for_model(model: &str) -> Option<CacheProfile> {
        let lower = model.to_ascii_lowercase();
        let base = lower.rsplit('/').next().unwrap_or(&lower);
        let name = if base.starts_with("claude") {
            "anthropic"
        } else if base.starts_with("gpt-5") {
            "openai-gpt5"
        } else if base.starts_with("gpt") || ["o1", "o3", "o4"].iter().any(|p| base.starts_with(p))
        {
            "openai"
        } else if base.starts_with("gemini") {
            "google"
        } else {
            return None;
        };
        CacheProfile::named(name)
    }

    /// Whether this profile caches at all.
    pub fn has_cache(&self) -> bool {
        self.cache_ttl_secs > 0 && self.cached_input_price_ratio < 1.0
    }

    /// The first field out of line, if any: ratios and prices must be finite and
    /// non-negative, the write ratio at least 1, the cached ratio at most 1, and the cached
    /// price must match the ratio when prices are given. `Config::validate` turns it into a
    /// `ConfigError` for `compression.cache_custom`.
    pub(crate) fn invalid_field(&self) -> Option<&'static str> {
        let fields = [
            ("cached_input_price_ratio", self.cached_input_price_ratio),
            ("cache_write_price_ratio", self.cache_write_price_ratio),
            ("input_price_per_mtok", self.input_price_per_mtok),
            (
                "cached_input_price_per_mtok",
                self.cached_input_price_per_mtok,
            ),
            ("output_price_per_mtok", self.output_price_per_mtok),
        ];
        for (field, v) in fields {
            if !v.is_finite() || v < 0.0 {
                return Some(field);
            }
        }
        if self.cached_input_price_ratio > 1.0 {
            return Some("cached_input_price_ratio");
        }
        if self.cache_write_price_ratio < 1.0 {
            return Some("cache_write_price_ratio");
        }
        let implied = self.input_price_per_mtok * self.cached_input_price_ratio;
        if self.input_price_per_mtok > 0.0
            && (implied - self.cached_input_price_per_mtok).abs() > 1e-6 * self.input_price_per_mtok
        {
            return Some("cached_input_price_per_mtok");
        }
        None
    }
}

/// The TTL rule: whether the cache has expired after `secs_since_last_request` idle seconds.
/// A profile without a cache is always expired. Right after expiry a rewrite costs nothing
/// extra (the next request re-writes the prefix anyway), so that is the time to compact.
pub(crate) fn cache_expired(profile: &CacheProfile, secs_since_last_request: u64) -> bool {
    !profile.has_cache() || secs_since_last_request >= profile.cache_ttl_secs
}

/// Whether a rewrite now costs nothing extra for the cache's sake: nothing has been sent yet
/// (`None`), or the cache has expired (the gap reached `cache_ttl_secs`) since the last request: the next
/// request re-writes the whole prompt anyway. The facade's proactive prune waives its minimum
/// reclaim then (`compression.cold_cache_rewrites`).
/// The caller measures the gap on its own clock; this is arithmetic on the value.
pub fn rewrite_is_free(profile: &CacheProfile, secs_since_last_request: Option<u64>) -> bool {
    secs_since_last_request.is_none_or(|s| cache_expired(profile, s))
}

/// The smallest reclaim (tokens) for which a micro rewrite `prefix_tokens` deep pays for
/// itself within `horizon_requests` requests (at least 1), the summarizer call included.
///
/// With cached-read ratio `c` and write ratio `w`, rewriting at depth `P` while reclaiming `R`
/// tokens costs `(P - R) w - P c` extra on the next request and saves `R c` on each of the
/// `n` requests after it. A micro pass also re-writes the rolling summary, `summary_tokens`
/// (`S`) of output at the profile's output price (`o = output_price_per_mtok /
/// input_price_per_mtok` input tokens each; 0 when the profile carries no prices). The rewrite
/// wins when `R (c n + w) >= P (w - c) + o S`, so the gate is
/// `ceil((P (w - c) + o S) / (c n + w))`. It is 0 for a profile without a cache.
pub fn micro_reclaim_gate(
    profile: &CacheProfile,
    prefix_tokens: u64,
    summary_tokens: u64,
    horizon_requests: u64,
) -> u64 {
    if !profile.has_cache() {
        return 0;
    }
    let c = profile.cached_input_price_ratio;
    let w = profile.cache_write_price_ratio;
    let n = horizon_requests.max(1) as f64;
    let o = if profile.input_price_per_mtok > 0.0 {
        profile.output_price_per_mtok / profile.input_price_per_mtok
    } else {
        0.0
    };
    let gate = (prefix_tokens as f64 * (w - c).max(0.0) + o * summary_tokens as f64) / (c * n + w);
    // Round away float noise before taking the ceiling.
    ((gate * 1e6).round() / 1e6).ceil() as u64
}

/// The prune runway (fraction of the threshold a prune-only pass must land below it) a
/// profile suggests: 0.15 without a cache, growing with the share of the input price a rewrite
/// throws away, up to 0.30. The more a rewrite costs against a cached read, the more room each
/// compaction must buy before the next one.
pub fn suggested_prune_runway_ratio(profile: &CacheProfile) -> f64 {
    const BASE: f64 = 0.15;
    if !profile.has_cache() {
        return BASE;
    }
    let w = profile.cache_write_price_ratio.max(1.0);
    let lost = ((w - profile.cached_input_price_ratio) / w).clamp(0.0, 1.0);
    BASE * (1.0 + lost)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_micro_gate_pays_for_the_prefix_and_the_summary() {
        // Anthropic: c = 0.1, w = 1.25, output 5x input. P = 10,000, S = 1,000, n = 2:
        // (10,000 x 1.15 + 5 x 1,000) / (0.2 + 1.25) = 16,500 / 1.45 = 11,379.3...
        let a = CacheProfile::anthropic();
        assert_eq!(micro_reclaim_gate(&a, 10_000, 1_000, 2), 11_380);
        // Without a summary it is the cache-only gate: 11,500 / 1.45 = 7,931.03...
        assert_eq!(micro_reclaim_gate(&a, 10_000, 0, 2), 7_932);
        // A longer horizon lowers it; a profile without a cache has none.
        assert!(micro_reclaim_gate(&a, 10_000, 1_000, 8) < 11_380);
        assert_eq!(
            micro_reclaim_gate(&CacheProfile::local(), 10_000, 1_000, 2),
            0
        );
        // A profile without prices charges nothing for the summary.
        let free = CacheProfile {
            input_price_per_mtok: 0.0,
            cached_input_price_per_mtok: 0.0,
            output_price_per_mtok: 0.0,
            ..CacheProfile::anthropic()
        };
        assert_eq!(
            micro_reclaim_gate(&free, 10_000, 1_000, 2),
            micro_reclaim_gate(&a, 10_000, 0, 2)
        );
    }

    #[test]
    fn named_profiles_are_valid_and_round_trip_by_name() {
        for name in PROFILE_NAMES {
            let p = CacheProfile::named(name).unwrap();
            assert_eq!(p.invalid_field(), None);
            assert_eq!(p.name, name);
        }
        assert!(CacheProfile::named("azure").is_none());
    }

    #[test]
    fn validation_names_the_field() {
        let mut p = CacheProfile::openai();
        p.cached_input_price_per_mtok = 2.0;
        assert_eq!(p.invalid_field(), Some("cached_input_price_per_mtok"));
        p = CacheProfile::anthropic();
        p.cache_write_price_ratio = 0.5;
        assert_eq!(p.invalid_field(), Some("cache_write_price_ratio"));
        p.cache_write_price_ratio = f64::NAN;
        assert_eq!(p.invalid_field(), Some("cache_write_price_ratio"));
    }

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    #[test]
    fn micro_gates_with_worked_numbers() {
        // Without a summary, gate = ceil(P (w - c) / (c n + w)), P = 50k, n = 10.
        let gate = |p: CacheProfile| micro_reclaim_gate(&p, 50_000, 0, 10);
        assert_eq!(gate(CacheProfile::anthropic()), 25_556); // 57,500 / 2.25
        assert_eq!(gate(CacheProfile::openai()), 4_167); // 25,000 / 6
        assert_eq!(gate(CacheProfile::openai_gpt5()), 22_500); // 45,000 / 2
        assert_eq!(gate(CacheProfile::google()), 10_715); // 37,500 / 3.5
        assert_eq!(gate(CacheProfile::local()), 0);
        // A longer horizon lowers the gate; zero turns counts as one.
        let a = CacheProfile::anthropic();
        assert_eq!(micro_reclaim_gate(&a, 50_000, 0, 100), 5_112); // 57,500 / 11.25
        assert_eq!(
            micro_reclaim_gate(&a, 50_000, 0, 0),
            micro_reclaim_gate(&a, 50_000, 0, 1)
        );
        assert_eq!(micro_reclaim_gate(&a, 0, 0, 10), 0);
    }

    #[test]
    fn runway_grows_with_what_a_rewrite_throws_away() {
        let runway = |p: CacheProfile| suggested_prune_runway_ratio(&p);
        // anthropic: lost share (1.25 - 0.1) / 1.25 = 0.92, runway 0.15 x 1.92 = 0.288.
        assert!(close(runway(CacheProfile::anthropic()), 0.288));
        // openai: 0.15 x 1.5 = 0.225; google: 0.15 x 1.75 = 0.2625; local: the base 0.15.
        assert!(close(runway(CacheProfile::openai()), 0.225));
        assert!(close(runway(CacheProfile::google()), 0.2625));
        assert!(close(runway(CacheProfile::local()), 0.15));
    }

    #[test]
    fn ttl_rule() {
        let a = CacheProfile::anthropic();
        assert!(!cache_expired(&a, 299));
        assert!(cache_expired(&a, 300));
        assert!(cache_expired(&CacheProfile::local(), 0));
        // A rewrite is free before the first request and once the cache has expired.
        for (secs, free) in [
            (None, true),
            (Some(0), false),
            (Some(299), false),
            (Some(300), true),
            (Some(3_600), true),
        ] {
            assert_eq!(rewrite_is_free(&a, secs), free, "{secs:?}");
        }
        assert!(rewrite_is_free(&CacheProfile::local(), Some(0)));
    }

    #[test]
    fn model_names_pick_profiles() {
        let name = |m: &str| CacheProfile::for_model(m).map(|p| p.name);
        assert_eq!(name("claude-sonnet-4-5").as_deref(), Some("anthropic"));
        assert_eq!(
            name("anthropic/claude-3-5-haiku").as_deref(),
            Some("anthropic")
        );
        assert_eq!(name("gpt-4o-mini").as_deref(), Some("openai"));
        assert_eq!(name("o3-mini").as_deref(), Some("openai"));
        assert_eq!(name("gpt-5-codex").as_deref(), Some("openai-gpt5"));
        assert_eq!(name("gemini-2.5-pro").as_deref(), Some("google"));
        assert_eq!(name("qwen2.5-7b-instruct"), None);
        assert_eq!(name(""), None);
    }
}
