//! The one set of default values, crate-private.
//!
//! Every default of a policy number lives here, once, and reaches users only through the
//! `Default` impls of the core configurations ([`WindowConfig`](crate::regions::WindowConfig),
//! [`RegionConfig`](crate::regions::RegionConfig), [`BatchConfig`](crate::batch::BatchConfig),
//! [`MicroConfig`](crate::micro::MicroConfig), [`PruneConfig`](crate::prune::PruneConfig),
//! [`TrimConfig`](crate::trim::TrimConfig),
//! [`MaterialConfig`](crate::material::MaterialConfig)). The facade's `Config::default()`
//! reads those impls, so a core-only user and a facade user get the same threshold, tail and
//! runway.

/// Context length assumed when none is given, tokens.
pub(crate) const CONTEXT_LENGTH: u64 = 128_000;
/// Threshold as a fraction of the effective window.
pub(crate) const THRESHOLD: f64 = 0.5;
/// Windows below this many tokens use at least [`SMALL_WINDOW_MIN_THRESHOLD`].
pub(crate) const SMALL_WINDOW_TOKENS: u64 = 512_000;
/// Minimum threshold fraction of small windows.
pub(crate) const SMALL_WINDOW_MIN_THRESHOLD: f64 = 0.5;
/// Absolute floor of the threshold, tokens.
pub(crate) const THRESHOLD_FLOOR_TOKENS: u64 = 16_000;
/// How far the floor may lift the threshold, as a fraction of the effective window (the rest
/// is room for a tool loop between two checks). The spec's 0.85 left 2,400 tokens of a 16K
/// window (issue 33, item 7).
pub(crate) const FLOOR_CAP: f64 = 0.70;
/// Absolute cap of the threshold, tokens (0: no cap).
pub(crate) const THRESHOLD_CAP_TOKENS: u64 = 0;
/// Messages after the system prompt kept in the head until the first compaction.
pub(crate) const PROTECT_FIRST_N: usize = 3;
/// Minimum number of messages in the tail.
pub(crate) const PROTECT_LAST_N: usize = 6;
/// Real user requests the tail holds verbatim (0: only the latest).
pub(crate) const MIN_TAIL_USER_MESSAGES: usize = 0;
/// Tail budget as a fraction of the threshold.
pub(crate) const TAIL_RATIO: f64 = 0.05;
/// How far past its budget the tail may stretch to keep a tool group whole.
pub(crate) const TAIL_SOFT_CEILING: f64 = 1.5;
/// Minimum runway prune-only must buy, tokens.
pub(crate) const PRUNE_MINIMUM_TOKENS: u64 = 0;
/// Minimum runway prune-only must buy, as a fraction of the threshold.
pub(crate) const PRUNE_RUNWAY_RATIO: f64 = 0.15;
/// Tool outputs above this many tokens are pruned to one line.
pub(crate) const PRUNE_TOOL_OUTPUT_MIN_TOKENS: u64 = 200;
/// String arguments above this many characters are shortened by pruning.
pub(crate) const PRUNE_ARGUMENT_MAX_CHARS: usize = 2_000;
/// Characters of the names index a pruned tool output or an elided argument keeps
/// (the paths, symbols and ids it removed); 0 keeps none, the default since issue 31 (it was
/// 400: docs/ECONOMICS.md, "Measured again on main").
pub(crate) const PRUNE_NAMES_MAX_CHARS: usize = 0;
/// Prune-only passes keep old tool outputs a later assistant message cites.
pub(crate) const PRUNE_KEEP_CITED: bool = true;
/// Tools whose outputs are never pruned or trimmed. `read_file` was one until 2026-12-07:
/// protecting a session's reads cost more on five of six measured sets and kept less content
/// on four (docs/ECONOMICS.md, "Protected reads").
const PROTECTED_TOOLS: [&str; 4] = ["memory", "clarify", "skill_view", "todo"];
/// Bound of a summary, tokens (the batch planner's estimate of one summary's size).
pub(crate) const SUMMARY_MAX_TOKENS: u32 = 1_000;
/// Bound of the ledger section a summary carries, tokens (0: no ledger).
pub(crate) const LEDGER_MAX_TOKENS: u64 = 3_000;
/// Image parts older than the newest this-many become placeholders.
pub(crate) const KEEP_RECENT_IMAGES: usize = 3;
/// Join neighbours instead of leaving same-role pairs the mainstream APIs accept.
pub(crate) const STRICT_ALTERNATION: bool = false;
/// Rolling micro summary size above which a pass defrags instead of absorbing, tokens.
pub(crate) const MICRO_DEFRAG_THRESHOLD_TOKENS: u64 = 1_000;
/// Failures of the same exchange in a row before micro-compaction skips it.
pub(crate) const MICRO_MAX_CONSECUTIVE_FAILURES: u32 = 3;
/// Micro-compaction absorbs only when this many tokens are reclaimed (0: off).
pub(crate) const MICRO_MIN_RECLAIM_TOKENS: u64 = 0;
/// Micro-compaction folds only messages at least this many answers old (0: any age): the
/// chance that one of the next eight answers needs a message falls under one in ten there.
pub(crate) const MICRO_MIN_AGE_ANSWERS: usize = 8;
/// A defrag output above this fraction of its input counts as failed.
pub(crate) const MICRO_DEFRAG_MAX_RATIO: f64 = 0.5;
/// Characters of one message a summarizer is sent before it is cut (head and tail).
pub(crate) const MATERIAL_MAX_MESSAGE_CHARS: usize = 6_000;
/// Characters of one summary request: the material and the previous summary together.
pub(crate) const MATERIAL_MAX_TOTAL_CHARS: usize = 200_000;
/// Characters of one tool-call argument string a summarizer is sent.
pub(crate) const MATERIAL_MAX_ARGUMENT_CHARS: usize = 500;
/// Messages above this many tokens are trimmed on insertion (0: off).
pub(crate) const INSERT_TRIM_TOKENS: u64 = 0;
/// Characters of a trimmed message's head excerpt.
pub(crate) const INSERT_TRIM_HEAD_CHARS: usize = 2_000;
/// Characters of a trimmed message's tail excerpt.
pub(crate) const INSERT_TRIM_TAIL_CHARS: usize = 2_000;

/// Tools whose outputs are never pruned or trimmed: `memory`, `clarify`, `skill_view`,
/// `todo`.
pub(crate) fn protected_tools() -> Vec<String> {
    PROTECTED_TOOLS.map(String::from).to_vec()
}
