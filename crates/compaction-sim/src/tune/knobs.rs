//! The search space: the knobs one candidate sets, the grid of values each is drawn from (cut
//! to what [`Config::validate`] accepts), the random draws and one-knob moves of the search,
//! and the seeded generator that makes a search reproducible.

use std::fmt::Write as _;

use serde::Serialize;

use hermes_compaction::config::WarmCache;
use hermes_compaction::{Config, ReclaimGate};

/// The values one candidate gives the tuned settings.
#[derive(Clone, Copy, Debug, PartialEq, Serialize)]
pub struct Knobs {
    /// `compression.threshold`.
    pub threshold: f64,
    /// `compression.small_window_min_threshold` (the search moves it with `threshold`, so
    /// the threshold it picks applies below `small_window_tokens` too).
    pub small_window_min_threshold: f64,
    /// `compression.threshold_floor_tokens`.
    pub threshold_floor_tokens: u64,
    /// `compression.tail_ratio` (the tail budget, a fraction of the threshold).
    pub tail_ratio: f64,
    /// `compression.prune_runway_ratio` (its highest valid value, 0.9: prune-only is accepted
    /// only when it buys that much runway).
    pub prune_runway_ratio: f64,
    /// `compression.prune_minimum_tokens`.
    pub prune_minimum_tokens: u64,
    /// `compression.proactive_prune_tokens` (0: off).
    pub proactive_prune_tokens: u64,
    /// `compression.micro_compact`.
    pub micro_compact: bool,
    /// `compression.micro_compact_every_n_turns`.
    pub micro_compact_every_n_turns: u64,
    /// `compression.micro_compact_min_reclaim_tokens` (off, a number of tokens, or the
    /// economic gate `"auto"`).
    pub micro_compact_min_reclaim_tokens: ReclaimGate,
    /// `compression.insert_trim_tokens` (0: off).
    pub insert_trim_tokens: u64,
    /// The summary request's form, `auxiliary.compression.warm_cache` (`"on"` when true,
    /// `"off"` when false; [`of`](Self::of) reads `auto` as what it resolves to): the agent's
    /// own model with its cached prefix, or a standalone model at
    /// `auxiliary.compression.price_ratio` of the agent model's prices.
    pub warm_cache: bool,
}

const THRESHOLD: [f64; 9] = [0.35, 0.40, 0.45, 0.50, 0.55, 0.60, 0.65, 0.70, 0.80];
const FLOOR: [u64; 4] = [0, 16_000, 32_000, 64_000];
const TARGET: [f64; 6] = [0.05, 0.10, 0.15, 0.20, 0.25, 0.30];
/// `f64::INFINITY` stands for the highest value validation accepts.
const RUNWAY: [f64; 6] = [0.0, 0.15, 0.25, 0.35, 0.5, f64::INFINITY];
const PRUNE_MIN: [u64; 3] = [0, 8_000, 16_000];
const PROACTIVE: [u64; 5] = [0, 8_000, 16_000, 24_000, 32_000];
const EVERY: [u64; 3] = [1, 2, 4];
const RECLAIM: [ReclaimGate; 5] = [
    ReclaimGate::Off,
    ReclaimGate::Auto,
    ReclaimGate::Tokens(2_000),
    ReclaimGate::Tokens(4_000),
    ReclaimGate::Tokens(8_000),
];
const TRIM: [u64; 3] = [0, 4_000, 8_000];

/// The values the search draws the fractional knobs from, cut to what validation accepts.
#[derive(Clone, Debug)]
pub(super) struct Space {
    threshold: Vec<f64>,
    target: Vec<f64>,
    runway: Vec<f64>,
    every: Vec<u64>,
}

impl Space {
    pub(super) fn new() -> Space {
        let within = |key: &str, values: &[f64]| -> Vec<f64> {
            let (lo, hi) = Config::f64_range(key).unwrap_or((f64::MIN, f64::MAX));
            let mut out: Vec<f64> = values.iter().map(|v| v.clamp(lo, hi)).collect();
            out.dedup();
            out
        };
        Space {
            threshold: within("compression.threshold", &THRESHOLD)
                .into_iter()
                .filter(|v| {
                    Config::f64_range("compression.small_window_min_threshold")
                        .is_none_or(|(lo, hi)| (lo..=hi).contains(v))
                })
                .collect(),
            target: within("compression.tail_ratio", &TARGET),
            runway: within("compression.prune_runway_ratio", &RUNWAY),
            every: {
                let (lo, hi) = Config::u64_range("compression.micro_compact_every_n_turns")
                    .unwrap_or((0, u64::MAX));
                EVERY.iter().map(|v| (*v).clamp(lo, hi)).collect()
            },
        }
    }
}

impl Knobs {
    /// The knobs of `config`.
    pub fn of(config: &Config) -> Knobs {
        let c = &config.compression;
        Knobs {
            threshold: c.threshold,
            small_window_min_threshold: c.small_window_min_threshold,
            threshold_floor_tokens: c.threshold_floor_tokens,
            tail_ratio: c.tail_ratio,
            prune_runway_ratio: c.prune_runway_ratio,
            prune_minimum_tokens: c.prune_minimum_tokens,
            proactive_prune_tokens: c.proactive_prune_tokens,
            micro_compact: c.micro_compact,
            micro_compact_every_n_turns: c.micro_compact_every_n_turns,
            micro_compact_min_reclaim_tokens: c.micro_compact_min_reclaim_tokens,
            insert_trim_tokens: c.insert_trim_tokens,
            warm_cache: config.warm_cache_on(),
        }
    }

    /// `base` with these knobs.
    pub fn apply(&self, base: &Config) -> Config {
        let mut config = base.clone();
        let c = &mut config.compression;
        c.enabled = true;
        c.threshold = self.threshold;
        c.small_window_min_threshold = self.small_window_min_threshold;
        c.threshold_floor_tokens = self.threshold_floor_tokens;
        c.tail_ratio = self.tail_ratio;
        c.prune_runway_ratio = self.prune_runway_ratio;
        c.prune_minimum_tokens = self.prune_minimum_tokens;
        c.proactive_prune_tokens = self.proactive_prune_tokens;
        c.micro_compact = self.micro_compact;
        c.micro_compact_every_n_turns = self.micro_compact_every_n_turns;
        c.micro_compact_min_reclaim_tokens = self.micro_compact_min_reclaim_tokens;
        c.insert_trim_tokens = self.insert_trim_tokens;
        if self.warm_cache != config.warm_cache_on() {
            config.auxiliary.compression.warm_cache = if self.warm_cache {
                WarmCache::On
            } else {
                WarmCache::Off
            };
        }
        config
    }

    /// A short stable name, for tables and rows.
    pub fn name(&self) -> String {
        let small = if self.small_window_min_threshold == self.threshold {
            String::new()
        } else {
            format!("/{:.2}", self.small_window_min_threshold)
        };
        let mut s = format!(
            "t{:.2}{small}-f{}k-r{:.2}-w{:.2}-m{}k-p{}k",
            self.threshold,
            self.threshold_floor_tokens / 1_000,
            self.tail_ratio,
            self.prune_runway_ratio,
            self.prune_minimum_tokens / 1_000,
            self.proactive_prune_tokens / 1_000
        );
        if self.micro_compact {
            let _ = write!(
                s,
                "-micro{}g{}",
                self.micro_compact_every_n_turns,
                match self.micro_compact_min_reclaim_tokens {
                    ReclaimGate::Auto => "auto".to_owned(),
                    g => format!("{}k", g.fixed_tokens() / 1_000),
                }
            );
        }
        if self.insert_trim_tokens > 0 {
            let _ = write!(s, "-trim{}k", self.insert_trim_tokens / 1_000);
        }
        if self.warm_cache {
            s.push_str("-warm");
        }
        s
    }

    /// The configuration keys these knobs set, as TOML `[compression]` lines.
    pub fn toml_lines(&self) -> String {
        format!(
            "threshold = {}\nsmall_window_min_threshold = {}\nthreshold_floor_tokens = {}\ntail_ratio = {}\nprune_runway_ratio = {}\nprune_minimum_tokens = {}\nproactive_prune_tokens = {}\nmicro_compact = {}\nmicro_compact_every_n_turns = {}\nmicro_compact_min_reclaim_tokens = {}\ninsert_trim_tokens = {}\n",
            float(self.threshold),
            float(self.small_window_min_threshold),
            self.threshold_floor_tokens,
            float(self.tail_ratio),
            float(self.prune_runway_ratio),
            self.prune_minimum_tokens,
            self.proactive_prune_tokens,
            self.micro_compact,
            self.micro_compact_every_n_turns,
            match self.micro_compact_min_reclaim_tokens {
                ReclaimGate::Auto => "\"auto\"".to_owned(),
                g => g.to_string(),
            },
            self.insert_trim_tokens
        )
    }

    /// The `[auxiliary.compression]` lines of the summary request's form: `warm_cache` and
    /// the standalone model's `price_ratio` the choice was priced at (`price_ratio`, from the
    /// starting configuration), each with a comment.
    pub fn auxiliary_toml_lines(&self, price_ratio: f64) -> String {
        format!(
            "# The summary request: \"on\" = the agent's own model at the agent's endpoint, its last\n# request's prefix served by the provider's cache; \"off\" = a standalone request.\nwarm_cache = \"{}\"\n# The standalone summary model's price per token relative to the agent model's (the\n# assumption the choice was priced at).\nprice_ratio = {}\n",
            if self.warm_cache { "on" } else { "off" },
            float(price_ratio)
        )
    }

    pub(super) fn key(&self) -> String {
        format!("{self:?}")
    }

    /// A random point of the space; `warm`: `Some(start)` keeps the request form at the
    /// start's, `None` draws it.
    pub(super) fn random(
        space: &Space,
        rng: &mut Rng,
        micro: bool,
        trim: bool,
        warm: Option<bool>,
    ) -> Knobs {
        let micro = micro && rng.below(2) == 1;
        let threshold = rng.pick(&space.threshold);
        let mut k = Knobs {
            threshold,
            small_window_min_threshold: threshold,
            threshold_floor_tokens: rng.pick(&FLOOR),
            tail_ratio: rng.pick(&space.target),
            prune_runway_ratio: rng.pick(&space.runway),
            prune_minimum_tokens: rng.pick(&PRUNE_MIN),
            proactive_prune_tokens: rng.pick(&PROACTIVE),
            micro_compact: micro,
            micro_compact_every_n_turns: if micro { rng.pick(&space.every) } else { 1 },
            micro_compact_min_reclaim_tokens: if micro {
                rng.pick(&RECLAIM)
            } else {
                ReclaimGate::Off
            },
            insert_trim_tokens: if trim { rng.pick(&TRIM) } else { 0 },
            warm_cache: warm.unwrap_or(false),
        };
        // Drawn last, and only when searched, so a search without it draws as before.
        if warm.is_none() {
            k.warm_cache = rng.below(2) == 1;
        }
        k
    }

    /// This point with one knob moved to a neighbouring value (`warm`: the request form is
    /// one of the knobs).
    pub(super) fn neighbour(
        &self,
        space: &Space,
        rng: &mut Rng,
        micro: bool,
        trim: bool,
        warm: bool,
    ) -> Knobs {
        let mut k = *self;
        let knobs = if micro { 10 } else { 7 };
        let pick = rng.below(knobs + u64::from(warm));
        if pick == knobs {
            k.warm_cache = !k.warm_cache;
            return k;
        }
        match pick {
            0 | 6 if k.small_window_min_threshold != k.threshold => {
                k.small_window_min_threshold = k.threshold;
            }
            0 => {
                k.threshold = step(&space.threshold, k.threshold, rng);
                k.small_window_min_threshold = k.threshold;
            }
            6 if !trim => {
                k.threshold = step(&space.threshold, k.threshold, rng);
                k.small_window_min_threshold = k.threshold;
            }
            1 => k.threshold_floor_tokens = step(&FLOOR, k.threshold_floor_tokens, rng),
            2 => k.tail_ratio = step(&space.target, k.tail_ratio, rng),
            3 => k.prune_runway_ratio = step(&space.runway, k.prune_runway_ratio, rng),
            4 => k.prune_minimum_tokens = step(&PRUNE_MIN, k.prune_minimum_tokens, rng),
            5 => k.proactive_prune_tokens = step(&PROACTIVE, k.proactive_prune_tokens, rng),
            6 => k.insert_trim_tokens = step(&TRIM, k.insert_trim_tokens, rng),
            7 => k.micro_compact = !k.micro_compact,
            8 => {
                k.micro_compact_every_n_turns =
                    step(&space.every, k.micro_compact_every_n_turns, rng)
            }
            _ => {
                k.micro_compact_min_reclaim_tokens =
                    step(&RECLAIM, k.micro_compact_min_reclaim_tokens, rng)
            }
        }
        k
    }
}

/// `v` moved one place up or down in `values` (a random value when `v` is not one of them).
fn step<T: Copy + PartialEq>(values: &[T], v: T, rng: &mut Rng) -> T {
    let Some(at) = values.iter().position(|x| *x == v) else {
        return rng.pick(values);
    };
    let up = rng.below(2) == 1;
    let i = if (up && at + 1 < values.len()) || at == 0 {
        (at + 1).min(values.len() - 1)
    } else {
        at - 1
    };
    values[i]
}

/// A float as TOML writes it (always with a decimal point).
fn float(v: f64) -> String {
    let s = format!("{v}");
    if s.contains('.') || s.contains('e') {
        s
    } else {
        format!("{s}.0")
    }
}

/// A small deterministic generator (SplitMix64), so a seed reproduces a search.
#[derive(Clone, Debug)]
pub(super) struct Rng(pub(super) u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9e37_79b9_7f4a_7c15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94d0_49bb_1331_11eb);
        z ^ (z >> 31)
    }

    pub(super) fn below(&mut self, n: u64) -> u64 {
        self.next() % n.max(1)
    }

    fn pick<T: Copy>(&mut self, values: &[T]) -> T {
        values[self.below(values.len() as u64) as usize]
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use hermes_compaction::ConfigLoader;

    /// Issue 25, item 3: the grid is cut to the table `validate` checks, so every point of it
    /// validates (the tuner once proposed `prune_runway_ratio = 1.0`, which validation
    /// rejects).
    #[test]
    fn every_grid_point_validates() {
        let space = Space::new();
        let base = Config::default();
        let mut points = 0;
        for &threshold in &space.threshold {
            for &tail_ratio in &space.target {
                for &prune_runway_ratio in &space.runway {
                    for micro_compact in [false, true] {
                        let knobs = Knobs {
                            threshold,
                            small_window_min_threshold: threshold,
                            tail_ratio,
                            prune_runway_ratio,
                            micro_compact,
                            ..Knobs::of(&base)
                        };
                        let config = knobs.apply(&base);
                        config
                            .validate()
                            .unwrap_or_else(|e| panic!("{knobs:?}: {e}"));
                        points += 1;
                    }
                }
            }
        }
        assert!(space.runway.iter().all(|r| *r <= 0.9), "{:?}", space.runway);
        // The count and token axes, one at a time (validation checks each key alone).
        let axes: [(&str, &[u64]); 5] = [
            ("floor", &FLOOR),
            ("prune_min", &PRUNE_MIN),
            ("proactive", &PROACTIVE),
            ("every", &space.every),
            ("trim", &TRIM),
        ];
        for (axis, values) in axes {
            for &v in values {
                let mut k = Knobs::of(&base);
                match axis {
                    "floor" => k.threshold_floor_tokens = v,
                    "prune_min" => k.prune_minimum_tokens = v,
                    "proactive" => k.proactive_prune_tokens = v,
                    "every" => k.micro_compact_every_n_turns = v,
                    _ => k.insert_trim_tokens = v,
                }
                k.apply(&base)
                    .validate()
                    .unwrap_or_else(|e| panic!("{axis} = {v}: {e}"));
                points += 1;
            }
        }
        for gate in RECLAIM {
            let mut k = Knobs::of(&base);
            k.micro_compact_min_reclaim_tokens = gate;
            k.apply(&base)
                .validate()
                .unwrap_or_else(|e| panic!("reclaim = {gate:?}: {e}"));
            points += 1;
        }
        assert!(points > 100, "{points}");
        // The TOML a point writes loads back as that point, with no deprecation warning.
        let knobs = Knobs::of(&base);
        let (loaded, warnings) = ConfigLoader::new()
            .toml(&format!("[compression]\n{}", knobs.toml_lines()))
            .load()
            .expect("the written TOML loads");
        assert!(warnings.is_empty(), "{warnings:?}");
        assert_eq!(Knobs::of(&loaded), knobs);
    }
}
