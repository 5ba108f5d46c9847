//! How the simulator prices a replay: the built-in price table (dollars per million tokens,
//! every reused prefix token a cache hit), or a provider cache profile
//! ([`CacheProfile`]: time-to-live, minimum cacheable prefix, explicit cache writes).

use std::path::Path;

use figment::Figment;
use figment::providers::{Format, Serialized, Toml};
use serde::{Deserialize, Serialize};

use hermes_compaction::CacheProfile;

use crate::{Error, Result};

/// What a replay is priced with.
#[derive(Clone, Debug, PartialEq, Serialize)]
#[serde(tag = "kind", rename_all = "kebab-case")]
pub enum Pricing {
    /// The price table: reused prefix tokens are always cache hits (no time-to-live, no
    /// minimum prefix, no write premium); summary calls at the table's summary prices.
    Table(Prices),
    /// A provider cache profile, priced request by request with
    /// [`price_request`](hermes_compaction::core::cache::price_request); summary calls at the
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
            "all" => CacheProfile::all()
                .into_iter()
                .map(Pricing::Profile)
                .collect(),
            "prices" => vec![table()?],
            "custom" => vec![Pricing::Profile(config.compression.cache_custom.clone())],
            _ => match CacheProfile::named(name) {
                Some(p) => vec![Pricing::Profile(p)],
                None => {
                    return Err(Error::Config(format!(
                        "--cache-profile {name}: unknown (expected one of {}, custom, prices, all)",
                        hermes_compaction::core::cache::PROFILE_NAMES.join(", ")
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
