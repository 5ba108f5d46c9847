//! The one-for-one rewrites a batch plan adds to its prune edit besides pruning itself: old
//! image payloads of the rewritable regions, and the demotion of the protected messages'
//! largest tool outputs and arguments, the last resort when they alone exceed the threshold.

use std::ops::Range;

use super::{BatchConfig, BatchPlan};
use crate::edit::Splice;
use crate::marker;
use crate::message::Message;
use crate::prune::{self, PrunePlan};
use crate::regions::Regions;
use crate::tokens::TokenCounter;
use crate::transcript::Transcript;

/// Adds to the prune plan the replacement of old image payloads in `ranges` (all but those of
/// the newest user message with an image and after it, [`images_to_keep`]; the last visible
/// reply is left verbatim), merged with a prune rewrite of the same message.
pub(super) fn strip_old_images(
    t: &Transcript,
    r: &Regions,
    ranges: &[Range<usize>],
    cfg: &BatchConfig,
    counter: &dyn TokenCounter,
    prune: &mut PrunePlan,
) {
    let skip: Vec<usize> = r.reply.into_iter().collect();
    let msgs = t.messages();
    let strips = crate::images::strip_old_images(msgs, ranges, images_to_keep(msgs, cfg), &skip);
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

/// How many of the transcript's newest image parts keep their payload: those of the newest
/// user message with an image and of what follows it (as Hermes Agent keeps images only in
/// the newest user message; issue 33, item 9), or, when no user message holds an image,
/// [`BatchConfig::keep_recent_images`].
fn images_to_keep(msgs: &[Message], cfg: &BatchConfig) -> usize {
    use crate::message::{Content, Role};
    let count = |m: &Message| m.content().map_or(0, Content::image_count);
    match msgs
        .iter()
        .rposition(|m| *m.role() == Role::User && count(m) > 0)
    {
        Some(u) => msgs[u..].iter().map(count).sum(),
        None => cfg.keep_recent_images,
    }
}

/// Demotes the protected messages' largest tool outputs and tool-call arguments (largest
/// first) while `tokens`, the size they are part of, is over `limit`; returns that size after
/// the demotions. Candidates are the tail and the protected opening (never a system message,
/// a summary or a pinned group): a tool output becomes its informative one-liner, an
/// assistant's tool call keeps its id and name with its long string arguments shortened as
/// pruning shortens them (a freeform tool's raw input, which is not JSON, cut the same way). The demotions join the plan's prune edit, so the store archives each
/// original.
#[allow(clippy::too_many_arguments)]
pub(super) fn demote_tail(
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

#[cfg(test)]
mod tests {
    use super::super::tests::{applied, run, session};
    use crate::batch::BatchConfig;
    use crate::message::{Message, ToolCall};
    use crate::prune;
    use crate::tokens::Estimator;

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
        let pass = crate::laws::Pass::of_batch(&plan, &cfg, crate::laws::PassKind::Batch);
        let violations = crate::laws::check(&msgs, out, &pass, &e);
        assert!(violations.is_empty(), "{violations:?}");
    }

    /// A freeform tool's raw input (not JSON: a patch) in the tail, too large to sit beside a
    /// summary, is demoted like a JSON argument: before, nothing could shorten it, and a 16K
    /// window replay of a Codex session stayed up to 13K tokens over the window.
    #[test]
    fn a_freeform_calls_raw_input_in_the_tail_is_demoted_and_the_laws_hold() {
        let e = Estimator::default();
        let mut msgs = session(40, 2_000);
        let patch = format!(
            "*** Begin Patch\n*** Add File: web/app.tsx\n{}*** End Patch",
            (0..6_000)
                .map(|i| format!("+export const row_{i} = {i};\n"))
                .collect::<String>()
        );
        msgs.push(Message::user("add the page"));
        msgs.push(Message::assistant_tool_calls(
            "adding it",
            vec![ToolCall::function("p", "apply_patch", patch.clone())],
        ));
        msgs.push(Message::tool_result("p", "Done"));
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
        let call = after
            .messages()
            .iter()
            .find(|m| m.text() == "adding it")
            .unwrap();
        let args = &call.tool_calls()[0].function.arguments;
        assert_eq!(call.tool_calls()[0].call_id(), "p");
        assert!(args.starts_with("*** Begin Patch\n*** Add File: web/app.tsx"));
        assert!(args.contains("chars elided by compaction]"), "{args}");
        assert!(args.len() < patch.len() / 10);
        let pass = crate::laws::Pass::of_batch(&plan, &cfg, crate::laws::PassKind::Batch);
        let violations = crate::laws::check(&msgs, after.messages(), &pass, &e);
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
        let pass = crate::laws::Pass::of_batch(&plan, &cfg, crate::laws::PassKind::Batch);
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
        // The scenario is sized for a 2,000-token summary budget (the default before issue 31).
        // The names indexes on (off by default): the demoted output keeps its names.
        let mut cfg = BatchConfig {
            summary_max_tokens: 2_000,
            ..BatchConfig::default()
        };
        cfg.prune.names_max_chars = 400;
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
        let pass = crate::laws::Pass::of_batch(&plan, &cfg, crate::laws::PassKind::Batch);
        let violations = crate::laws::check(&msgs, after.messages(), &pass, &e);
        assert!(violations.is_empty(), "{violations:?}");
    }
}
