//! Preview: the fates a plan announces are the ones the assembled pass applies, whatever the
//! summaries say.

use compaction_core::Transcript;
use compaction_core::batch::{self, BatchConfig, BatchRequest, BatchStep};
use compaction_core::micro::{self, MicroConfig, MicroHook, MicroPlanner, MicroRequest, MicroStep};
use compaction_core::preview::{self, Fate, PreviewKind};
use compaction_core::{Edit, Estimator, Message, TokenCounter, strategies};
use proptest::prelude::*;

/// The fate of each message of `before` as `edit` treats it, given the summaries' ranges.
fn fates_of(before: &[Message], edit: &Edit, summaries: &[std::ops::Range<usize>]) -> Vec<Fate> {
    let mut out = vec![Fate::Kept; before.len()];
    for s in &edit.splices {
        let marker = s.replacement.iter().any(|m| m.marker_kind().is_some());
        if marker {
            let k = summaries
                .iter()
                .position(|r| r.start == s.range.start)
                .expect("a summary splice starts where its job does");
            let job = &summaries[k];
            for i in job.clone() {
                out[i] = Fate::Summarized { summary: k };
            }
            if s.range.end == job.end + 1 {
                out[job.end] = Fate::Merged { summary: k };
            } else {
                assert_eq!(s.range, *job);
            }
        } else {
            assert_eq!(s.range.len(), s.replacement.len(), "prune is one for one");
            for (i, new) in s.range.clone().zip(&s.replacement) {
                out[i] = Fate::Pruned {
                    one_liner: before[i]
                        .is_tool()
                        .then(|| compaction_redact::redact(&new.text()).into_owned()),
                };
            }
        }
    }
    out
}

/// The preview's fates with the distinctions an edit cannot see folded away: a pinned message
/// is kept, a demoted output is pruned.
fn folded(p: &preview::Preview) -> Vec<Fate> {
    p.messages
        .iter()
        .map(|m| match &m.fate {
            Fate::Pinned => Fate::Kept,
            Fate::Demoted { one_liner } => Fate::Pruned {
                one_liner: Some(one_liner.clone()),
            },
            f => f.clone(),
        })
        .collect()
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    #[test]
    fn batch_preview_is_what_the_pass_applies(
        msgs in strategies::transcript_with_markers(),
        b in strategies::budget(),
        picks in prop::collection::vec(any::<prop::sample::Index>(), 0..3),
        prune_only in any::<bool>(),
        strict in any::<bool>(),
        body in ".{0,400}",
    ) {
        let e = Estimator::default();
        let mut t = Transcript::new(msgs, &e);
        let n = t.len();
        for p in &picks {
            t.pin(p.index(n.max(1)).min(n.saturating_sub(1)), n > 0);
        }
        let cfg = BatchConfig { regions: b.regions.clone(), strict_alternation: strict, ..BatchConfig::default() };
        let req = BatchRequest { force: true, prune_only, compacted: b.compacted, ..BatchRequest::default() };
        let plan = batch::plan_batch(&t, b.threshold_tokens, &cfg, &req, &e);
        let p = preview::of_batch(&t, &plan, &cfg, &e);
        prop_assert_eq!(p.messages.len(), t.len());
        prop_assert_eq!(p.tokens_before, t.current_tokens());
        let jobs = match &plan.step {
            BatchStep::Summarize(jobs) => jobs.len(),
            _ => 0,
        };
        prop_assert_eq!(p.summaries.len(), jobs);
        // Pinned fates only for pinned groups.
        let spans = crate::common::pinned_spans(t.messages());
        for m in &p.messages {
            if m.fate == Fate::Pinned {
                prop_assert!(spans.iter().any(|s| s.contains(&m.index)), "{}", m.index);
            }
        }
        let summaries: Vec<String> = (0..jobs).map(|k| format!("{body} {k}")).collect();
        let Ok(edit) = batch::assemble(&t, &plan, &summaries, &cfg) else {
            return Ok(());
        };
        let ranges: Vec<_> = p.summaries.iter().map(|s| s.range.clone()).collect();
        prop_assert_eq!(folded(&p), fates_of(t.messages(), &edit, &ranges));
        if p.kind == PreviewKind::Nothing {
            prop_assert!(edit.is_empty());
        }
        edit.apply_to(&mut t, &e).unwrap();
        if jobs == 0 {
            // Without summaries the estimate is exact.
            prop_assert_eq!(p.tokens_after, t.current_tokens());
        }
    }

    #[test]
    fn micro_preview_is_what_the_pass_applies(
        msgs in strategies::transcript_with_markers(),
        b in strategies::budget(),
        progress in any::<bool>(),
        body in ".{0,200}",
    ) {
        let e = Estimator::default();
        let t = Transcript::new(msgs, &e);
        let cfg = MicroConfig { regions: b.regions.clone(), ..MicroConfig::default() };
        let mut planner = MicroPlanner::default();
        let plan = if progress {
            planner.plan(&MicroRequest { transcript: &t, hook: MicroHook::ToolRound, threshold_tokens: b.threshold_tokens, compacted: b.compacted, config: &cfg, counter: &e })
        } else {
            planner.plan(&MicroRequest { transcript: &t, hook: MicroHook::Turn, threshold_tokens: b.threshold_tokens, compacted: b.compacted, config: &cfg, counter: &e })
        };
        let p = preview::of_micro(&t, &plan, &e);
        prop_assert_eq!(p.messages.len(), t.len());
        let Ok(out) = micro::assemble_micro(&t, &plan, &body, &cfg, &e) else {
            prop_assert!(!matches!(plan.step, MicroStep::Absorb(_) | MicroStep::Defrag(_)));
            prop_assert_eq!(p.kind, PreviewKind::Nothing);
            prop_assert!(p.messages.iter().all(|m| m.fate == Fate::Kept));
            return Ok(());
        };
        let mut expected = vec![Fate::Kept; t.len()];
        if let Some(edit) = out.edit() {
            for s in &edit.splices {
                for i in s.range.clone() {
                    expected[i] = Fate::Summarized { summary: 0 };
                }
            }
        }
        let got: Vec<Fate> = p.messages.iter().map(|m| m.fate.clone()).collect();
        prop_assert_eq!(got, expected);
        if let (MicroStep::Absorb(_), Some(edit)) = (&plan.step, out.edit()) {
            // The estimate assumes the new rolling summary is as long as the current one.
            let mut after = t.clone();
            edit.clone().apply_to(&mut after, &e).unwrap();
            let marker_delta = edit
                .splices
                .iter()
                .flat_map(|s| &s.replacement)
                .map(|m| e.count_message(m))
                .sum::<u64>();
            let estimated_marker = p.summaries[0].estimated_tokens;
            prop_assert_eq!(
                p.tokens_after + marker_delta,
                after.current_tokens() + estimated_marker
            );
        }
    }
}
