//! Replays every shared fixture request by request, with the hooks wired as an agent would:
//! before each assistant message the model is called with the compacted view of what precedes
//! it. No prompt may exceed the window, and every pass keeps the laws.

use compaction_core::laws::{self, PassKind};
use hermes_compaction::Outcome;
use hermes_compaction::Usage;

use crate::common::{config, extractive, fixtures, rt};

fn replay(context_length: u64) {
    let Some(files) = fixtures() else { return };
    let rt = rt();
    let mut total_passes = 0;
    for (name, msgs) in files {
        let mut c = extractive(config(context_length));
        let mut t = c.transcript(Vec::new());
        let mut peak = 0;
        for m in msgs {
            if m.is_assistant() {
                let before = t.messages().to_vec();
                let (ticket, report) = rt.block_on(c.before_request(&mut t));
                if let Some(r) = &report {
                    let kind = match r.outcome {
                        Outcome::Summarized => PassKind::Batch,
                        Outcome::Pruned => PassKind::Prune,
                        _ => PassKind::Unchanged,
                    };
                    if kind != PassKind::Unchanged {
                        total_passes += 1;
                    }
                    let pass = r.law;
                    assert_eq!(pass.kind, kind);
                    let v = laws::check(&before, t.messages(), &pass, c.status().counter);
                    assert!(v.is_empty(), "{name}: pass {r:?} broke laws: {v:?}");
                }
                let prompt = t.current_tokens();
                peak = peak.max(prompt);
                assert!(
                    prompt <= context_length,
                    "{name}: prompt of {prompt} tokens exceeds the {context_length} window before message {} (report {report:?})",
                    t.len()
                );
                // The model "answers" with the estimated prompt size as its usage.
                rt.block_on(c.after_response(&mut t, ticket, Usage::prompt(prompt).record_only()));
            }
            t.push(m, c.status().counter);
        }
        eprintln!("{name}: peak {peak} of {context_length}");
    }
    eprintln!("compaction passes at {context_length}: {total_passes}");
}

#[test]
fn no_prompt_exceeds_a_64k_window() {
    replay(64_000);
}

#[test]
fn no_prompt_exceeds_a_128k_window() {
    replay(128_000);
}
