//! The policies the simulator replays: named ones ([`Policy`]) and any configuration
//! ([`Variant`], what the tuner searches).

use std::fmt;
use std::str::FromStr;

use serde::Serialize;

use hermes_compaction::{Config, ReclaimGate};

use crate::{Error, Result};

/// The `+trim` policies' limit, tokens, when neither the caller nor the configuration sets
/// one.
pub const DEFAULT_INSERT_TRIM_TOKENS: u64 = 8_000;

/// A named compaction policy.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize)]
#[serde(rename_all = "kebab-case")]
pub enum Policy {
    /// Never compacts: the baseline.
    None,
    /// The default configuration: batch compaction with prune-first at the low-water mark.
    Batch,
    /// Same as `batch` (the name says how it decides).
    PruneFirst,
    /// Batch compaction that accepts prune-only whenever it lands below the threshold
    /// (prune_minimum_tokens = 0, prune_runway_ratio = 0).
    BatchNaive,
    /// Micro-compaction after every turn (and every tool round), batch as the safety net, with
    /// no reclaim gate (`micro_compact_min_reclaim_tokens = 0`: every pass absorbs), or the
    /// configuration's fixed gate when it sets a number of tokens.
    Micro,
    /// `micro` with the economic reclaim gate (`micro_compact_min_reclaim_tokens = "auto"`): a
    /// pass absorbs only when what it reclaims pays for the prefix it invalidates.
    #[serde(rename = "micro+gate")]
    MicroGate,
    /// `batch` with insertion-time trimming: each tool result over the trim limit is trimmed
    /// before it is appended (originals kept in an in-memory store).
    #[serde(rename = "batch+trim")]
    BatchTrim,
    /// `micro` with insertion-time trimming.
    #[serde(rename = "micro+trim")]
    MicroTrim,
}

impl Policy {
    /// Every policy, in the order of the help text.
    pub const ALL: [Policy; 8] = [
        Policy::None,
        Policy::Batch,
        Policy::PruneFirst,
        Policy::BatchNaive,
        Policy::Micro,
        Policy::MicroGate,
        Policy::BatchTrim,
        Policy::MicroTrim,
    ];

    /// The name on the command line and in the table.
    pub fn name(self) -> &'static str {
        match self {
            Policy::None => "none",
            Policy::Batch => "batch",
            Policy::PruneFirst => "prune-first",
            Policy::BatchNaive => "batch-naive",
            Policy::Micro => "micro",
            Policy::MicroGate => "micro+gate",
            Policy::BatchTrim => "batch+trim",
            Policy::MicroTrim => "micro+trim",
        }
    }

    /// Whether tool results are trimmed as they are appended.
    pub fn trims(self) -> bool {
        matches!(self, Policy::BatchTrim | Policy::MicroTrim)
    }

    /// `base` changed as this policy says. Trimming policies trim tool results over
    /// `insert_trim_tokens`; the others never trim (`compression.insert_trim_tokens = 0`), so
    /// the two can be compared.
    pub fn configure(self, base: &Config, insert_trim_tokens: u64) -> Config {
        let mut c = base.clone();
        c.compression.insert_trim_tokens = if self.trims() { insert_trim_tokens } else { 0 };
        match self {
            Policy::None => {
                c.compression.enabled = false;
                c.compression.micro_compact = false;
            }
            Policy::Batch | Policy::PruneFirst | Policy::BatchTrim => {
                c.compression.micro_compact = false
            }
            Policy::BatchNaive => {
                c.compression.micro_compact = false;
                c.compression.prune_minimum_tokens = 0;
                c.compression.prune_runway_ratio = 0.0;
            }
            Policy::Micro | Policy::MicroTrim => {
                c.compression.micro_compact = true;
                // The economic gate is `micro+gate`; `micro` is the seed's ungated form unless
                // the configuration fixes a number.
                if c.compression.micro_compact_min_reclaim_tokens == ReclaimGate::Auto {
                    c.compression.micro_compact_min_reclaim_tokens = ReclaimGate::Off;
                }
            }
            Policy::MicroGate => {
                c.compression.micro_compact = true;
                c.compression.micro_compact_min_reclaim_tokens = ReclaimGate::Auto;
            }
        }
        c
    }

    /// This policy over `base`, as a replayable variant.
    pub fn variant(self, base: &Config, insert_trim_tokens: u64) -> Variant {
        Variant {
            name: self.name().to_owned(),
            config: self.configure(base, insert_trim_tokens),
            foresight: 0,
        }
    }

    /// The variants of `policies` over `base`, each policy once (where it first appears). The
    /// `+trim` policies trim at `insert_trim_tokens`, else at `compression.insert_trim_tokens`
    /// of `base` when set, else at [`DEFAULT_INSERT_TRIM_TOKENS`].
    ///
    /// ```
    /// use compaction_sim::Policy;
    /// use hermes_compaction::Config;
    ///
    /// let base = Config::default();
    /// let policies = [Policy::Batch, Policy::BatchTrim, Policy::Batch];
    /// let variants = Policy::variants(&policies, &base, None).unwrap();
    /// let names: Vec<&str> = variants.iter().map(|v| v.name.as_str()).collect();
    /// assert_eq!(names, ["batch", "batch+trim"]);
    /// assert_eq!(variants[1].config.compression.insert_trim_tokens, 8_000);
    /// let e = Policy::variants(&policies, &base, Some(0)).unwrap_err();
    /// assert_eq!(e.to_string(), "--insert-trim-tokens must be more than 0");
    /// ```
    ///
    /// # Errors
    ///
    /// The limit resolves to 0 (whichever policies are asked for).
    pub fn variants(
        policies: &[Policy],
        base: &Config,
        insert_trim_tokens: Option<u64>,
    ) -> Result<Vec<Variant>> {
        let limit = insert_trim_tokens.unwrap_or(match base.compression.insert_trim_tokens {
            0 => DEFAULT_INSERT_TRIM_TOKENS,
            n => n,
        });
        if limit == 0 {
            return Err(Error::Config(
                "--insert-trim-tokens must be more than 0".into(),
            ));
        }
        let mut once: Vec<Policy> = Vec::new();
        for p in policies {
            if !once.contains(p) {
                once.push(*p);
            }
        }
        Ok(once.iter().map(|p| p.variant(base, limit)).collect())
    }
}

impl fmt::Display for Policy {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        f.write_str(self.name())
    }
}

impl FromStr for Policy {
    type Err = String;

    fn from_str(s: &str) -> std::result::Result<Policy, String> {
        Policy::ALL
            .into_iter()
            .find(|p| p.name() == s)
            .ok_or_else(|| {
                let names: Vec<&str> = Policy::ALL.iter().map(|p| p.name()).collect();
                format!(
                    "unknown policy {s:?} (expected one of {})",
                    names.join(", ")
                )
            })
    }
}

/// A configuration to replay under a name. Insertion-time trimming is on when
/// `compression.insert_trim_tokens > 0`.
#[derive(Clone, Debug, PartialEq)]
pub struct Variant {
    /// The name in rows, tables and traces.
    pub name: String,
    /// The configuration the replay's compressor runs with.
    pub config: Config,
    /// Answers of [foresight](crate::foresight) (0: none, a policy as it runs). Not a
    /// mechanism: a bound on what the policy could reach if it knew which messages the next
    /// `foresight` answers need.
    pub foresight: usize,
}

impl Variant {
    /// The suffix of [`without_ttl_rule`](Self::without_ttl_rule)'s name.
    pub const NO_TTL_SUFFIX: &'static str = "-nottl";

    /// This variant with the time-to-live rule off (`compression.cold_cache_rewrites =
    /// false`), named with [`NO_TTL_SUFFIX`](Self::NO_TTL_SUFFIX): replayed beside this one,
    /// the difference is what rewrites made once the cache had gone cold saved.
    ///
    /// ```
    /// use compaction_sim::Policy;
    /// use hermes_compaction::Config;
    ///
    /// let batch = Policy::Batch.variant(&Config::default(), 8_000);
    /// let off = batch.without_ttl_rule();
    /// assert_eq!(off.name, "batch-nottl");
    /// assert!(batch.config.compression.cold_cache_rewrites);
    /// assert!(!off.config.compression.cold_cache_rewrites);
    /// ```
    pub fn without_ttl_rule(&self) -> Variant {
        let mut config = self.config.clone();
        config.compression.cold_cache_rewrites = false;
        Variant {
            name: format!("{}{}", self.name, Self::NO_TTL_SUFFIX),
            config,
            foresight: self.foresight,
        }
    }

    /// This variant with `answers` of [foresight](crate::foresight), named
    /// `NAME+foresightN`: replayed beside this one, the difference is what knowing the
    /// next `answers` answers' needs would change.
    ///
    /// ```
    /// use compaction_sim::Policy;
    /// use hermes_compaction::Config;
    ///
    /// let batch = Policy::Batch.variant(&Config::default(), 8_000);
    /// let bound = batch.with_foresight(10);
    /// assert_eq!(bound.name, "batch+foresight10");
    /// assert_eq!((batch.foresight, bound.foresight), (0, 10));
    /// assert_eq!(bound.config, batch.config);
    /// ```
    pub fn with_foresight(&self, answers: usize) -> Variant {
        Variant {
            name: format!("{}+foresight{answers}", self.name),
            config: self.config.clone(),
            foresight: answers,
        }
    }

    /// Whether tool results are trimmed as they are appended.
    pub fn trims(&self) -> bool {
        self.config.compression.enabled && self.config.compression.insert_trim_tokens > 0
    }
}
