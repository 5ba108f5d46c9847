//! No secret reaches a summarizer (issue 14, items 1-3): every secret shape the redactor
//! knows, planted at every position that matters, never shows an 8-character run of its body
//! in what a batch or micro pass sends to the summarizer (material, raw messages, focus) nor
//! in what the pass writes (the summary marker, here from a summarizer that echoes all it was
//! sent).
//!
//! Positions: right after each JSON escape (`\n`, `\t`, `\r`, `\b`, `\f`, `\"`, `\\`, `\/`,
//! `\u00a0`); straddling every cut the material builder makes (head and tail of a long content
//! at `max_message_chars`, of a long argument string at `max_argument_chars`, and of the focus);
//! inside JSON string values with escaped quotes; in tool-call arguments, tool outputs and
//! user pastes.

use compaction_core::batch::{self, BatchConfig, BatchRequest, BatchStep};
use compaction_core::material::MaterialConfig;
use compaction_core::micro::{self, MicroConfig, MicroHook, MicroPlanner, MicroRequest, MicroStep};
use compaction_core::{Estimator, Message, ToolCall, Transcript};
use proptest::prelude::*;

/// A secret as planted, and the parts of it that must never be seen (any 8-character run).
#[derive(Clone, Debug)]
struct Secret {
    text: String,
    body: Vec<String>,
}

fn secret() -> impl Strategy<Value = Secret> {
    let tok = |n: usize| proptest::string::string_regex(&format!("[A-Za-z0-9]{{{n}}}")).unwrap();
    let up = |n: usize| proptest::string::string_regex(&format!("[A-Z0-9]{{{n}}}")).unwrap();
    let one = |text: String, body: String| Secret {
        text,
        body: vec![body],
    };
    prop_oneof![
        tok(40).prop_map(move |t| one(format!("sk-proj-{t}"), t)),
        tok(40).prop_map(move |t| one(format!("sk-ant-api03-{t}"), t)),
        tok(35).prop_map(move |t| one(format!("AIza{t}"), t)),
        up(16).prop_map(move |t| one(format!("AKIA{t}"), t)),
        up(16).prop_map(move |t| one(format!("ASIA{t}"), t)),
        tok(36).prop_map(move |t| one(format!("ghp_{t}"), t)),
        tok(36).prop_map(move |t| one(format!("gho_{t}"), t)),
        tok(40).prop_map(move |t| one(format!("github_pat_{t}"), t)),
        tok(30).prop_map(move |t| one(format!("xoxb-{t}"), t)),
        tok(30).prop_map(move |t| one(format!("Authorization: Bearer {t}"), t)),
        tok(30).prop_map(move |t| one(format!("curl -H 'Authorization: token {t}'"), t)),
        tok(30).prop_map(move |t| one(format!("use Bearer {t} here"), t)),
        tok(24).prop_map(move |t| one(format!("Authorization: Basic {t}=="), t)),
        (tok(20), tok(40), tok(30)).prop_map(|(a, b, c)| Secret {
            text: format!("eyJ{a}.eyJ{b}.{c}"),
            body: vec![b, c],
        }),
        (tok(60), tok(60)).prop_map(|(a, b)| Secret {
            text: format!(
                "-----BEGIN RSA PRIVATE KEY-----\n{a}\n{b}\n-----END RSA PRIVATE KEY-----"
            ),
            body: vec![a, b],
        }),
        tok(20).prop_map(move |t| one(format!("postgres://admin:{t}@db:5432/app"), t)),
        // Assignment values with the characters that used to end them early.
        (tok(10), tok(12)).prop_map(|(a, b)| Secret {
            text: format!("password={a}&{b}"),
            body: vec![format!("{a}&{b}")],
        }),
        (tok(10), tok(12)).prop_map(|(a, b)| Secret {
            text: format!("db_password={a};{b}"),
            body: vec![format!("{a};{b}")],
        }),
        (tok(10), tok(12)).prop_map(|(a, b)| Secret {
            text: format!("secret: {a}&{b}"),
            body: vec![format!("{a}&{b}")],
        }),
        (tok(10), tok(16)).prop_map(|(a, b)| Secret {
            text: format!(r#"{{"api_key": "{a}\"{b}"}}"#),
            body: vec![a, b],
        }),
        (tok(10), tok(16)).prop_map(|(a, b)| Secret {
            text: format!("GITHUB_TOKEN='{a} {b}'"),
            body: vec![a, b],
        }),
        tok(20).prop_map(move |t| one(format!("aws_secret_access_key = {t}"), t)),
    ]
}

/// Where a secret goes.
#[derive(Clone, Copy, Debug)]
enum Place {
    /// Pasted into a user message.
    Paste,
    /// In a tool output.
    Output,
    /// In the JSON text of a tool call's arguments.
    Arguments,
}

/// The JSON escapes a key may follow inside a JSON string (as they appear in arguments).
const ESCAPES: [&str; 10] = [
    r"\n", r"\t", r"\r", r"\b", r"\f", r#"\""#, r"\\", r"\/", r"\u00a0", " ",
];

/// Characters of each cut point a secret is planted around: the head and tail cuts of a
/// content at `max_message_chars`, and of an argument string at `max_argument_chars`.
fn cut_points(len: usize, max: usize) -> [usize; 2] {
    let head = max * 2 / 3;
    let tail = max - head;
    [head, len - tail]
}

const FILL: &str = "lorem ipsum dolor sit amet, consectetur adipiscing elit. ";

/// `len` characters of filler with `secret` starting at character `at` (clamped).
fn plant(len: usize, at: usize, secret: &str) -> String {
    let n = secret.chars().count();
    let at = at.min(len.saturating_sub(n));
    let mut s: String = FILL.chars().cycle().take(at).collect();
    // A space on both sides, so the secret stands as a word of the filler.
    s.pop();
    s.push(' ');
    s.push_str(secret);
    s.push(' ');
    s.extend(FILL.chars().cycle().take(len.saturating_sub(at + n + 1)));
    s
}

/// The JSON text of a tool call's arguments holding `secret` right after `escape`, at
/// character `at` of a long `content` string.
fn arguments(len: usize, at: usize, escape: &str, secret: &str) -> String {
    let encoded = serde_json::to_string(secret).unwrap();
    let encoded = &encoded[1..encoded.len() - 1];
    let before: String = FILL.chars().cycle().take(at).collect();
    let after: String = FILL.chars().cycle().take(len.saturating_sub(at)).collect();
    format!(
        r#"{{"file_path": "/app/.env.keys", "content": "{before}{escape}{encoded}{escape}{after}"}}"#
    )
}

fn transcript(middle: Vec<Message>) -> Vec<Message> {
    let mut msgs = vec![
        Message::system("You are a coding agent."),
        Message::user("CANARY-FIRST set up the project"),
        Message::assistant("Setting it up."),
        Message::user("then add a config file"),
        Message::assistant("Added."),
    ];
    msgs.extend(middle);
    for i in 0..4 {
        msgs.push(Message::user(format!("next step {i}")));
        // Long enough that the protected tail ends before the planted exchange.
        let filler: String = FILL.chars().cycle().take(2_000).collect();
        msgs.push(Message::assistant(format!("done {i}: {filler}")));
    }
    msgs
}

/// The middle exchange with the secret in `place`.
fn planted(place: Place, secret: &Secret, at: usize, escape: &str) -> Vec<Message> {
    let cfg = MaterialConfig::default();
    let long = cfg.max_message_chars + 3_000;
    let (paste, args, output) = match place {
        Place::Paste => (
            plant(long, at, &secret.text),
            "{}".to_owned(),
            "ok".to_owned(),
        ),
        Place::Output => (
            "run it".to_owned(),
            "{}".to_owned(),
            plant(long, at, &secret.text),
        ),
        Place::Arguments => (
            "write the keys file".to_owned(),
            arguments(cfg.max_argument_chars + 200, at, escape, &secret.text),
            "written".to_owned(),
        ),
    };
    vec![
        Message::user(format!("CANARY-PASTE {paste}")),
        Message::assistant_tool_calls(
            "Working on it.",
            vec![ToolCall::function("call_1", "Write", args)],
        ),
        Message::tool_result("call_1", format!("CANARY-OUTPUT {output}")),
        Message::assistant("Done with that."),
    ]
}

/// Panics when any 8-character run of the secret's body is in `text`.
fn assert_clean(what: &str, text: &str, secret: &Secret) {
    for body in &secret.body {
        let chars: Vec<char> = body.chars().collect();
        for w in chars.windows(8) {
            let run: String = w.iter().collect();
            assert!(
                !text.contains(&run),
                "{what}: {run:?} of {:?} reached it",
                secret.text
            );
        }
    }
}

/// Everything the summarizer is sent for one job, as one string.
fn sent(material: &str, messages: &[Message], focus: Option<&str>, prev: Option<&str>) -> String {
    let mut s = format!(
        "{material}\n{}\n{}\n",
        focus.unwrap_or(""),
        prev.unwrap_or("")
    );
    for m in messages {
        s.push_str(&m.text());
        s.push('\n');
        for c in m.tool_calls() {
            s.push_str(&c.function.arguments);
            s.push('\n');
        }
    }
    s
}

fn check_batch(msgs: Vec<Message>, secret: &Secret, canary: &str) {
    check_batch_with(msgs.clone(), secret, None);
    // Without pruning, the planted message itself reaches the material.
    check_batch_with(msgs, secret, Some(canary));
}

fn check_batch_with(msgs: Vec<Message>, secret: &Secret, canary: Option<&str>) {
    let e = Estimator::default();
    let t = Transcript::new(msgs, &e);
    let mut cfg = BatchConfig::default();
    if canary.is_some() {
        cfg.prune.tool_output_min_tokens = u64::MAX;
        cfg.prune.argument_max_chars = usize::MAX;
    }
    let req = BatchRequest {
        force: true,
        ..BatchRequest::default()
    };
    let plan = batch::plan_batch(&t, 2_000, &cfg, &req, &e);
    let BatchStep::Summarize(jobs) = &plan.step else {
        panic!("expected a summary, got {:?}", plan.step);
    };
    let all: String = jobs
        .iter()
        .map(|j| {
            sent(
                &j.material,
                &j.messages,
                j.focus.as_deref(),
                j.previous_summary.as_deref(),
            )
        })
        .collect();
    if let Some(canary) = canary {
        assert!(
            all.contains(canary),
            "the planted message was not summarized"
        );
    }
    assert_clean("batch request", &all, secret);
    // A summarizer that echoes everything it was sent; the pass writes its marker.
    let echoes: Vec<String> = jobs
        .iter()
        .map(|j| sent(&j.material, &j.messages, j.focus.as_deref(), None))
        .collect();
    let edit = batch::assemble(&t, &plan, &echoes, &cfg).unwrap();
    for s in &edit.splices {
        for m in &s.replacement {
            assert_clean("batch marker", &m.to_json(), secret);
        }
    }
}

fn check_micro(msgs: Vec<Message>, secret: &Secret, canary: &str) {
    let e = Estimator::default();
    // The planted exchange is the first of the middle: drop the second opening turn and
    // protect only the first.
    let mut msgs = msgs;
    msgs.drain(3..5);
    let t = Transcript::new(msgs, &e);
    let mut cfg = MicroConfig::default();
    cfg.regions.protect_first_n = 2;
    // The session is short: fold its exchanges at any age.
    cfg.min_age_answers = 0;
    let plan = MicroPlanner::default().plan(&MicroRequest {
        transcript: &t,
        hook: MicroHook::Turn,
        threshold_tokens: 2_000,
        compacted: false,
        config: &cfg,
        counter: &e,
    });
    let MicroStep::Absorb(job) = &plan.step else {
        panic!("expected an absorption, got {:?}", plan.step);
    };
    let all = sent(
        &job.material,
        &job.messages,
        None,
        job.previous_summary.as_deref(),
    );
    assert!(all.contains(canary), "the planted message was not absorbed");
    assert_clean("micro request", &all, secret);
    let outcome = micro::assemble_micro(&t, &plan, &all, &cfg, &e).unwrap();
    assert_clean("micro marker", &format!("{outcome:?}"), secret);
    if let Some(edit) = outcome.edit() {
        for s in &edit.splices {
            for m in &s.replacement {
                assert_clean("micro marker", &m.to_json(), secret);
            }
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// A secret straddling a cut of a long paste or tool output (head or tail), or anywhere.
    #[test]
    fn secrets_in_long_contents_never_reach_the_summarizer(
        s in secret(),
        place in prop::sample::select(vec![Place::Paste, Place::Output]),
        which in 0usize..3,
        delta in 0usize..80,
    ) {
        let cfg = MaterialConfig::default();
        let long = cfg.max_message_chars + 3_000;
        let at = match which {
            2 => delta * 97,
            w => (cut_points(long, cfg.max_message_chars)[w] + 13).saturating_sub(delta),
        };
        let canary = match place { Place::Paste => "CANARY-PASTE", _ => "CANARY-OUTPUT" };
        let middle = planted(place, &s, at, " ");
        check_batch(transcript(middle.clone()), &s, canary);
        check_micro(transcript(middle), &s, canary);
    }

    /// A secret in a tool call's arguments, right after every JSON escape, straddling the
    /// argument cuts.
    #[test]
    fn secrets_in_arguments_after_escapes_never_reach_the_summarizer(
        s in secret(),
        escape in prop::sample::select(ESCAPES.to_vec()),
        which in 0usize..3,
        delta in 0usize..80,
    ) {
        let cfg = MaterialConfig::default();
        let len = cfg.max_argument_chars + 200;
        // The content string starts ~60 characters into the arguments.
        let at = match which {
            2 => delta,
            w => (cut_points(len + 60, cfg.max_argument_chars)[w] + 13).saturating_sub(delta + 60),
        };
        let middle = planted(Place::Arguments, &s, at, escape);
        check_batch(transcript(middle.clone()), &s, "CANARY-PASTE");
        check_micro(transcript(middle), &s, "CANARY-PASTE");
    }
}

#[test]
fn the_focus_is_redacted_before_it_is_cut() {
    // The focus keeps the head and tail of the latest user request (300 characters).
    for at in 150..260 {
        let s = Secret {
            text: "sk-proj-FOCUSKEY0123456789abcdefABCDEF0123".into(),
            body: vec!["FOCUSKEY0123456789abcdefABCDEF0123".into()],
        };
        let mut msgs = transcript(planted(Place::Paste, &s, 10, " "));
        msgs.push(Message::user(plant(1_000, at, &s.text)));
        let e = Estimator::default();
        let t = Transcript::new(msgs, &e);
        let req = BatchRequest {
            force: true,
            ..BatchRequest::default()
        };
        let plan = batch::plan_batch(&t, 2_000, &BatchConfig::default(), &req, &e);
        let BatchStep::Summarize(jobs) = &plan.step else {
            panic!("expected a summary");
        };
        for j in jobs {
            assert_clean("focus", j.focus.as_deref().unwrap_or(""), &s);
        }
    }
}

/// Issue 21, item 17: a focus topic the caller gives (`compact --focus`, `compress(t, focus)`)
/// is redacted and bounded like the derived one before any job carries it; a blank one is no
/// focus (the latest request's is derived).
#[test]
fn a_callers_focus_is_redacted_and_bounded() {
    let e = Estimator::default();
    let mut msgs = vec![Message::system("sys")];
    for i in 0..12 {
        msgs.push(Message::user(format!("request {i}")));
        msgs.push(Message::assistant("x".repeat(4_000)));
    }
    let t = Transcript::new(msgs, &e);
    let body = "Zq7Rb2Lm9Xc4Vn8Kd1Tf6Hs3Gp5Wj0Ya2Ue7Io4Pl";
    let plan = |focus: &str| {
        let req = BatchRequest {
            force: true,
            focus: Some(focus.to_owned()),
            ..BatchRequest::default()
        };
        match batch::plan_batch(&t, 6_000, &BatchConfig::default(), &req, &e).step {
            BatchStep::Summarize(jobs) => jobs,
            other => panic!("expected a summary, got {other:?}"),
        }
    };
    let long = format!("{} sk-proj-{body} {}", "a".repeat(990), "b".repeat(3_000));
    for focus in [format!("the deploy key sk-proj-{body}"), long] {
        for job in plan(&focus) {
            let f = job.focus.expect("a focus");
            assert!(!f.contains(&body[..8]), "a secret in the focus");
            assert!(f.chars().count() <= 1_100, "{} chars", f.chars().count());
        }
    }
    for job in plan("  \n ") {
        assert_eq!(job.focus.as_deref(), Some("request 11"));
    }
}
