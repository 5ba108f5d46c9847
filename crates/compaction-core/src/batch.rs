//! The batch planner: prune first, accept prune-only only at the low-water mark, otherwise
//! summarize the middle (and, for a long turn, the older part of the turn), then assemble.
//!
//! Planning is pure. [`plan_batch`] decides and prepares the summarizer material;
//! the caller runs the summarizer for each [`SummaryJob`]; [`assemble`] turns the plan and the
//! summaries into one [`Edit`] of the transcript the plan was made from. A plan remembers the
//! transcript's [`stamp`](Transcript::stamp), and [`assemble`] refuses a transcript that
//! changed since (any push, splice or metadata edit, even one that keeps the length and the
//! token total).

use std::ops::Range;

use serde::{Deserialize, Serialize};

use crate::defaults;
use crate::edit::Edit;
use crate::error::Error;
use crate::ledger::Ledger;
use crate::marker;
use crate::material::{self, MaterialConfig};
use crate::message::{MarkerKind, Message};
use crate::prune::{self, PruneConfig, PrunePlan};
use crate::regions::{self, RegionConfig, Regions};
use crate::tokens::TokenCounter;
use crate::transcript::Transcript;

mod assembly;
mod continuation;
mod jobs;
mod rewrites;

use assembly::assemble_from;
pub(crate) use assembly::{marker_role, merge_refused, progress_role};
use continuation::ContinuationNeed;
pub(crate) use continuation::continuation_plan;
use jobs::{
    MAX_FOCUS_CHARS, SUMMARY_LANDING_RATIO, batch_range, derive_focus, has_substance, job,
    pruned_tokens, size_jobs,
};
use rewrites::{demote_tail, strip_old_images};

/// Batch policy.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(default)]
pub struct BatchConfig {
    /// Head and tail protection.
    pub regions: RegionConfig,
    /// Phase 1.
    pub prune: PruneConfig,
    /// Summarizer material bounds.
    pub material: MaterialConfig,
    /// Minimum runway prune-only must buy, in tokens. Default
    /// 0.
    pub prune_minimum_tokens: u64,
    /// Minimum runway as a fraction of the threshold. Default 0.15.
    pub prune_runway_ratio: f64,
    /// Bound of a summary (facade key `compression.summary_max_tokens`), used to estimate
    /// whether one summary is enough. Default 1,000.
    #[serde(alias = "summary_max_tokens")]
    pub summary_max_tokens: u64,
    /// Join neighbours instead of leaving same-role pairs the mainstream APIs accept.
    pub strict_alternation: bool,
    /// Bound of the [ledger](crate::ledger) section a summary carries, in tokens (0: no
    /// ledger). Default 3,000.
    pub ledger_max_tokens: u64,
    /// Image parts of the rewritable regions older than the newest user message with an image
    /// (or, when no user message holds one, than the transcript's newest this-many) become a
    /// short placeholder naming their type and size (`[image removed after compaction:
    /// image/png, 45.0 KB; …]`); the originals are archived with the rows the pass replaces.
    /// Default 3.
    pub keep_recent_images: usize,
}

impl Default for BatchConfig {
    fn default() -> Self {
        BatchConfig {
            regions: RegionConfig::default(),
            prune: PruneConfig::default(),
            material: MaterialConfig::default(),
            prune_minimum_tokens: defaults::PRUNE_MINIMUM_TOKENS,
            prune_runway_ratio: defaults::PRUNE_RUNWAY_RATIO,
            summary_max_tokens: u64::from(defaults::SUMMARY_MAX_TOKENS),
            strict_alternation: defaults::STRICT_ALTERNATION,
            ledger_max_tokens: defaults::LEDGER_MAX_TOKENS,
            keep_recent_images: defaults::KEEP_RECENT_IMAGES,
        }
    }
}

impl BatchConfig {
    /// The low-water mark a prune-only pass must reach for `threshold_tokens`:
    /// `threshold - max(prune_minimum_tokens, prune_runway_ratio * threshold)`.
    pub fn low_water_mark(&self, threshold_tokens: u64) -> u64 {
        let runway = self
            .prune_minimum_tokens
            .max((threshold_tokens as f64 * self.prune_runway_ratio) as u64);
        threshold_tokens.saturating_sub(runway)
    }
}

/// What the caller asked for.
#[derive(Clone, Debug, Default, PartialEq, Eq)]
pub struct BatchRequest {
    /// Compact even below the threshold (a user's `/compress`).
    pub force: bool,
    /// Only prune; never summarize (the `prune` mode of the CLI).
    pub prune_only: bool,
    /// A focus topic for the summary; derived from the latest user message when absent or
    /// blank. Redacted, and cut to its first and last characters beyond 1,000, before any
    /// job carries it.
    pub focus: Option<String>,
    /// Whether the session has been compacted before (head protection decays).
    pub compacted: bool,
}

/// What the planner decided.
#[derive(Clone, Debug, PartialEq)]
pub enum BatchStep {
    /// Nothing to do.
    Nothing(NothingReason),
    /// Commit the prune edit alone.
    PruneOnly {
        /// Whether it reached the low-water mark (false: best effort, nothing to summarize).
        reached_low_water: bool,
    },
    /// Run the summarizer for each job, then [`assemble`].
    Summarize(Vec<SummaryJob>),
}

/// Why a plan does nothing.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum NothingReason {
    /// Below the threshold and not forced.
    BelowThreshold,
    /// No rewritable messages and nothing to prune.
    NothingToCompact,
    /// Head, pinned user message and tail alone exceed the threshold even after demoting the
    /// tail's tool outputs.
    IrreducibleFloor,
}

/// One summary the caller must produce.
#[derive(Clone, Debug, PartialEq)]
pub struct SummaryJob {
    /// `Batch` for the middle, `Progress` for the older part of a long turn.
    pub kind: MarkerKind,
    /// The range of the planned-against transcript the summary replaces.
    pub range: Range<usize>,
    /// Serialized, redacted material (after pruning).
    pub material: String,
    /// Bodies of earlier summaries inside `range`, for the iterative update.
    pub previous_summary: Option<String>,
    /// Focus topic.
    pub focus: Option<String>,
    /// The span itself after pruning, redacted (text and tool arguments), for deterministic
    /// summarizers.
    pub messages: Vec<Message>,
    /// The files and commands of the span (with the ledgers of the summaries inside it),
    /// attached to the summary by [`assemble`]; `previous_summary` comes without them.
    pub ledger: Ledger,
    /// The size to ask of the summarizer, in tokens: [`BatchConfig::summary_max_tokens`],
    /// or less when the window leaves less room, so the pass lands under the threshold.
    pub budget_tokens: u64,
    /// The bound of the ledger [`assemble`] attaches, in tokens:
    /// [`BatchConfig::ledger_max_tokens`], or less when the window leaves less room.
    pub ledger_max_tokens: u64,
}

/// A batch plan for one transcript.
#[derive(Clone, Debug, PartialEq)]
pub struct BatchPlan {
    /// The partition the plan was made with.
    pub regions: Regions,
    /// Threshold in tokens.
    pub threshold_tokens: u64,
    /// Low-water mark in tokens.
    pub low_water_tokens: u64,
    /// Size before (calibrated when available).
    pub tokens_before: u64,
    /// Phase 1, including any tail demotion.
    pub prune: PrunePlan,
    /// Estimated size after phase 1.
    pub tokens_after_prune: u64,
    /// Tool outputs in the tail demoted as a last resort (the exception to law 1).
    pub demoted_tail_outputs: usize,
    /// Tokens of the head, of the rewritable part (middle and turn middle), and of the
    /// protected rest (pinned user message and tail), before the pass.
    pub region_tokens: RegionTokens,
    /// The decision.
    pub step: BatchStep,
    /// [`Transcript::stamp`] of the planned-against transcript.
    planned_stamp: u64,
}

/// Token sizes of the regions of a plan.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct RegionTokens {
    /// The head.
    pub head: u64,
    /// The middle plus the older part of a long turn.
    pub middle: u64,
    /// The pinned user message plus the tail.
    pub tail: u64,
}

/// Plans a batch pass.
///
/// Run the summarizer for each [`SummaryJob`], then [`assemble`] the edit:
///
/// ```
/// use compaction_core::batch::{self, BatchConfig, BatchRequest, BatchStep};
/// use compaction_core::{Estimator, Message, Transcript};
///
/// let counter = Estimator::default();
/// let mut msgs = vec![Message::system("You are a coding agent.")];
/// for i in 0..40 {
///     msgs.push(Message::user(format!("request {i}: {}", "details ".repeat(60))));
///     msgs.push(Message::assistant(format!("answer {i}: {}", "done ".repeat(60))));
/// }
/// let t = Transcript::new(msgs, &counter);
/// let cfg = BatchConfig::default();
/// let plan = batch::plan_batch(&t, 6_000, &cfg, &BatchRequest::default(), &counter);
/// let BatchStep::Summarize(jobs) = &plan.step else {
///     panic!("over the threshold with nothing to prune: {:?}", plan.step);
/// };
/// // Your summarizer turns each job's (redacted) material into a summary body.
/// let summaries: Vec<String> = jobs
///     .iter()
///     .map(|j| format!("## Goal\n- {} messages summarized", j.range.len()))
///     .collect();
/// let edit = batch::assemble(&t, &plan, &summaries, &cfg).unwrap();
/// let after = edit.apply(t.messages()).unwrap();
/// assert!(after.len() < t.len());
/// assert_eq!(after[0], t.messages()[0]); // the head is untouched
/// ```
pub fn plan_batch(
    t: &Transcript,
    threshold_tokens: u64,
    cfg: &BatchConfig,
    req: &BatchRequest,
    counter: &dyn TokenCounter,
) -> BatchPlan {
    let mut plan = plan_unindexed(t, threshold_tokens, cfg, req, counter);
    // The names indexes of the rewrites that stay: a rewrite inside a span the pass
    // summarizes is replaced by the summary, so its index would be work for nothing.
    let summarized: Vec<Range<usize>> = match &plan.step {
        BatchStep::Summarize(jobs) => jobs.iter().map(|j| j.range.clone()).collect(),
        _ => Vec::new(),
    };
    let reclaimed = plan.prune.reclaimed_tokens;
    plan.prune.add_names(t, &cfg.prune, counter, |i| {
        !summarized.iter().any(|r| r.contains(&i))
    });
    let lost = reclaimed.saturating_sub(plan.prune.reclaimed_tokens);
    plan.tokens_after_prune += (lost as f64 * t.calibration_scale()).round() as u64;
    plan
}

/// Turns a plan and its summaries (one per job, in order) into one edit of the planned-against
/// transcript. For [`BatchStep::PruneOnly`], pass no summaries.
pub fn assemble(
    t: &Transcript,
    plan: &BatchPlan,
    summaries: &[String],
    cfg: &BatchConfig,
) -> Result<Edit, Error> {
    assemble_from(t, plan, plan.prune.edit.splices.clone(), summaries, cfg)
}

/// [`assemble`] without copying the prune edit: its splices are moved out of `plan` (which
/// keeps everything else, e.g. for telemetry). For large prune passes this avoids cloning every
/// rewritten message.
pub fn assemble_taking_prune(
    t: &Transcript,
    plan: &mut BatchPlan,
    summaries: &[String],
    cfg: &BatchConfig,
) -> Result<Edit, Error> {
    let prune = std::mem::take(&mut plan.prune.edit.splices);
    assemble_from(t, plan, prune, summaries, cfg)
}

/// How far past [`BatchConfig::summary_max_tokens`] the budget of a job that folds older
/// summaries may grow: by the size of the summaries it folds, to at most this many times the
/// configured size.
pub const FOLD_BUDGET_FACTOR: u64 = 2;

fn plan_unindexed(
    t: &Transcript,
    threshold_tokens: u64,
    cfg: &BatchConfig,
    req: &BatchRequest,
    counter: &dyn TokenCounter,
) -> BatchPlan {
    let tokens_before = t.current_tokens();
    let low_water = cfg.low_water_mark(threshold_tokens);
    // One measurement drives both the trigger and the plan: when the provider's count (the
    // calibration) differs from the estimate, estimated sizes are scaled by their ratio before
    // they are compared with the threshold, and the partition uses the threshold in estimate
    // units.
    let scale = t.calibration_scale();
    let scaled = |est: u64| (est as f64 * scale).round() as u64;
    let r = regions::partition(t, threshold_tokens, &cfg.regions, req.compacted);
    let mut plan = BatchPlan {
        regions: r.clone(),
        threshold_tokens,
        low_water_tokens: low_water,
        tokens_before,
        prune: PrunePlan::default(),
        tokens_after_prune: tokens_before,
        demoted_tail_outputs: 0,
        region_tokens: RegionTokens {
            head: t.tokens_in(r.head.clone()),
            middle: t.tokens_in(r.middle.clone()) + t.tokens_in(r.turn_middle.clone()),
            tail: t.tokens_in(r.middle.end..r.turn_middle.start) + t.tokens_in(r.tail.clone()),
        },
        step: BatchStep::Nothing(NothingReason::BelowThreshold),
        planned_stamp: t.stamp(),
    };
    if !req.force && tokens_before < threshold_tokens {
        return plan;
    }

    let ranges: Vec<Range<usize>> = [r.middle.clone(), r.turn_middle.clone()]
        .into_iter()
        .filter(|x| !x.is_empty())
        .collect();
    // Pinned messages (and their tool groups) are kept like head messages: nothing prunes them.
    let free = crate::pins::free_ranges_of(t.messages(), &ranges);
    plan.prune = if cfg.prune.keep_cited {
        // Reference-aware pruning: the outputs later messages cite go last. A prune-only pass
        // keeps them; a threshold pass prunes them only when the uncited alone fall short.
        let calls = prune::CallIndex::build(t.messages());
        let cited = prune::cited_outputs(t.messages(), &free, &calls);
        let (uncited, cited) =
            prune::plan_prune_split(t, &free, &cfg.prune, counter, &calls, &cited);
        let after = tokens_before.saturating_sub(scaled(uncited.reclaimed_tokens));
        if req.prune_only || after <= low_water {
            uncited
        } else {
            uncited.merged(cited)
        }
    } else {
        prune::plan_prune(t, &free, &cfg.prune, counter)
    };
    strip_old_images(t, &r, &free, cfg, counter, &mut plan.prune);
    plan.tokens_after_prune = tokens_before.saturating_sub(scaled(plan.prune.reclaimed_tokens));

    // Last resort when the protected messages alone exceed the threshold: no summary of the
    // middle can bring the prompt under it (a giant tool output in the tail would be kept
    // whole and overflow the window), so the tail's largest tool outputs become one-liners
    // until the protected part fits beside a summary.
    let protected: u64 = scaled(r.protected().iter().map(|p| t.tokens_in(p.clone())).sum());
    let limit = threshold_tokens.saturating_sub(cfg.summary_max_tokens);
    if !req.prune_only && !ranges.is_empty() && protected > limit {
        let demoted = demote_tail(t, &r, protected, limit, scale, cfg, counter, &mut plan);
        plan.tokens_after_prune = plan.tokens_after_prune.saturating_sub(protected - demoted);
    }
    let has_prune = !plan.prune.edit.is_empty();
    if req.prune_only || ranges.is_empty() {
        if !req.prune_only && protected > threshold_tokens {
            let start = plan.tokens_after_prune;
            plan.tokens_after_prune = demote_tail(
                t,
                &r,
                start,
                threshold_tokens,
                scale,
                cfg,
                counter,
                &mut plan,
            );
        }
        plan.step = if plan.prune.edit.is_empty() {
            BatchStep::Nothing(if protected > threshold_tokens {
                NothingReason::IrreducibleFloor
            } else {
                NothingReason::NothingToCompact
            })
        } else {
            BatchStep::PruneOnly {
                reached_low_water: plan.tokens_after_prune <= low_water,
            }
        };
        return plan;
    }
    if has_prune && plan.tokens_after_prune <= low_water {
        plan.step = BatchStep::PruneOnly {
            reached_low_water: true,
        };
        return plan;
    }

    // Summarize: the middle, and the older part of a long turn when one summary is not enough.
    // A caller's focus is bounded and redacted like every text bound for a summarizer.
    let focus = req
        .focus
        .as_deref()
        .map(str::trim)
        .filter(|f| !f.is_empty())
        .map(|f| material::cut_middle(f, MAX_FOCUS_CHARS))
        .or_else(|| derive_focus(t));
    let mut jobs = Vec::new();
    // What the pass keeps besides its summaries (scaled), as the jobs are chosen.
    let mut kept = plan.tokens_after_prune;
    let need = ContinuationNeed::of(t.messages());
    let mut span = batch_range(t, &r, true, &need);
    // The last reply the user saw stays in place (spec section 1) unless keeping it is what
    // stands between the pass and its landing: when summarizing it with the rest lands the
    // pass at or under the low-water mark (or under the threshold) and keeping it does not,
    // the reply is summarized too, as the window comes first (a reply far back, followed by a
    // long tool loop, would otherwise leave that loop unsummarizable). A pass that misses the
    // same marks either way (an oversized output in the protected tail) keeps the reply:
    // summarizing it would only get closer, at the cost of what the user last read (issue
    // 33, item 9).
    if r.rewritable_middle() != r.middle {
        let estimate = |span: &Option<Range<usize>>| {
            let rewritten = span.as_ref().map_or(0, |m| {
                scaled(pruned_tokens(t, &plan.prune, m.clone(), counter))
            });
            kept.saturating_sub(rewritten)
                .saturating_add(cfg.summary_max_tokens)
        };
        if estimate(&span) > low_water {
            let whole = batch_range(t, &r, false, &need);
            let (kept_reply, summarized) = (estimate(&span), estimate(&whole));
            // Summarizing the reply must reach a mark keeping it misses: the low-water mark,
            // or at least the threshold. A forced pass (the provider refused the prompt, or
            // the user asked) that keeping the reply leaves nothing to summarize takes the
            // reply too when that shrinks the prompt: closer is all it can get, and an
            // overflow pass that did nothing would leave the next request refused as well
            // (a reply followed by a whole exchange, with a head near the threshold).
            if summarized <= low_water
                || (kept_reply > threshold_tokens && summarized <= threshold_tokens)
                || (req.force && span.is_none() && summarized < kept)
            {
                span = whole;
            }
        }
    }
    if let Some(middle) = span {
        let job = job(
            t,
            &plan.prune,
            middle.clone(),
            MarkerKind::Batch,
            focus.clone(),
            cfg,
        );
        kept = kept.saturating_sub(scaled(pruned_tokens(t, &plan.prune, middle, counter)));
        jobs.push(job);
    }
    // One summary at full size: is it enough?
    let estimate_full = kept
        .saturating_add(jobs.len() as u64 * cfg.summary_max_tokens)
        .saturating_add(
            jobs.iter()
                .filter_map(|j| j.ledger.render(cfg.ledger_max_tokens))
                .map(|s| counter.count_text(&s))
                .sum::<u64>(),
        );
    // The progress marker sits right after the turn's user message: it summarizes the turn's
    // older part up to its first pinned message.
    let rewritable = r.rewritable_turn_middle();
    let turn_middle = crate::pins::free_ranges(t.messages(), rewritable.clone())
        .into_iter()
        .next()
        .filter(|f| f.start == rewritable.start)
        // Under strict alternation the summary is merged into the message after it, which
        // must not belong to a pinned group.
        .filter(|f| !cfg.strict_alternation || f.end == rewritable.end)
        // Nothing new to fold (only an existing progress summary, or a blank platform echo
        // between the ask and the reply that works from it): no summary call, no second
        // summary.
        .filter(|f| f.clone().any(|i| has_substance(&t.messages()[i])));
    if let Some(turn_middle) = turn_middle
        && (jobs.is_empty() || estimate_full > low_water)
    {
        kept = kept.saturating_sub(scaled(pruned_tokens(
            t,
            &plan.prune,
            turn_middle.clone(),
            counter,
        )));
        jobs.push(job(
            t,
            &plan.prune,
            turn_middle,
            MarkerKind::Progress,
            focus,
            cfg,
        ));
    }
    let landing = (threshold_tokens as f64 * SUMMARY_LANDING_RATIO) as u64;
    // The continuation the pass may add is kept beside its summaries.
    if need.lacks_user_text {
        kept = kept.saturating_add(scaled(counter.count_message(&marker::continuation())));
    }
    size_jobs(&mut jobs, kept, landing, scale, cfg, counter);
    plan.step = if !jobs.is_empty() {
        BatchStep::Summarize(jobs)
    } else if has_prune {
        // No span of the middle can take a summary marker (no role fits between its
        // neighbours): what the prune reclaims is all this pass can do.
        BatchStep::PruneOnly {
            reached_low_water: plan.tokens_after_prune <= low_water,
        }
    } else {
        // Nothing to fold: when the floor alone is over the threshold, that is why (a head
        // and a tail of system messages over it, one small folded middle), and the caller is
        // told so rather than that nothing needed doing.
        BatchStep::Nothing(if protected > threshold_tokens {
            NothingReason::IrreducibleFloor
        } else {
            NothingReason::NothingToCompact
        })
    };
    plan
}

#[cfg(test)]
mod tests;
