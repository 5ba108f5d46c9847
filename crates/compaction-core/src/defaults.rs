//! The one set of default values.
//!
//! Every default of a policy number lives here, once: the core configurations'
//! `Default` impls ([`WindowConfig`](crate::regions::WindowConfig),
//! [`RegionConfig`](crate::regions::RegionConfig), [`BatchConfig`](crate::batch::BatchConfig),
//! [`MicroConfig`](crate::micro::MicroConfig), [`PruneConfig`](crate::prune::PruneConfig),
//! [`TrimConfig`](crate::trim::TrimConfig),
//! [`MaterialConfig`](crate::material::MaterialConfig)) read them, and so does the facade's `Config`
//! (`hermes_compaction::Config::default()`, and `config/default.toml` is tested against it). A
//! core-only user and a facade user therefore get the same threshold, tail and runway.
//!
//! Names follow the facade's `[compression]` keys (without their `micro_compact_` /
//! `prune_` / `insert_trim_` prefix where the core field drops it).
//!
//! ```
//! use compaction_core::{defaults, regions::WindowConfig};
//!
//! // At a 128K window the default threshold is half the window (above the 16K floor).
//! assert_eq!(WindowConfig::for_context(128_000).threshold_tokens(), 64_000);
//! assert_eq!(defaults::THRESHOLD, 0.5);
//! ```

/// Context length assumed when none is given, tokens.
pub const CONTEXT_LENGTH: u64 = 128_000;
/// Smallest context length a configuration accepts, tokens.
pub const MIN_CONTEXT_LENGTH: u64 = 1_024;
/// Threshold as a fraction of the effective window.
pub const THRESHOLD: f64 = 0.5;
/// Windows below this many tokens use at least [`SMALL_WINDOW_MIN_THRESHOLD`].
pub const SMALL_WINDOW_TOKENS: u64 = 512_000;
/// Minimum threshold fraction of small windows.
pub const SMALL_WINDOW_MIN_THRESHOLD: f64 = 0.5;
/// Absolute floor of the threshold, tokens.
pub const THRESHOLD_FLOOR_TOKENS: u64 = 16_000;
/// How far the floor may lift the threshold, as a fraction of the effective window (the rest
/// is room for a tool loop between two checks). The spec's 0.85 left 2,400 tokens of a 16K
/// window (issue 33, item 7).
pub const FLOOR_CAP: f64 = 0.70;
/// Absolute cap of the threshold, tokens (0: no cap).
pub const THRESHOLD_CAP_TOKENS: u64 = 0;
/// Messages after the system prompt kept in the head until the first compaction.
pub const PROTECT_FIRST_N: usize = 3;
/// Minimum number of messages in the tail.
pub const PROTECT_LAST_N: usize = 6;
/// Real user requests the tail holds verbatim (0: only the latest).
pub const MIN_TAIL_USER_MESSAGES: usize = 0;
/// Tail budget as a fraction of the threshold.
pub const TAIL_RATIO: f64 = 0.05;
/// How far past its budget the tail may stretch to keep a tool group whole.
pub const TAIL_SOFT_CEILING: f64 = 1.5;
/// Minimum runway prune-only must buy, tokens.
pub const PRUNE_MINIMUM_TOKENS: u64 = 0;
/// Minimum runway prune-only must buy, as a fraction of the threshold.
pub const PRUNE_RUNWAY_RATIO: f64 = 0.15;
/// Tool outputs above this many tokens are pruned to one line.
pub const PRUNE_TOOL_OUTPUT_MIN_TOKENS: u64 = 200;
/// String arguments above this many characters are shortened by pruning.
pub const PRUNE_ARGUMENT_MAX_CHARS: usize = 2_000;
/// Characters of the names index a pruned tool output or an elided argument keeps
/// (the paths, symbols and ids it removed); 0 keeps none.
pub const PRUNE_NAMES_MAX_CHARS: usize = 400;
/// Prune-only passes keep old tool outputs a later assistant message cites.
pub const PRUNE_KEEP_CITED: bool = true;
/// Tokens of tool output since the last pass at which a proactive prune runs.
pub const PROACTIVE_PRUNE_TOKENS: u64 = 16_000;
/// Tools whose outputs are never pruned or trimmed.
const PROTECTED_TOOLS: [&str; 5] = ["read_file", "memory", "clarify", "skill_view", "todo"];
/// Bound of a summary, tokens (the batch planner's estimate of one summary's size).
pub const SUMMARY_MAX_TOKENS: u32 = 1_000;
/// Bound of the ledger section a summary carries, tokens (0: no ledger).
pub const LEDGER_MAX_TOKENS: u64 = 3_000;
/// Image parts older than the newest this-many become placeholders.
pub const KEEP_RECENT_IMAGES: usize = 3;
/// Join neighbours instead of leaving same-role pairs the mainstream APIs accept.
pub const STRICT_ALTERNATION: bool = false;
/// Rolling micro summary size above which a pass defrags instead of absorbing, tokens.
pub const MICRO_DEFRAG_THRESHOLD_TOKENS: u64 = 1_000;
/// Failures of the same exchange in a row before micro-compaction skips it.
pub const MICRO_MAX_CONSECUTIVE_FAILURES: u32 = 3;
/// Micro-compaction absorbs only when this many tokens are reclaimed (0: off).
pub const MICRO_MIN_RECLAIM_TOKENS: u64 = 0;
/// A defrag output above this fraction of its input counts as failed.
pub const MICRO_DEFRAG_MAX_RATIO: f64 = 0.5;
/// Characters of one message a summarizer is sent before it is cut (head and tail).
pub const MATERIAL_MAX_MESSAGE_CHARS: usize = 6_000;
/// Characters of one summary request: the material and the previous summary together.
pub const MATERIAL_MAX_TOTAL_CHARS: usize = 200_000;
/// Characters of one tool-call argument string a summarizer is sent.
pub const MATERIAL_MAX_ARGUMENT_CHARS: usize = 500;
/// Messages above this many tokens are trimmed on insertion (0: off).
pub const INSERT_TRIM_TOKENS: u64 = 0;
/// Characters of a trimmed message's head excerpt.
pub const INSERT_TRIM_HEAD_CHARS: usize = 2_000;
/// Characters of a trimmed message's tail excerpt.
pub const INSERT_TRIM_TAIL_CHARS: usize = 2_000;

/// Tools whose outputs are never pruned or trimmed: `read_file`, `memory`, `clarify`,
/// `skill_view`, `todo`.
pub fn protected_tools() -> Vec<String> {
    PROTECTED_TOOLS.map(String::from).to_vec()
}
