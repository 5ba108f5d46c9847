//! How the simulator prices a replay: the built-in price table (dollars per million tokens,
//! every reused prefix token a cache hit), or a provider cache profile
//! ([`CacheProfile`]: time-to-live, minimum cacheable prefix, explicit cache writes), priced
//! request by request ([`price_request`], [`price_session`]).
//!
//! ```
//! use compaction_sim::pricing::{self, RequestShape};
//! use hermes_compaction::CacheProfile;
//!
//! let anthropic = CacheProfile::named("anthropic").unwrap();
//! let first = RequestShape { prompt_tokens: 20_000, output_tokens: 1_000, ..Default::default() };
//! // Nothing cached yet: 20k written at 1.25 x $3/M, 1k output at $15/M.
//! let cost = pricing::price_request(&anthropic, &first);
//! assert!((cost.dollars - 0.09).abs() < 1e-9);
//! assert_eq!(pricing::profiles().len(), 5);
//! ```

use std::path::Path;

use figment::Figment;
use figment::providers::{Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

use hermes_compaction::CacheProfile;
use hermes_compaction::cache::{self, PROFILE_NAMES};

use crate::{Error, Result};

/// What a replay is priced with.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Pricing {
    /// The price table: reused prefix tokens are always cache hits (no time-to-live, no
    /// minimum prefix, no write premium); summary calls at the table's summary prices.
    Table(Prices),
    /// A provider cache profile, priced request by request with
    /// [`price_request`]; summary calls at the
    /// profile's input and output prices. The replay's compressor runs with this profile, so
    /// its cache-aware decisions (prune runway, micro reclaim gate) follow it too.
    Profile(CacheProfile),
}

impl Pricing {
    /// The pricings a command asks for: `cache_profile` is a profile name, `custom` (the
    /// configuration's `[compression.cache_custom]`), `prices` (the price table) or `all`
    /// (every named profile). Without it: the price table when a price file is given, else
    /// the configuration's cache profile, else the built-in price table. `prices` is the
    /// price file (defaults when `None`).
    ///
    /// ```
    /// use compaction_sim::Pricing;
    /// use hermes_compaction::Config;
    ///
    /// let config = Config::default();
    /// assert_eq!(Pricing::select(None, None, &config).unwrap()[0].name(), "prices");
    /// assert_eq!(Pricing::select(Some("anthropic"), None, &config).unwrap()[0].name(), "anthropic");
    /// let err = Pricing::select(Some("azure"), None, &config).unwrap_err();
    /// assert!(err.to_string().starts_with("--cache-profile azure: unknown"));
    /// ```
    pub fn select(
        cache_profile: Option<&str>,
        prices: Option<&Path>,
        config: &hermes_compaction::Config,
    ) -> Result<Vec<Pricing>> {
        let table = || -> Result<Pricing> {
            Ok(Pricing::Table(match prices {
                Some(p) => Prices::load(p)?,
                None => Prices::default(),
            }))
        };
        let Some(name) = cache_profile else {
            if prices.is_some() {
                return Ok(vec![table()?]);
            }
            return Ok(vec![match config.cache_profile() {
                Some(p) => Pricing::Profile(p),
                None => table()?,
            }]);
        };
        Ok(match name {
            "all" => profiles().into_iter().map(Pricing::Profile).collect(),
            "prices" => vec![table()?],
            "custom" => vec![Pricing::Profile(config.compression.cache_custom.clone())],
            _ => match CacheProfile::named(name) {
                Some(p) => vec![Pricing::Profile(p)],
                None => {
                    return Err(Error::Config(format!(
                        "--cache-profile {name}: unknown (expected one of {}, custom, prices, all)",
                        PROFILE_NAMES.join(", ")
                    )));
                }
            },
        })
    }

    /// The one pricing of a command that runs under one pricing at a time (`tune`):
    /// [`select`](Self::select) without `all`.
    ///
    /// ```
    /// use compaction_sim::Pricing;
    /// use hermes_compaction::Config;
    ///
    /// let config = Config::default();
    /// assert_eq!(Pricing::select_one(Some("openai"), None, &config).unwrap().name(), "openai");
    /// let err = Pricing::select_one(Some("all"), None, &config).unwrap_err();
    /// assert_eq!(err.to_string(), "--cache-profile all: tune under one pricing at a time");
    /// ```
    ///
    /// # Errors
    ///
    /// `all`, or what [`select`](Self::select) refuses.
    pub fn select_one(
        cache_profile: Option<&str>,
        prices: Option<&Path>,
        config: &hermes_compaction::Config,
    ) -> Result<Pricing> {
        if cache_profile == Some("all") {
            return Err(Error::Config(
                "--cache-profile all: tune under one pricing at a time".into(),
            ));
        }
        Pricing::select(cache_profile, prices, config)?
            .into_iter()
            .next()
            .ok_or_else(|| Error::Config("no pricing".into()))
    }

    /// The name in tables and JSON: `prices` for the table, else the profile's name.
    pub fn name(&self) -> &str {
        match self {
            Pricing::Table(_) => "prices",
            Pricing::Profile(p) => &p.name,
        }
    }
}

/// Dollars per million tokens. The defaults are a typical provider's list prices with a 90%
/// cached-input discount; the summarizer is priced like the main model unless set.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default, deny_unknown_fields)]
pub struct Prices {
    /// Uncached prompt tokens of the main model.
    pub input_per_mtok: f64,
    /// Prompt tokens served from the provider's prefix cache.
    pub cached_input_per_mtok: f64,
    /// Output tokens of the main model.
    pub output_per_mtok: f64,
    /// Prompt tokens of summary calls.
    pub summary_input_per_mtok: f64,
    /// Output tokens of summary calls.
    pub summary_output_per_mtok: f64,
}

impl Default for Prices {
    fn default() -> Self {
        Prices {
            input_per_mtok: 3.0,
            cached_input_per_mtok: 0.30,
            output_per_mtok: 15.0,
            summary_input_per_mtok: 3.0,
            summary_output_per_mtok: 15.0,
        }
    }
}

impl Prices {
    /// Defaults overridden by a TOML file, or a JSON file when the name ends in `.json`.
    pub fn load(path: &Path) -> Result<Prices> {
        if !path.is_file() {
            return Err(Error::Config(format!(
                "price table {}: no such file",
                path.display()
            )));
        }
        let bad = |e: String| Error::Config(format!("price table {}: {e}", path.display()));
        let p: Prices = if path.extension().is_some_and(|e| e == "json") {
            let text = std::fs::read_to_string(path).map_err(|e| bad(e.to_string()))?;
            serde_json::from_str(&text).map_err(|e| bad(e.to_string()))?
        } else {
            Figment::from(Serialized::defaults(Prices::default()))
                .merge(Toml::file_exact(path))
                .extract()
                .map_err(|e| bad(e.to_string()))?
        };
        let all = [
            p.input_per_mtok,
            p.cached_input_per_mtok,
            p.output_per_mtok,
            p.summary_input_per_mtok,
            p.summary_output_per_mtok,
        ];
        if all.iter().any(|v| !v.is_finite() || *v < 0.0) {
            return Err(Error::Config(format!(
                "price table {}: prices must be finite and not negative",
                path.display()
            )));
        }
        Ok(p)
    }

    /// Dollars for the given token counts.
    pub fn cost(
        &self,
        cache_miss: u64,
        cache_hit: u64,
        output: u64,
        summary_in: u64,
        summary_out: u64,
    ) -> f64 {
        (cache_miss as f64 * self.input_per_mtok
            + cache_hit as f64 * self.cached_input_per_mtok
            + output as f64 * self.output_per_mtok
            + summary_in as f64 * self.summary_input_per_mtok
            + summary_out as f64 * self.summary_output_per_mtok)
            / 1e6
    }
}

/// The price ratio a replay of `config` prices its summary calls at, relative to the agent
/// model's prices: 1.0 for warm-cache requests (the agent's own model,
/// [`Config::warm_cache_on`](hermes_compaction::Config::warm_cache_on)), else the standalone
/// summarizer's `auxiliary.compression.price_ratio`.
///
/// ```
/// use compaction_sim::pricing::summary_price_ratio;
/// use hermes_compaction::Config;
/// use hermes_compaction::config::WarmCache;
///
/// let mut config = Config::default();
/// config.auxiliary.compression.price_ratio = 0.3;
/// assert_eq!(summary_price_ratio(&config), 0.3, "standalone: the summarizer's price");
/// config.auxiliary.compression.warm_cache = WarmCache::On;
/// assert_eq!(summary_price_ratio(&config), 1.0, "warm: the agent's own model");
/// ```
pub fn summary_price_ratio(config: &hermes_compaction::Config) -> f64 {
    if config.warm_cache_on() {
        1.0
    } else {
        config.auxiliary.compression.price_ratio
    }
}

/// Every named cache profile, in [`PROFILE_NAMES`] order (what `--cache-profile all` sweeps).
pub fn profiles() -> Vec<CacheProfile> {
    PROFILE_NAMES
        .iter()
        .filter_map(|n| CacheProfile::named(n))
        .collect()
}

/// One model request, as the simulator sees it.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RequestShape {
    /// Prompt tokens sent.
    pub prompt_tokens: u64,
    /// Leading tokens identical to the previous request's prompt (its cacheable prefix).
    pub reused_prefix_tokens: u64,
    /// Output tokens generated.
    pub output_tokens: u64,
    /// Seconds since the previous request (`None` for the first).
    pub secs_since_previous: Option<u64>,
}

/// What one request (or a session, summed with [`add`](Self::add)) costs under a profile.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct RequestCost {
    /// Prompt tokens read from the cache.
    pub cached_tokens: u64,
    /// Prompt tokens sent uncached.
    pub uncached_tokens: u64,
    /// Of the uncached tokens, those written to an explicit cache (at the write price).
    pub cache_write_tokens: u64,
    /// Output tokens.
    pub output_tokens: u64,
    /// Dollars.
    pub dollars: f64,
}

impl RequestCost {
    /// Adds another request's cost.
    pub fn add(&mut self, other: &RequestCost) {
        self.cached_tokens += other.cached_tokens;
        self.uncached_tokens += other.uncached_tokens;
        self.cache_write_tokens += other.cache_write_tokens;
        self.output_tokens += other.output_tokens;
        self.dollars += other.dollars;
    }

    /// Cost in input-token equivalents (price-free): cached x c + uncached + writes x (w - 1).
    pub fn input_token_equivalents(&self, profile: &CacheProfile) -> f64 {
        self.cached_tokens as f64 * profile.cached_input_price_ratio
            + self.uncached_tokens as f64
            + self.cache_write_tokens as f64 * (profile.cache_write_price_ratio - 1.0)
    }
}

/// Whether the cache has expired `secs` after the previous request (always, for a profile
/// without a cache): core's time-to-live rule.
pub(crate) fn cache_expired(profile: &CacheProfile, secs: u64) -> bool {
    cache::rewrite_is_free(profile, Some(secs))
}

/// Prices one request. The reused prefix is read from the cache when the cache is live (the
/// previous request was less than a TTL ago) and the prefix reaches the provider's minimum;
/// the rest is sent uncached. With explicit caching, a prompt of the minimum size or more is
/// assumed to carry a breakpoint at its end, so its uncached part is written to the cache.
pub fn price_request(profile: &CacheProfile, r: &RequestShape) -> RequestCost {
    let live = r
        .secs_since_previous
        .is_some_and(|s| !cache_expired(profile, s));
    let reused = r.reused_prefix_tokens.min(r.prompt_tokens);
    let cached = if live && reused >= profile.min_cacheable_prefix_tokens.max(1) {
        reused
    } else {
        0
    };
    let uncached = r.prompt_tokens - cached;
    let writes = if profile.has_cache()
        && !profile.automatic
        && r.prompt_tokens >= profile.min_cacheable_prefix_tokens
    {
        uncached
    } else {
        0
    };
    let per_token = profile.input_price_per_mtok / 1e6;
    let dollars = cached as f64 * profile.cached_input_price_per_mtok / 1e6
        + (uncached - writes) as f64 * per_token
        + writes as f64 * per_token * profile.cache_write_price_ratio
        + r.output_tokens as f64 * profile.output_price_per_mtok / 1e6;
    RequestCost {
        cached_tokens: cached,
        uncached_tokens: uncached,
        cache_write_tokens: writes,
        output_tokens: r.output_tokens,
        dollars,
    }
}

/// Prices a whole session, request by request.
pub fn price_session(profile: &CacheProfile, requests: &[RequestShape]) -> RequestCost {
    let mut total = RequestCost::default();
    for r in requests {
        total.add(&price_request(profile, r));
    }
    total
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() < 1e-9
    }

    fn named(name: &str) -> CacheProfile {
        CacheProfile::named(name).unwrap()
    }

    #[test]
    fn every_named_profile_is_swept_once() {
        let names: Vec<String> = profiles().into_iter().map(|p| p.name).collect();
        assert_eq!(names, PROFILE_NAMES);
    }

    #[test]
    fn requests_priced_with_worked_numbers() {
        let a = named("anthropic");
        // First request: 20k prompt, nothing cached, written at 1.25x; 1k output.
        let first = RequestShape {
            prompt_tokens: 20_000,
            reused_prefix_tokens: 0,
            output_tokens: 1_000,
            secs_since_previous: None,
        };
        let c = price_request(&a, &first);
        assert_eq!(
            (c.cached_tokens, c.uncached_tokens, c.cache_write_tokens),
            (0, 20_000, 20_000)
        );
        // 20k x 3.75/M + 1k x 15/M = 0.075 + 0.015
        assert!(close(c.dollars, 0.09));
        // Next request 30s later reuses 20k of 22k.
        let next = RequestShape {
            prompt_tokens: 22_000,
            reused_prefix_tokens: 20_000,
            output_tokens: 500,
            secs_since_previous: Some(30),
        };
        let c2 = price_request(&a, &next);
        assert_eq!((c2.cached_tokens, c2.uncached_tokens), (20_000, 2_000));
        // 20k x 0.30/M + 2k x 3.75/M + 500 x 15/M = 0.006 + 0.0075 + 0.0075
        assert!(close(c2.dollars, 0.021));
        // The same request after the TTL: nothing cached.
        let late = RequestShape {
            secs_since_previous: Some(600),
            ..next
        };
        assert_eq!(price_request(&a, &late).cached_tokens, 0);
        // OpenAI: automatic, no write premium; a reused prefix under 1024 tokens is not cached.
        let o = named("openai");
        let c3 = price_request(&o, &next);
        // 20k x 1.25/M + 2k x 2.5/M + 500 x 10/M = 0.025 + 0.005 + 0.005
        assert!(close(c3.dollars, 0.035));
        assert_eq!(c3.cache_write_tokens, 0);
        let small = RequestShape {
            reused_prefix_tokens: 1_000,
            ..next
        };
        assert_eq!(price_request(&o, &small).cached_tokens, 0);
        // A session sums its requests; local costs nothing.
        let total = price_session(&a, &[first, next]);
        assert!(close(total.dollars, 0.111));
        assert_eq!(total.output_tokens, 1_500);
        assert!(close(
            total.input_token_equivalents(&a),
            20_000.0 * 0.1 + 22_000.0 + 22_000.0 * 0.25
        ));
        assert_eq!(price_session(&named("local"), &[first, next]).dollars, 0.0);
    }
}
