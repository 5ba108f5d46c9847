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
use crate::edit::{Edit, Splice};
use crate::error::Error;
use crate::ledger::Ledger;
use crate::marker;
use crate::material::{self, MaterialConfig};
use crate::message::{Content, MarkerKind, Message, Part, Role};
use crate::prune::{self, PruneConfig, PrunePlan};
use crate::regions::{self, RegionConfig, Regions};
use crate::tokens::TokenCounter;
use crate::transcript::{Transcript, groups};

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
    /// [`defaults::PRUNE_MINIMUM_TOKENS`].
    pub prune_minimum_tokens: u64,
    /// Minimum runway as a fraction of the threshold. Default [`defaults::PRUNE_RUNWAY_RATIO`].
    pub prune_runway_ratio: f64,
    /// Bound of a summary (facade key `compression.summary_max_tokens`), used to estimate
    /// whether one summary is enough. Default [`defaults::SUMMARY_MAX_TOKENS`].
    #[serde(alias = "summary_max_tokens")]
    pub summary_max_tokens: u64,
    /// Join neighbours instead of leaving same-role pairs the mainstream APIs accept.
    pub strict_alternation: bool,
    /// Bound of the [ledger](crate::ledger) section a summary carries, in tokens (0: no
    /// ledger). Default [`defaults::LEDGER_MAX_TOKENS`].
    pub ledger_max_tokens: u64,
    /// Image parts of the rewritable regions older than the transcript's newest this-many
    /// become a short placeholder naming their type and size ([`crate::images`]); the
    /// originals are archived with the rows the pass replaces. Default
    /// [`defaults::KEEP_RECENT_IMAGES`].
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
    /// `threshold - max(prune_minimum_tokens, prune_runway_ratio * threshold)`.
    pub(crate) fn low_water_mark(&self, threshold_tokens: u64) -> u64 {
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
    let r = regions::partition_calibrated(t, threshold_tokens, &cfg.regions, req.compacted);
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
        let cited = prune::cited_outputs(t.messages(), &free);
        let (uncited, cited) = prune::plan_prune_split(t, &free, &cfg.prune, counter, &cited);
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
    // The last reply the user saw stays in place (spec section 1) unless that keeps the pass
    // over the low-water mark: when the span before it cannot get there and the whole middle
    // gets closer, the reply is summarized with the rest, as the window comes first (a reply
    // far back, followed by a long tool loop, would otherwise leave that loop unsummarizable).
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
            if estimate(&whole) < estimate(&span) {
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
        // Nothing new to fold (only an existing progress summary): no summary call.
        .filter(|f| {
            f.clone()
                .any(|i| marker::classify(&t.messages()[i]).is_none())
        });
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
        BatchStep::Nothing(NothingReason::NothingToCompact)
    };
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

fn assemble_from(
    t: &Transcript,
    plan: &BatchPlan,
    prune: Vec<Splice>,
    summaries: &[String],
    cfg: &BatchConfig,
) -> Result<Edit, Error> {
    if t.stamp() != plan.planned_stamp {
        return Err(Error::StaleTranscript);
    }
    let jobs: &[SummaryJob] = match &plan.step {
        BatchStep::Summarize(jobs) => jobs,
        _ => &[],
    };
    if jobs.len() != summaries.len() {
        return Err(Error::SummaryCount {
            expected: jobs.len(),
            got: summaries.len(),
        });
    }
    let msgs = t.messages();
    let continuation = continuation_plan(msgs, jobs);
    let mut splices: Vec<Splice> = Vec::new();
    let mut prune_iter = prune.into_iter().peekable();
    for (k, (job, body)) in jobs.iter().zip(summaries).enumerate() {
        // Prune splices before this job's range pass through; those inside are subsumed.
        while let Some(s) = prune_iter.next_if(|s| s.range.start < job.range.start) {
            splices.push(s);
        }
        while prune_iter
            .peek()
            .is_some_and(|s| s.range.start < job.range.end)
        {
            prune_iter.next();
        }
        let layout = continuation.filter(|(j, _)| *j == k).map(|(_, l)| l);
        splices.extend(summary_splices(msgs, job, body, cfg, layout));
    }
    splices.extend(prune_iter);
    let edit = Edit { splices };
    edit.validate(msgs.len())?;
    if breaks_pairs(msgs, &edit) {
        return Err(Error::WouldBreakToolPairs);
    }
    Ok(edit)
}

/// The role a marker placed between `prev` and `next` should take so that no new same-role
/// pair appears, or `None` when no role fits.
pub(crate) fn marker_role(prev: Option<&Message>, next: Option<&Message>) -> Option<Role> {
    let candidates = match prev.map(Message::role) {
        // Right after the system prompt, providers want a user message.
        None | Some(Role::System) | Some(Role::Developer) => vec![Role::User],
        Some(_) => vec![Role::User, Role::Assistant],
    };
    candidates.into_iter().find(|r| {
        prev.is_none_or(|p| p.role() != r) && next.is_none_or(|n| n.role() != r && !n.is_tool())
    })
}

/// The role of a turn-progress marker between `prev` and `next`: assistant (it sits right
/// after the turn's user message, and an assistant message may follow it, law 3); under strict
/// alternation the role that alternates with both neighbours, or `None` (the summary is then
/// merged into `next`). When the turn's user message lies in the head, the turn's older part
/// starts after the head and `prev` may be a tool result: a user-role marker then fits where
/// merging into `next` (a tool call in the tail) could not.
pub(crate) fn progress_role(
    prev: Option<&Message>,
    next: Option<&Message>,
    strict: bool,
) -> Option<Role> {
    if strict {
        marker_role(prev, next)
    } else {
        Some(Role::Assistant)
    }
}

/// Where the [continuation](marker::continuation) goes beside a summary: after it (the
/// natural place) or before it. Either way the summary is assistant-role and the continuation
/// user-role, so roles alternate across the pair.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum Pair {
    /// `[summary (assistant), continuation (user)]`.
    SummaryFirst,
    /// `[continuation (user), summary (assistant)]`.
    ContinuationFirst,
}

/// The layout of a summary with the continuation between `prev` and `next` that makes no new
/// same-role pair, puts a user message first after the system prompt, and puts nothing but a
/// tool call's own results after it; `None` when neither layout fits.
pub(crate) fn pair_layout(prev: Option<&Message>, next: Option<&Message>) -> Option<Pair> {
    let next_fits = |role: Role| next.is_none_or(|n| *n.role() != role && !n.is_tool());
    let after_system = prev.is_none_or(|p| p.role().is_system_like());
    if !after_system && prev.is_some_and(|p| !p.is_assistant()) && next_fits(Role::User) {
        return Some(Pair::SummaryFirst);
    }
    if prev.is_none_or(|p| !p.is_user()) && next_fits(Role::Assistant) {
        return Some(Pair::ContinuationFirst);
    }
    None
}

/// Whether a pass over a transcript must add the continuation next to its summary: the
/// transcript holds no user text of the user's own ([`marker::is_user_text`]), and the
/// continuations it already holds are all inside what the pass replaces (one that survives
/// elsewhere is kept, never stacked).
#[derive(Clone, Debug, Default)]
pub(crate) struct ContinuationNeed {
    pub(crate) lacks_user_text: bool,
    existing: Vec<usize>,
}

impl ContinuationNeed {
    pub(crate) fn of(msgs: &[Message]) -> ContinuationNeed {
        let lacks_user_text = !msgs.iter().any(marker::is_user_text);
        let existing = if lacks_user_text {
            (0..msgs.len())
                .filter(|&i| marker::is_continuation(&msgs[i]))
                .collect()
        } else {
            Vec::new()
        };
        ContinuationNeed {
            lacks_user_text,
            existing,
        }
    }

    /// Whether replacing `ranges` (and nothing else holding user text) needs a continuation.
    pub(crate) fn after_replacing(&self, ranges: &[Range<usize>]) -> bool {
        self.lacks_user_text
            && self
                .existing
                .iter()
                .all(|i| ranges.iter().any(|r| r.contains(i)))
    }
}

/// Which job of a batch pass takes the continuation, and how, when the pass needs one: the
/// first whose neighbours fit a [`Pair`] (a turn-progress summary after its user message takes
/// it after itself, which alternates even under strict alternation). `None` when the pass
/// needs none or no job can take it.
pub(crate) fn continuation_plan(msgs: &[Message], jobs: &[SummaryJob]) -> Option<(usize, Pair)> {
    let ranges: Vec<Range<usize>> = jobs.iter().map(|j| j.range.clone()).collect();
    if jobs.is_empty() || !ContinuationNeed::of(msgs).after_replacing(&ranges) {
        return None;
    }
    jobs.iter().enumerate().find_map(|(k, job)| {
        let prev = job.range.start.checked_sub(1).map(|i| &msgs[i]);
        let next = msgs.get(job.range.end);
        pair_layout(prev, next).map(|l| (k, l))
    })
}

fn batch_range(
    t: &Transcript,
    r: &Regions,
    keep_reply: bool,
    need: &ContinuationNeed,
) -> Option<Range<usize>> {
    // Pinned messages split the middle; the summary takes the largest span of one piece.
    let mut best: Option<Range<usize>> = None;
    let middle = if keep_reply {
        r.rewritable_middle()
    } else {
        r.middle.clone()
    };
    for piece in crate::pins::free_ranges(t.messages(), middle) {
        if let Some(found) = batch_range_in(t, piece, need)
            && best.as_ref().is_none_or(|b| found.len() > b.len())
        {
            best = Some(found);
        }
    }
    best
}

fn batch_range_in(
    t: &Transcript,
    middle: Range<usize>,
    need: &ContinuationNeed,
) -> Option<Range<usize>> {
    // Find the largest span of the middle, cut on unit boundaries, around which a marker role
    // fits without creating a same-role pair: shrink the end first (moving whole units into the
    // kept tail side), then, if nothing fits, keep leading units verbatim as well. A span that
    // reaches more of the middle's older summaries wins over a longer one, so an older summary
    // at an edge is folded into the new one rather than left beside it. The span ends before
    // the last reply the user saw ([`Regions::rewritable_middle`]). When the pass must add the
    // continuation ([`ContinuationNeed`]), the span's neighbours must take the pair.
    let msgs = t.messages();
    let fits = |span: &Range<usize>| {
        let prev = span.start.checked_sub(1).map(|i| &msgs[i]);
        let next = msgs.get(span.end);
        if need.after_replacing(std::slice::from_ref(span)) {
            pair_layout(prev, next).is_some()
        } else {
            marker_role(prev, next).is_some()
        }
    };
    let markers: Vec<usize> = middle
        .clone()
        .filter(|&i| marker::classify(&msgs[i]).is_some())
        .collect();
    let covered = |x: &Range<usize>| markers.iter().filter(|&&i| x.contains(&i)).count();
    let unit_starts: Vec<usize> = groups::units(msgs, middle.clone())
        .into_iter()
        .map(|u| u.start)
        .collect();
    let mut best: Option<(usize, Range<usize>)> = None;
    for &start in &unit_starts {
        let mut end = middle.end;
        while end > start {
            if fits(&(start..end)) {
                let span = start..end;
                let key = covered(&span);
                if best
                    .as_ref()
                    .is_none_or(|(k, b)| (key, span.len()) > (*k, b.len()))
                {
                    best = Some((key, span));
                }
                break;
            }
            end = if end > 0 && msgs[end - 1].is_tool() {
                groups::group_start(msgs, end - 1)
            } else {
                end - 1
            };
        }
        let left = markers.iter().filter(|&&i| i >= start).count();
        if best
            .as_ref()
            .is_some_and(|(k, b)| b.len() >= middle.end - start && *k >= left)
        {
            break;
        }
    }
    // Nothing new to fold: a span of summaries alone would cost a summarizer call for a
    // summary of a summary.
    best.map(|(_, b)| b)
        .filter(|b| b.clone().any(|i| marker::classify(&msgs[i]).is_none()))
}

fn job(
    t: &Transcript,
    prune: &PrunePlan,
    range: Range<usize>,
    kind: MarkerKind,
    focus: Option<String>,
    cfg: &BatchConfig,
) -> SummaryJob {
    // The span as pruning leaves it (pruning is one-for-one, so indices match), by reference.
    let mut span: Vec<&Message> = t.messages()[range.clone()].iter().collect();
    for s in &prune.edit.splices {
        if s.range.start >= range.start && s.range.end <= range.end && s.replacement.len() == 1 {
            span[s.range.start - range.start] = &s.replacement[0];
        }
    }
    // The ledger follows the span in order: a summary inside it contributes the ledger it
    // carries, other messages their own tool calls (as written, before pruning cut them).
    let mut ledger = Ledger::default();
    let mut previous: Vec<String> = Vec::new();
    for (m, original) in span.iter().zip(&t.messages()[range.clone()]) {
        if marker::classify(m).is_some() {
            if let Some(body) = marker::parse_body(m) {
                let (text, carried) = Ledger::split(&body);
                ledger.extend(&carried);
                if !text.trim().is_empty() {
                    previous.push(text.to_owned());
                }
            }
            // A message Hermes Agent merged its summary into keeps its own text before the
            // summary: carried into the update, not lost with the marker.
            if let Some((prior, _)) = marker::split_merged(&m.text())
                && !prior.is_empty()
            {
                previous.push(format!(
                    "Earlier message kept with that summary ({}): {}",
                    m.role(),
                    crate::redact::redact(prior)
                ));
            }
        } else if cfg.ledger_max_tokens > 0 {
            ledger.observe(original);
        }
    }
    // The previous summaries and the material share one bound (spec section 9).
    let previous = (!previous.is_empty()).then(|| previous.join("\n\n"));
    let bounds = material::share(
        previous.as_deref().map_or(0, |p| p.chars().count()),
        &cfg.material,
    );
    // Only what the bounded material can show is cloned: the first message and the newest
    // ones up to a few times the material bound, so the work follows the bound, not the span.
    let plain: Vec<&Message> = span
        .into_iter()
        .filter(|m| marker::classify(m).is_none())
        .collect();
    let mut chosen: Vec<Message> = Vec::new();
    if let Some((first, rest)) = plain.split_first() {
        let limit = cfg.material.max_total_chars.saturating_mul(2);
        let mut used = first.content_chars();
        let mut newest: Vec<Message> = Vec::new();
        for m in rest.iter().rev() {
            if used > limit {
                break;
            }
            used += m.content_chars().min(cfg.material.max_message_chars);
            newest.push((*m).clone());
        }
        chosen.push((*first).clone());
        chosen.extend(newest.into_iter().rev());
    }
    let material = material::serialize(&chosen, t.messages(), &bounds);
    let previous_summary = previous.map(|p| material::bound_previous(&p, &material, &cfg.material));
    SummaryJob {
        kind,
        range,
        material,
        previous_summary,
        focus,
        // Redacted like the material: deterministic summarizers read these.
        messages: chosen.iter().map(crate::redact::redact_message).collect(),
        ledger,
        budget_tokens: cfg.summary_max_tokens,
        ledger_max_tokens: cfg.ledger_max_tokens,
    }
}

fn summary_splices(
    msgs: &[Message],
    job: &SummaryJob,
    body: &str,
    cfg: &BatchConfig,
    continuation: Option<Pair>,
) -> Vec<Splice> {
    let body = job
        .ledger
        .attach(&crate::redact::redact(body), job.ledger_max_tokens);
    let prev = job.range.start.checked_sub(1).map(|i| &msgs[i]);
    let next = msgs.get(job.range.end);
    let role = match (continuation, job.kind) {
        // Beside the continuation (user-role), the summary is assistant-role.
        (Some(_), _) => Some(Role::Assistant),
        (None, MarkerKind::Progress) => progress_role(prev, next, cfg.strict_alternation),
        (None, _) => marker_role(prev, next),
    };
    match (role, next) {
        (Some(role), _) => {
            let summary = marker::render(job.kind, role, &body);
            let replacement = match continuation {
                None => vec![summary],
                Some(Pair::SummaryFirst) => vec![summary, marker::continuation()],
                Some(Pair::ContinuationFirst) => vec![marker::continuation(), summary],
            };
            vec![Splice {
                range: job.range.clone(),
                replacement,
            }]
        }
        (None, Some(next)) => {
            // Merge the summary into the following message, which keeps every other field.
            let mut merged = next.clone();
            let text = marker::render_text(job.kind, &body);
            let content = match next.content() {
                Some(Content::Parts(parts)) => {
                    let mut p = vec![Part::text_part(text)];
                    p.extend(parts.iter().cloned());
                    Content::Parts(p)
                }
                _ if next.has_visible_text() => Content::Text(format!("{text}\n\n{}", next.text())),
                _ => Content::Text(text),
            };
            merged.set_content(Some(content));
            merged.meta_mut().marker = Some(job.kind);
            vec![Splice {
                range: job.range.start..job.range.end + 1,
                replacement: vec![merged],
            }]
        }
        (None, None) => vec![Splice {
            range: job.range.clone(),
            replacement: vec![marker::render(job.kind, Role::Assistant, &body)],
        }],
    }
}

/// Adds to the prune plan the replacement of old image payloads in `ranges` (all but the
/// transcript's newest [`BatchConfig::keep_recent_images`]; the last visible reply is left
/// verbatim), merged with a prune rewrite of the same message.
fn strip_old_images(
    t: &Transcript,
    r: &Regions,
    ranges: &[Range<usize>],
    cfg: &BatchConfig,
    counter: &dyn TokenCounter,
    prune: &mut PrunePlan,
) {
    let skip: Vec<usize> = r.reply.into_iter().collect();
    let msgs = t.messages();
    let strips = crate::images::strip_old_images(msgs, ranges, cfg.keep_recent_images, &skip);
    if strips.is_empty() {
        return;
    }
    for (i, stripped) in strips {
        let existing = prune
            .edit
            .splices
            .iter_mut()
            .find(|s| s.range == (i..i + 1) && s.replacement.len() == 1);
        match existing {
            Some(s) => {
                // Pruning rewrote another field (the call's arguments): carry the stripped
                // content into its copy. A rewritten content holds no image any more.
                let old = &mut s.replacement[0];
                if old.content() == msgs[i].content() {
                    let before = counter.count_message(old);
                    *old = old.with_content(stripped.content().cloned());
                    prune.reclaimed_tokens += before.saturating_sub(counter.count_message(old));
                }
            }
            None => {
                prune.reclaimed_tokens += t
                    .tokens_of(i)
                    .saturating_sub(counter.count_message(&stripped));
                prune.edit.splices.push(Splice {
                    range: i..i + 1,
                    replacement: vec![stripped],
                });
            }
        }
    }
    prune.edit.splices.sort_by_key(|s| s.range.start);
}

/// How far past [`BatchConfig::summary_max_tokens`] the budget of a job that folds older
/// summaries may grow: by the size of the summaries it folds, to at most this many times the
/// configured size.
pub const FOLD_BUDGET_FACTOR: u64 = 2;

/// The smallest summary budget a job is given, however little room the window leaves.
const MIN_SUMMARY_BUDGET_TOKENS: u64 = 128;

/// Where a summarizing pass aims to land, as a fraction of the threshold: the runway the
/// default prune acceptance asks for (15%), independent of how a caller tunes that
/// acceptance.
const SUMMARY_LANDING_RATIO: f64 = 0.85;

/// Sizes each job's summary budget and ledger bound so the pass lands at or below `landing`
/// ([`SUMMARY_LANDING_RATIO`] of the threshold) when that is possible: the room the kept
/// messages leave under it (minus
/// each marker's fixed text) is shared by the jobs, a third at most for the ledger, and
/// neither exceeds its configured size ([`BatchConfig::summary_max_tokens`],
/// [`BatchConfig::ledger_max_tokens`]) nor the budget falls below
/// [`MIN_SUMMARY_BUDGET_TOKENS`]. Large windows therefore get the configured sizes; a tiny
/// window gets summaries that fit it.
fn size_jobs(
    jobs: &mut [SummaryJob],
    kept: u64,
    landing: u64,
    scale: f64,
    cfg: &BatchConfig,
    counter: &dyn TokenCounter,
) {
    if jobs.is_empty() {
        return;
    }
    let overhead = |kind: MarkerKind| {
        counter.count_message(&marker::render(kind, Role::User, marker::RECALL_NOTE))
    };
    let overheads: u64 = jobs.iter().map(|j| overhead(j.kind)).sum();
    let room = (landing.saturating_sub(kept) as f64 / scale.max(f64::MIN_POSITIVE)) as u64;
    let share = room.saturating_sub(overheads) / jobs.len() as u64;
    for j in jobs.iter_mut() {
        j.ledger_max_tokens = cfg.ledger_max_tokens.min(share / 3);
        let ledger = j
            .ledger
            .render(j.ledger_max_tokens)
            .map_or(0, |s| counter.count_text(&s));
        // A job that folds older summaries may keep what they held beside what is new, up to
        // FOLD_BUDGET_FACTOR times the configured size: folding (one summary remains) then
        // does not squeeze the session's memory into the budget of a first summary.
        let folded = j
            .previous_summary
            .as_deref()
            .map_or(0, |s| counter.count_text(s));
        let cap = cfg
            .summary_max_tokens
            .saturating_add(folded)
            .min(cfg.summary_max_tokens.saturating_mul(FOLD_BUDGET_FACTOR));
        j.budget_tokens = share.saturating_sub(ledger).clamp(
            MIN_SUMMARY_BUDGET_TOKENS,
            cap.max(MIN_SUMMARY_BUDGET_TOKENS),
        );
    }
}

fn pruned_tokens(
    t: &Transcript,
    prune: &PrunePlan,
    range: Range<usize>,
    counter: &dyn TokenCounter,
) -> u64 {
    let mut total = t.tokens_in(range.clone());
    for s in &prune.edit.splices {
        if s.range.start >= range.start && s.range.end <= range.end {
            let old = t.tokens_in(s.range.clone());
            let new: u64 = s.replacement.iter().map(|m| counter.count_message(m)).sum();
            total = total + new - old;
        }
    }
    total
}

/// Demotes the protected messages' largest tool outputs and tool-call arguments (largest
/// first) while `tokens`, the size they are part of, is over `limit`; returns that size after
/// the demotions. Candidates are the tail and the protected opening (never a system message,
/// a summary or a pinned group): a tool output becomes its informative one-liner, an
/// assistant's tool call keeps its id and name with its long string arguments shortened as
/// pruning shortens them. The demotions join the plan's prune edit, so the store archives each
/// original.
#[allow(clippy::too_many_arguments)]
fn demote_tail(
    t: &Transcript,
    r: &Regions,
    tokens: u64,
    limit: u64,
    scale: f64,
    cfg: &BatchConfig,
    counter: &dyn TokenCounter,
    plan: &mut BatchPlan,
) -> u64 {
    let msgs = t.messages();
    let calls = prune::CallIndex::build(msgs);
    let free = crate::pins::free_ranges(msgs, r.head.clone())
        .into_iter()
        .chain(crate::pins::free_ranges(msgs, r.tail.clone()));
    let mut candidates: Vec<(usize, Message)> = free
        .flatten()
        .filter(|&i| {
            let m = &msgs[i];
            !m.role().is_system_like()
                && marker::classify(m).is_none()
                && t.tokens_of(i) > cfg.prune.tool_output_min_tokens
                && !plan.prune.edit.splices.iter().any(|s| s.range.contains(&i))
        })
        .filter_map(|i| {
            let m = &msgs[i];
            if m.is_tool() {
                if calls
                    .for_result(m)
                    .is_some_and(|c| prune::is_protected(&cfg.prune, c.name))
                {
                    return None;
                }
                let mut new = m.clone();
                let text = m.text();
                let line = prune::describe_tool_output(calls.for_result(m), &text);
                new.set_text(prune::with_names(line, &text, &cfg.prune));
                Some((i, new))
            } else if m.is_assistant() && !m.tool_calls().is_empty() {
                prune::shorten_arguments(m, &cfg.prune).map(|new| (i, new))
            } else {
                None
            }
        })
        .collect();
    // Largest first; among equals, older first so the newest output is demoted last.
    candidates.sort_by(|(a, _), (b, _)| t.tokens_of(*b).cmp(&t.tokens_of(*a)).then(a.cmp(b)));
    let mut tokens = tokens;
    let mut saved_est = 0u64;
    let mut chosen = Vec::new();
    for (i, new) in candidates {
        if tokens <= limit {
            break;
        }
        let saved = t.tokens_of(i).saturating_sub(counter.count_message(&new));
        saved_est += saved;
        tokens = tokens.saturating_sub((saved as f64 * scale).round() as u64);
        chosen.push(Splice {
            range: i..i + 1,
            replacement: vec![new],
        });
    }
    plan.demoted_tail_outputs += chosen.len();
    plan.prune.reclaimed_tokens += saved_est;
    plan.prune.edit.splices.extend(chosen);
    plan.prune.edit.splices.sort_by_key(|s| s.range.start);
    tokens
}

/// Characters of a caller's focus topic kept (head and tail, see [`material::cut_middle`]).
const MAX_FOCUS_CHARS: usize = 1_000;

fn derive_focus(t: &Transcript) -> Option<String> {
    let u = t.last_real_user()?;
    let text = t.messages()[u].text();
    let text = text.trim();
    (!text.is_empty()).then(|| material::cut_middle(text, 300))
}

/// Whether applying `edit` would separate a tool call from its result. Only splice
/// boundaries can do that: a replaced range must not start on a result whose call lies before
/// it, nor end before a result whose call lies inside it, and its replacement must keep the
/// same tool-call ids as the messages it replaces (prune copies) or carry none (markers).
fn breaks_pairs(msgs: &[Message], edit: &Edit) -> bool {
    edit.splices.iter().any(|s| {
        if s.range.is_empty() {
            return false;
        }
        let ids = |m: &[Message]| -> (Vec<String>, Vec<String>) {
            let calls = m
                .iter()
                .flat_map(|x| x.tool_calls().iter().map(|c| c.call_id().to_owned()))
                .collect();
            let results = m
                .iter()
                .filter_map(|x| x.tool_call_id().map(str::to_owned))
                .collect();
            (calls, results)
        };
        let (old_calls, old_results) = ids(&msgs[s.range.clone()]);
        let (new_calls, new_results) = ids(&s.replacement);
        let same = new_calls == old_calls && new_results == old_results;
        let none = new_calls.is_empty() && new_results.is_empty();
        if same {
            return false;
        }
        if !none {
            return true;
        }
        groups::splits_group(msgs, s.range.start) || groups::splits_group(msgs, s.range.end)
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::ToolCall;
    use crate::tokens::Estimator;

    fn session(turns: usize, tool_chars: usize) -> Vec<Message> {
        let mut msgs = vec![Message::system("You are an agent.")];
        for i in 0..turns {
            let id = format!("c{i}");
            msgs.push(Message::user(format!("request {i}")));
            msgs.push(Message::assistant_tool_calls(
                "",
                vec![ToolCall::function(&id, "bash", r#"{"command":"make"}"#)],
            ));
            msgs.push(Message::tool_result(&id, "o".repeat(tool_chars)));
            msgs.push(Message::assistant(format!("finished {i}")));
        }
        msgs
    }

    /// `t` after `plan`, each summary job answered with a one-line stub summary.
    fn applied(t: &Transcript, plan: &BatchPlan, cfg: &BatchConfig) -> Transcript {
        let summaries: Vec<String> = match &plan.step {
            BatchStep::Summarize(jobs) => {
                jobs.iter().map(|_| "- earlier work".to_owned()).collect()
            }
            BatchStep::PruneOnly { .. } => Vec::new(),
            other => panic!("{other:?}"),
        };
        let mut after = t.clone();
        assemble(t, plan, &summaries, cfg)
            .unwrap()
            .apply_to(&mut after, &Estimator::default())
            .unwrap();
        after
    }

    fn run(msgs: Vec<Message>, threshold: u64, cfg: &BatchConfig) -> (Transcript, BatchPlan) {
        let e = Estimator::default();
        let t = Transcript::new(msgs, &e);
        let plan = plan_batch(&t, threshold, cfg, &BatchRequest::default(), &e);
        (t, plan)
    }

    /// Forty turns; the outputs of turns 3 and 5 hold an identifier the reply of turn 30
    /// cites (`fn parse_args_v2`), the rest hold none.
    fn cited_session() -> Vec<Message> {
        let mut msgs = session(40, 2_000);
        for turn in [3usize, 5] {
            let i = 1 + turn * 4 + 2;
            let id = format!("c{turn}");
            msgs[i] = Message::tool_result(&id, format!("fn parse_args_v2 {}", "o".repeat(2_000)));
        }
        msgs[1 + 30 * 4 + 3] = Message::assistant("parse_args_v2 is the culprit");
        msgs
    }

    fn pruned_indices(plan: &BatchPlan) -> Vec<usize> {
        plan.prune
            .edit
            .splices
            .iter()
            .map(|s| s.range.start)
            .collect()
    }

    #[test]
    fn reference_aware_prune_only_keeps_the_outputs_later_messages_cite() {
        let e = Estimator::default();
        let t = Transcript::new(cited_session(), &e);
        let cited = [1 + 3 * 4 + 2, 1 + 5 * 4 + 2];
        let r = regions::partition(&t, 20_000, &BatchConfig::default().regions, false);
        assert_eq!(
            prune::cited_outputs(t.messages(), std::slice::from_ref(&r.middle)),
            cited
        );
        // The split plan's halves give back the whole plan.
        let pcfg = &BatchConfig::default().prune;
        let middle = std::slice::from_ref(&r.middle);
        let (uncited, held) = prune::plan_prune_split(&t, middle, pcfg, &e, &cited);
        assert!(held.edit.splices.len() == 2 && held.reclaimed_tokens > 0);
        let mut whole = uncited.merged(held);
        assert!(!whole.names_pending.is_empty());
        whole.add_names(&t, pcfg, &e, |_| true);
        assert!(whole.names_pending.is_empty());
        assert_eq!(whole, prune::plan_prune(&t, middle, pcfg, &e));
        let req = BatchRequest {
            prune_only: true,
            force: true,
            ..BatchRequest::default()
        };
        let plan = plan_batch(&t, 20_000, &BatchConfig::default(), &req, &e);
        let pruned = pruned_indices(&plan);
        assert!(pruned.len() > 10, "{pruned:?}");
        assert!(cited.iter().all(|c| !pruned.contains(c)), "{pruned:?}");
        // Off: every old output goes, the cited ones too.
        let mut cfg = BatchConfig::default();
        cfg.prune.keep_cited = false;
        let plan = plan_batch(&t, 20_000, &cfg, &req, &e);
        assert!(cited.iter().all(|c| pruned_indices(&plan).contains(c)));
    }

    /// The names index is written only where the rewrite stays: a prune-only plan's lines
    /// carry it, the lines of a span the pass summarizes do not (they are replaced by the
    /// summary), and nothing is left pending.
    #[test]
    fn names_indexes_are_written_only_for_rewrites_that_stay() {
        let e = Estimator::default();
        let has_index = |m: &Message| m.text().contains(crate::ledger::PRUNED_NAMES);
        let mut msgs = session(40, 0);
        for (i, m) in msgs.iter_mut().filter(|m| m.is_tool()).enumerate() {
            m.set_text(format!("src/lib_{i}.rs: fn parse_args_v2()\n").repeat(60));
        }
        let t = Transcript::new(msgs.clone(), &e);
        let prune_only = BatchRequest {
            prune_only: true,
            force: true,
            ..BatchRequest::default()
        };
        let plan = plan_batch(&t, 20_000, &BatchConfig::default(), &prune_only, &e);
        assert!(plan.prune.names_pending.is_empty());
        let lines: Vec<&Message> = plan
            .prune
            .edit
            .splices
            .iter()
            .map(|s| &s.replacement[0])
            .collect();
        assert!(
            !lines.is_empty() && lines.iter().all(|m| has_index(m)),
            "{lines:?}"
        );

        let (_, summary) = run(msgs, 3_000, &BatchConfig::default());
        let BatchStep::Summarize(jobs) = &summary.step else {
            panic!("{:?}", summary.step)
        };
        assert!(summary.prune.names_pending.is_empty());
        for s in &summary.prune.edit.splices {
            let inside = jobs.iter().any(|j| j.range.contains(&s.range.start));
            if s.replacement[0].is_tool()
                && s.replacement[0].text().starts_with(prune::PRUNED_PREFIX)
            {
                assert_eq!(has_index(&s.replacement[0]), !inside, "{:?}", s.range);
            }
        }
    }

    #[test]
    fn a_threshold_pass_prunes_cited_outputs_only_when_the_uncited_fall_short() {
        let e = Estimator::default();
        let t = Transcript::new(cited_session(), &e);
        let total = t.estimated_total();
        let cited = [1 + 3 * 4 + 2, 1 + 5 * 4 + 2];
        // A threshold just under the total: pruning the uncited outputs reaches the low-water
        // mark, so the cited ones stay.
        let (_, plan) = run(cited_session(), total - 100, &BatchConfig::default());
        assert!(matches!(
            plan.step,
            BatchStep::PruneOnly {
                reached_low_water: true
            }
        ));
        assert!(cited.iter().all(|c| !pruned_indices(&plan).contains(c)));
        // A threshold the uncited alone cannot reach: everything old is pruned (and summarized).
        let (_, plan) = run(cited_session(), total / 8, &BatchConfig::default());
        assert!(cited.iter().all(|c| pruned_indices(&plan).contains(c)));
    }

    #[test]
    fn a_job_that_folds_an_older_summary_may_keep_what_it_held() {
        let e = Estimator::default();
        let mut msgs = session(200, 400);
        let old = marker::render(
            MarkerKind::Batch,
            Role::User,
            &"earlier facts ".repeat(1_500),
        );
        msgs.insert(1, old);
        let cfg = BatchConfig::default();
        let t = Transcript::new(msgs, &e);
        let req = BatchRequest {
            compacted: true,
            ..BatchRequest::default()
        };
        let plan = plan_batch(&t, 10_000, &cfg, &req, &e);
        let BatchStep::Summarize(jobs) = &plan.step else {
            panic!("{:?}", plan.step);
        };
        assert!(jobs[0].previous_summary.is_some());
        assert!(
            jobs[0].budget_tokens > cfg.summary_max_tokens,
            "{}",
            jobs[0].budget_tokens
        );
        assert!(jobs[0].budget_tokens <= cfg.summary_max_tokens * FOLD_BUDGET_FACTOR);
        // A first summary gets the configured size.
        let (_, plan) = run(session(200, 400), 10_000, &cfg);
        let BatchStep::Summarize(jobs) = &plan.step else {
            panic!("{:?}", plan.step);
        };
        assert!(jobs[0].previous_summary.is_none());
        assert_eq!(jobs[0].budget_tokens, cfg.summary_max_tokens);
    }

    /// Issue 20, item 4: a giant tool output in the protected opening (before any compaction,
    /// with no middle yet) and a giant tool-call argument in the tail are demoted in place too;
    /// the system prompt and the latest request are never touched, and the laws hold.
    #[test]
    fn giant_protected_opening_outputs_and_tail_arguments_are_demoted() {
        let e = Estimator::default();
        let big = |tag: &str| {
            (0..12_000)
                .map(|i| format!("{tag} {i}: value_{i}\n"))
                .collect::<String>()
        };
        let msgs = vec![
            Message::system("You are an agent."),
            Message::user("request 0: show the log"),
            Message::assistant_tool_calls(
                "",
                vec![ToolCall::function("c0", "bash", r#"{"command":"make"}"#)],
            ),
            Message::tool_result("c0", big("log")),
            Message::assistant("the log is above"),
            Message::user("request 1: write the table"),
            Message::assistant_tool_calls(
                "writing",
                vec![ToolCall::function(
                    "w",
                    "write_file",
                    serde_json::json!({"path": "t.rs", "content": big("row")}).to_string(),
                )],
            ),
            Message::tool_result("w", "ok"),
        ];
        let threshold = 13_600;
        let cfg = BatchConfig::default();
        let (t, plan) = run(msgs.clone(), threshold, &cfg);
        assert_eq!(plan.demoted_tail_outputs, 2, "{:?}", plan.step);
        let after = applied(&t, &plan, &cfg);
        assert!(
            after.current_tokens() <= threshold,
            "{}",
            after.current_tokens()
        );
        let out = after.messages();
        assert_eq!(out[0], msgs[0]);
        assert!(out.iter().any(|m| m.text() == "request 1: write the table"));
        let demoted = out.iter().find(|m| m.tool_call_id() == Some("c0")).unwrap();
        assert!(demoted.text().starts_with(prune::PRUNED_PREFIX));
        let call = out.iter().find(|m| m.text() == "writing").unwrap();
        assert_eq!(call.tool_calls()[0].call_id(), "w");
        assert!(call.tool_calls()[0].function.arguments.len() < 4_000);
        let pass = crate::laws::Pass::of_batch(&plan, &cfg, true);
        let violations = crate::laws::check(&msgs, out, &pass, &e);
        assert!(violations.is_empty(), "{violations:?}");
    }

    #[test]
    fn a_giant_tool_output_in_the_tail_is_demoted_beside_a_middle_and_the_laws_hold() {
        let e = Estimator::default();
        let mut msgs = session(40, 2_000);
        // The newest tool output alone is larger than the threshold.
        msgs.push(Message::user("stage it"));
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                "big",
                "bash",
                r#"{"command":"git add ."}"#,
            )],
        ));
        msgs.push(Message::tool_result(
            "big",
            (0..20_000)
                .map(|i| format!("add 'node_modules/p{i}/index.js'\n"))
                .collect::<String>(),
        ));
        let threshold = 16_000;
        let cfg = BatchConfig::default();
        let (t, plan) = run(msgs.clone(), threshold, &cfg);
        assert!(!plan.regions.middle.is_empty());
        assert_eq!(plan.demoted_tail_outputs, 1);
        let after = applied(&t, &plan, &cfg);
        assert!(
            after.current_tokens() <= threshold,
            "{}",
            after.current_tokens()
        );
        let last = after.messages().last().unwrap();
        assert_eq!(last.tool_call_id(), Some("big"));
        assert!(last.text().starts_with(prune::PRUNED_PREFIX));
        let pass = crate::laws::Pass::of_batch(&plan, &cfg, true);
        let violations = crate::laws::check(&msgs, after.messages(), &pass, &e);
        assert!(violations.is_empty(), "{violations:?}");
        // Below the threshold for the protected part, nothing in the tail is demoted.
        let (_, small) = run(session(40, 2_000), threshold, &cfg);
        assert_eq!(small.demoted_tail_outputs, 0);
    }

    /// Issue 20 item 4: a protected tail under the threshold but too large to sit beside a
    /// summary (at 16K a 4.5K summary beside a 13K tail overflowed the window) is demoted until
    /// a summary fits too, and the pass lands at or under the threshold.
    #[test]
    fn a_tail_that_leaves_no_room_for_the_summary_is_demoted() {
        let e = Estimator::default();
        let threshold = 13_600;
        let cfg = BatchConfig::default();
        let mut msgs = session(40, 2_000);
        // Three tool rounds in the protected tail, together under the threshold but over
        // threshold - summary_max_tokens.
        msgs.push(Message::user("read the three files"));
        for (i, chars) in [(0, 26_000), (1, 8_000), (2, 8_000)] {
            let id = format!("r{i}");
            msgs.push(Message::assistant_tool_calls(
                "",
                vec![ToolCall::function(
                    &id,
                    "bash",
                    r#"{"command":"cat big.rs"}"#,
                )],
            ));
            msgs.push(Message::tool_result(
                &id,
                format!("fn body_{i}() {{}}\n").repeat(chars / 14),
            ));
        }
        let (t, plan) = run(msgs.clone(), threshold, &cfg);
        let protected: u64 = plan
            .regions
            .protected()
            .iter()
            .map(|p| t.tokens_in(p.clone()))
            .sum();
        assert!(protected < threshold, "{protected}");
        assert!(
            protected > threshold - cfg.summary_max_tokens,
            "{protected}"
        );
        assert!(plan.demoted_tail_outputs >= 1, "{:?}", plan.step);
        let after = applied(&t, &plan, &cfg);
        assert!(
            after.current_tokens() <= threshold,
            "{}",
            after.current_tokens()
        );
        // The demoted output keeps the names of what it removed.
        let demoted = after
            .messages()
            .iter()
            .find(|m| m.tool_call_id() == Some("r0"))
            .unwrap();
        assert!(demoted.text().contains("body_0"), "{}", demoted.text());
        let pass = crate::laws::Pass::of_batch(&plan, &cfg, true);
        let violations = crate::laws::check(&msgs, after.messages(), &pass, &e);
        assert!(violations.is_empty(), "{violations:?}");
    }

    #[test]
    fn the_ledger_carries_older_summaries_entries_and_can_be_turned_off() {
        let mut msgs = session(400, 300);
        // A summary of an earlier pass inside the middle, with a ledger of its own.
        let mut older = Ledger::default();
        older.observe(&Message::assistant_tool_calls(
            "",
            vec![ToolCall::function("x", "edit", r#"{"path":"src/old.rs"}"#)],
        ));
        let body = older.attach("earlier work", 500);
        msgs.insert(9, marker::render(MarkerKind::Batch, Role::Assistant, &body));
        let cfg = BatchConfig::default();
        let (t, plan) = run(msgs.clone(), 20_000, &cfg);
        let BatchStep::Summarize(jobs) = &plan.step else {
            panic!("expected a summary, got {:?}", plan.step);
        };
        assert_eq!(jobs[0].previous_summary.as_deref(), Some("earlier work"));
        assert_eq!(jobs[0].ledger.files(), ["src/old.rs"]);
        assert_eq!(jobs[0].ledger.commands(), ["make"]);
        let edit = assemble(&t, &plan, &["new".to_owned()], &cfg).unwrap();
        let after = edit.apply(t.messages()).unwrap();
        let m = after
            .iter()
            .find(|m| marker::classify(m).is_some())
            .unwrap();
        let (_, carried) = Ledger::split(&marker::parse_body(m).unwrap());
        assert_eq!(carried.files(), ["src/old.rs"]);

        let off = BatchConfig {
            ledger_max_tokens: 0,
            ..BatchConfig::default()
        };
        let (t, plan) = run(msgs, 20_000, &off);
        let edit = assemble(&t, &plan, &["new".to_owned()], &off).unwrap();
        let after = edit.apply(t.messages()).unwrap();
        let m = after
            .iter()
            .find(|m| marker::classify(m).is_some())
            .unwrap();
        assert_eq!(marker::parse_body(m).as_deref(), Some("new"));
    }

    proptest::proptest! {
        #![proptest_config(proptest::prelude::ProptestConfig { cases: 256, .. Default::default() })]

        /// A plan never asks for a summary without a span to summarize, and never reports a
        /// prune-only pass without a prune: the caller would otherwise commit (and label) a
        /// pass that did something else.
        #[test]
        fn every_step_has_the_work_it_names(
            msgs in crate::strategies::transcript(),
            threshold in 2_000u64..40_000,
        ) {
            let e = Estimator::default();
            let t = Transcript::new(msgs, &e);
            let req = BatchRequest { force: true, ..BatchRequest::default() };
            let plan = plan_batch(&t, threshold, &BatchConfig::default(), &req, &e);
            match &plan.step {
                BatchStep::Summarize(jobs) => proptest::prop_assert!(!jobs.is_empty()),
                BatchStep::PruneOnly { .. } => proptest::prop_assert!(!plan.prune.edit.is_empty()),
                BatchStep::Nothing(_) => {}
            }
        }
    }

    #[test]
    fn below_threshold_does_nothing() {
        let (_, plan) = run(session(3, 100), 1_000_000, &BatchConfig::default());
        assert_eq!(plan.step, BatchStep::Nothing(NothingReason::BelowThreshold));
    }

    #[test]
    fn prune_only_accepted_at_low_water() {
        // Big tool outputs dominate: pruning alone buys plenty of runway.
        let cfg = BatchConfig {
            prune_minimum_tokens: 100,
            ..BatchConfig::default()
        };
        let (t, plan) = run(session(30, 8_000), 20_000, &cfg);
        assert!(plan.tokens_before >= 20_000);
        assert_eq!(
            plan.step,
            BatchStep::PruneOnly {
                reached_low_water: true
            }
        );
        assert!(plan.tokens_after_prune <= plan.low_water_tokens);
        let edit = assemble(&t, &plan, &[], &cfg).unwrap();
        let after = edit.apply(t.messages()).unwrap();
        assert_eq!(after.len(), t.len());
    }

    #[test]
    fn falls_through_to_summary_when_pruning_is_not_enough() {
        // Small tool outputs: pruning reclaims little, so the plan summarizes.
        let cfg = BatchConfig::default();
        let (t, plan) = run(session(400, 300), 20_000, &cfg);
        let BatchStep::Summarize(jobs) = &plan.step else {
            panic!("expected a summary, got {:?}", plan.step);
        };
        assert_eq!(jobs.len(), 1);
        assert_eq!(jobs[0].kind, MarkerKind::Batch);
        assert!(jobs[0].material.contains("[user]\nrequest 1"));
        let edit = assemble(&t, &plan, &["the summary".to_owned()], &cfg).unwrap();
        let after = edit.apply(t.messages()).unwrap();
        let markers: Vec<&Message> = after
            .iter()
            .filter(|m| marker::classify(m).is_some())
            .collect();
        assert_eq!(markers.len(), 1);
        // The summarizer's text, then the ledger of the span's tool calls.
        let body = marker::parse_body(markers[0]).unwrap();
        let (text, ledger) = Ledger::split(&body);
        assert_eq!(text, "the summary");
        assert_eq!(ledger.commands(), ["make"]);
        assert_eq!(jobs[0].ledger, ledger);
        assert!(after.len() < t.len());
        // No new same-role neighbours around the marker.
        let k = after
            .iter()
            .position(|m| marker::classify(m).is_some())
            .unwrap();
        assert_ne!(after[k - 1].role(), after[k].role());
        assert_ne!(after[k + 1].role(), after[k].role());
        // A second pass feeds the first summary into the update and still leaves one marker.
        let e = Estimator::default();
        let t2 = Transcript::new(after, &e);
        let req = BatchRequest {
            force: true,
            compacted: true,
            ..Default::default()
        };
        let plan2 = plan_batch(&t2, 20_000, &cfg, &req, &e);
        if let BatchStep::Summarize(jobs) = &plan2.step {
            assert_eq!(jobs[0].previous_summary.as_deref(), Some("the summary"));
            let edit2 = assemble(&t2, &plan2, &vec!["v2".to_owned(); jobs.len()], &cfg).unwrap();
            let after2 = edit2.apply(t2.messages()).unwrap();
            assert_eq!(
                after2
                    .iter()
                    .filter(|m| marker::classify(m).is_some())
                    .count(),
                1
            );
        }
    }

    #[test]
    fn stale_transcripts_are_refused() {
        let cfg = BatchConfig::default();
        let (t, plan) = run(session(400, 300), 20_000, &cfg);
        let mut other = t.clone();
        other.push(Message::user("new"), &Estimator::default());
        assert_eq!(
            assemble(&other, &plan, &["s".into()], &cfg),
            Err(Error::StaleTranscript)
        );
        assert!(matches!(
            assemble(&t, &plan, &[], &cfg),
            Err(Error::SummaryCount { .. })
        ));
    }

    #[test]
    fn a_same_size_rewrite_is_refused() {
        let cfg = BatchConfig::default();
        let e = Estimator::default();
        let (t, plan) = run(session(400, 300), 20_000, &cfg);
        let jobs = match &plan.step {
            BatchStep::Summarize(jobs) => jobs.len(),
            other => panic!("expected a summary step, got {other:?}"),
        };
        let summaries = vec!["s".to_owned(); jobs];
        // One message rewritten to text of the same length: same count, same token total.
        let mut edited = t.clone();
        let i = 3 + 4 * 10;
        assert_eq!(edited.messages()[i].text(), "o".repeat(300));
        edited.replace(i, Message::tool_result("c10", "x".repeat(300)), &e);
        assert_eq!(
            (edited.len(), edited.estimated_total()),
            (t.len(), t.estimated_total())
        );
        assert_ne!(edited.messages()[i], t.messages()[i]);
        assert_eq!(
            assemble(&edited, &plan, &summaries, &cfg),
            Err(Error::StaleTranscript)
        );
        // A metadata edit through meta_mut (it may change a marker kind) is a change too.
        let mut marked = t.clone();
        marked.meta_mut(1).marker = None;
        assert_eq!(
            assemble(&marked, &plan, &summaries, &cfg),
            Err(Error::StaleTranscript)
        );
        // An unchanged clone, and a row id stamp, are the same transcript.
        let mut stamped = t.clone();
        stamped.set_row_id(1, 42);
        assert!(assemble(&stamped, &plan, &summaries, &cfg).is_ok());
        assert!(assemble(&t, &plan, &summaries, &cfg).is_ok());
    }

    #[test]
    fn marker_roles() {
        let sys = Message::system("s");
        let u = Message::user("u");
        let a = Message::assistant("a");
        assert_eq!(marker_role(Some(&sys), Some(&a)), Some(Role::User));
        assert_eq!(marker_role(Some(&sys), Some(&u)), None);
        assert_eq!(marker_role(Some(&u), Some(&u)), Some(Role::Assistant));
        assert_eq!(marker_role(Some(&a), Some(&u)), None);
        assert_eq!(marker_role(Some(&a), Some(&a)), Some(Role::User));
    }
}
