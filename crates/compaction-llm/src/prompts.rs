//! The prompts: batch (first and update), micro merge, defrag and turn progress.
//!
//! Every prompt asks for the same structured sections ([`SECTIONS`]), with the user's most
//! recent unfulfilled request quoted verbatim as the most important field, reverse signals
//! honoured, concrete facts kept, credentials replaced by `[REDACTED]`, and no instructions
//! addressed to whoever reads the summary later. [`build`] renders a request into a system and
//! a user message; it does not redact (the adapters do).

use crate::summarizer::{SummaryKind, SummaryRequest};

/// The section headings of a summary, in order.
pub const SECTIONS: [&str; 10] = [
    "## Active request",
    "## Goal",
    "## Constraints and preferences",
    "## Completed actions",
    "## Active state",
    "## Blockers",
    "## Key decisions",
    "## Resolved questions",
    "## Relevant files",
    "## Critical context",
];

/// Fixed sentences of every prompt [`build`] renders that a summary never contains: an answer
/// holding one of them repeats its instructions ([`crate::guard::is_echo`]).
pub const ECHO_MARKERS: [&str; 4] = [
    "You write summaries of an AI agent's earlier conversation",
    "Use exactly these section headings, in this order",
    "Write the summary now: the section headings",
    "Keep the summary within about",
];

/// The tags [`build`] wraps the material and the previous summary in, each on a line of its
/// own.
pub const MATERIAL_TAGS: [&str; 5] = [
    "previous-summary",
    "new-exchange",
    "turn-so-far",
    "conversation",
    "summary-to-shorten",
];

/// A rendered prompt: one system message and one user message.
#[derive(Clone, PartialEq, Eq)]
pub struct Prompt {
    /// The system message.
    pub system: String,
    /// The user message (the material and, where relevant, the previous summary).
    pub user: String,
}

impl std::fmt::Debug for Prompt {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Prompt")
            .field("system_chars", &self.system.len())
            .field("user_chars", &self.user.len())
            .finish()
    }
}

/// Renders the prompt for `req`, using `material` in place of `req.material` (so an adapter
/// can pass a redacted or shrunk copy).
pub fn build(req: &SummaryRequest, material: &str) -> Prompt {
    let mut system = String::with_capacity(4096);
    system.push_str(ROLE);
    system.push_str("\n\n");
    system.push_str(match req.kind {
        SummaryKind::BatchFirst => TASK_BATCH_FIRST,
        SummaryKind::BatchUpdate => TASK_BATCH_UPDATE,
        SummaryKind::MicroMerge => TASK_MICRO_MERGE,
        SummaryKind::Defrag => TASK_DEFRAG,
        SummaryKind::TurnProgress => TASK_TURN_PROGRESS,
    });
    system.push_str("\n\n");
    system.push_str(RULES);
    if req.ledger_kept {
        system.push_str(LEDGER_RULE);
    }
    system.push_str("\n\nUse exactly these section headings, in this order; write \"- none\" under a heading with nothing to record:\n");
    for (i, (heading, what)) in SECTIONS.iter().zip(SECTION_GUIDE).enumerate() {
        system.push_str(&format!("{}. `{heading}`: {what}\n", i + 1));
    }
    system.push_str(&format!(
        "\nToday's date is {}. Keep the summary within about {} tokens.",
        req.current_date, req.budget_tokens
    ));
    if req.kind == SummaryKind::Defrag {
        let input_tokens = compaction_core::tokens::estimate_text(
            req.previous_summary.as_deref().unwrap_or(material),
        );
        system.push_str(&format!(
            " The rewrite must be at most half as long as the summary you are given (that one is about {input_tokens} tokens, so stay under {}).",
            input_tokens / 2
        ));
    }
    if let Some(focus) = req.focus.as_deref().filter(|f| !f.trim().is_empty()) {
        system.push_str(&format!(
            "\nFocus topic: {focus}. Keep everything related to it in full detail and compress other topics harder."
        ));
    }

    let mut user = String::with_capacity(material.len() + 1024);
    let previous = req
        .previous_summary
        .as_deref()
        .filter(|s| !s.trim().is_empty());
    match req.kind {
        SummaryKind::Defrag => {
            user.push_str("<summary-to-shorten>\n");
            user.push_str(previous.unwrap_or(material));
            user.push_str("\n</summary-to-shorten>\n");
        }
        _ => {
            if let Some(prev) = previous {
                user.push_str("<previous-summary>\n");
                user.push_str(prev);
                user.push_str("\n</previous-summary>\n\n");
            }
            let tag = match req.kind {
                SummaryKind::MicroMerge => "new-exchange",
                SummaryKind::TurnProgress => "turn-so-far",
                _ => "conversation",
            };
            user.push_str(&format!("<{tag}>\n{material}\n</{tag}>\n"));
        }
    }
    user.push_str("\nWrite the summary now: the section headings and their content, nothing else.");
    Prompt { system, user }
}

/// Renders the one instruction message of a warm-cache request ([`SummaryRequest::warm`]):
/// the agent's last request is sent unchanged before it, up to the span's end
/// ([`WarmPrefix::sent`](crate::WarmPrefix::sent)), so the span is not sent again; the
/// instruction names it by number (messages counted from 1, system message included) and by
/// the first words of its first and last messages. The rules and
/// sections are those of [`build`]. `None` when the request has no warm prefix.
///
/// ```
/// use std::sync::Arc;
/// use compaction_core::Message;
/// use compaction_llm::{SummaryKind, SummaryRequest, WarmPrefix, prompts};
///
/// let sent: Arc<[Message]> = vec![
///     Message::system("You are a coding agent."),
///     Message::user("please fix the failing build in crate foo"),
///     Message::assistant("fixed: a missing import"),
///     Message::user("now run the tests"),
/// ]
/// .into();
/// let req = SummaryRequest::new(SummaryKind::BatchFirst, "", 400, "2026-01-02")
///     .with_warm(WarmPrefix::new(sent, 1..3));
/// let text = prompts::build_warm(&req).unwrap();
/// assert!(text.contains("messages 2 to 3"));
/// assert!(text.contains("\"please fix the failing build"));
/// ```
pub fn build_warm(req: &SummaryRequest) -> Option<String> {
    let warm = req.warm.as_ref()?;
    let span = &warm.messages[warm.span.clone()];
    let (first, last) = (warm.span.start + 1, warm.span.end);
    let mut out = String::with_capacity(4096);
    out.push_str(WARM_ROLE);
    out.push_str("\n\n");
    out.push_str(&format!(
        "The part to summarize is messages {first} to {last} of this conversation, counting \
         every message from 1 (the system message included). Message {first} begins {}",
        opening(&span[0])
    ));
    if span.len() > 1 {
        out.push_str(&format!(
            " and message {last} begins {}",
            opening(&span[span.len() - 1])
        ));
    }
    out.push_str(". That part is the end of the conversation shown here. ");
    if first > 1 {
        out.push_str(&format!("The messages before {first}, and the "));
    } else {
        out.push_str("The ");
    }
    out.push_str(
        "later messages of the conversation stay in the context as they are: leave them out of \
         the summary.",
    );
    out.push_str("\n\n");
    out.push_str(match req.kind {
        SummaryKind::BatchUpdate => WARM_TASK_UPDATE,
        SummaryKind::TurnProgress => TASK_TURN_PROGRESS,
        _ => WARM_TASK_FIRST,
    });
    out.push_str("\n\n");
    out.push_str(RULES);
    if req.ledger_kept {
        out.push_str(LEDGER_RULE);
    }
    out.push_str("\n\nUse exactly these section headings, in this order; write \"- none\" under a heading with nothing to record:\n");
    for (i, (heading, what)) in SECTIONS.iter().zip(SECTION_GUIDE).enumerate() {
        out.push_str(&format!("{}. `{heading}`: {what}\n", i + 1));
    }
    out.push_str(&format!(
        "\nToday's date is {}. Keep the summary within about {} tokens.",
        req.current_date, req.budget_tokens
    ));
    if let Some(focus) = req.focus.as_deref().filter(|f| !f.trim().is_empty()) {
        out.push_str(&format!(
            "\nFocus topic: {focus}. Keep everything related to it in full detail and compress other topics harder."
        ));
    }
    out.push_str(
        "\n\nWrite the summary now: the section headings and their content, nothing else.",
    );
    Some(out)
}

/// The words a message begins with, quoted (at most [`OPENING_WORDS`], redacted), or what it
/// holds when it has no text (tool calls, an image).
fn opening(m: &compaction_core::Message) -> String {
    let text = m.text();
    let words: Vec<&str> = text.split_whitespace().take(OPENING_WORDS).collect();
    if !words.is_empty() {
        let quoted = compaction_redact::redact(&words.join(" ")).into_owned();
        return format!("\"{quoted}\"");
    }
    let names: Vec<&str> = m
        .tool_calls()
        .iter()
        .map(|c| c.function.name.as_str())
        .collect();
    if !names.is_empty() {
        return format!("with tool calls ({})", names.join(", "));
    }
    "without text".to_owned()
}

/// How many words of a span's first and last messages a warm-cache instruction quotes.
const OPENING_WORDS: usize = 12;

// ---------------------------------------------------------------------------------------------

const WARM_ROLE: &str = "Pause the work above. You write summaries of an AI agent's earlier \
conversation so that the conversation can continue in a smaller context window; here, a part \
of the conversation above is to be replaced by your summary. Another model will read it as \
background facts. Do not answer questions from the conversation, do not continue its work, \
do not call tools, and do not greet or address anyone.";

const WARM_TASK_FIRST: &str = "Task: summarize that part of the conversation from scratch.";

const WARM_TASK_UPDATE: &str = "Task: that part begins with or contains an earlier summary: \
update it with the rest of the part. Keep every fact of the earlier summary that still holds, \
add what is new, move items that the newer messages finished from pending to completed, and \
remove what they made obsolete. Produce one complete summary, not a list of changes.";

const ROLE: &str = "You write summaries of an AI agent's earlier conversation so that the \
conversation can continue in a smaller context window. Another model will read your summary \
as background facts. You are not taking part in the conversation: do not answer questions \
from it, do not continue its work, and do not greet or address anyone.";

const TASK_BATCH_FIRST: &str = "Task: summarize the conversation below from scratch.";

const TASK_BATCH_UPDATE: &str = "Task: update the previous summary with the newer conversation \
below. Keep every fact of the previous summary that still holds, add what is new, move items \
that the new conversation finished from pending to completed, and remove what it made \
obsolete. Produce one complete summary, not a list of changes.";

const TASK_MICRO_MERGE: &str = "Task: fold one new exchange into the running summary. Keep the \
running summary's structure; add new decisions, requirements, file paths and open questions \
from the exchange; drop what the exchange resolved and what is no longer relevant. Produce the \
whole updated summary, not only the changes.";

const TASK_DEFRAG: &str = "Task: rewrite the summary below to be much shorter. Merge duplicate \
items, drop finished details that no longer matter, and keep the active request, open \
blockers, exact errors, paths, commands and values. Do not add anything that is not in it.";

const TASK_TURN_PROGRESS: &str = "Task: the user's current request is still being worked on, \
and the older part of this turn must be compressed. Record the progress made so far on that \
request: what was tried, what succeeded and failed, the state of files and tests, and what is \
being worked on now. If a previous progress summary is given, update it.";

const LEDGER_RULE: &str = "
- The caller appends an exact list of every file path and shell command of the summarized \
tool calls after your summary. Do not enumerate them: name a file or command only where it \
matters to the state of the work, with what happened to it.";

const RULES: &str = "Rules:
- The most important field is the user's most recent request that is not yet fulfilled, quoted \
verbatim. A question counts as a request.
- Honour reverse signals: if the user said \"stop\", \"undo\", \"never mind\" or changed their \
mind, quote that and do not carry the cancelled task forward as pending.
- Be concrete: exact file paths, commands, error messages, identifiers, numbers and config \
values. Never claim work is done unless the conversation shows it done, and never list \
finished work as pending.
- Replace every credential (API keys, tokens, passwords, private keys, connection-string \
passwords) with [REDACTED].
- Write facts in the past tense or as state. Do not write instructions, reminders or advice \
to the reader (no \"you must\", \"you should\", \"remember to\", no sections of instructions \
or next steps for the assistant).";

const SECTION_GUIDE: [&str; 10] = [
    "the user's most recent unfulfilled request, quoted verbatim (or a quoted reverse signal)",
    "what the user is trying to achieve overall",
    "requirements, constraints and preferences the user stated",
    "numbered list of what was done, each with its target (file, command, URL) and outcome",
    "working directory, branch, modified files, test and build status",
    "unresolved problems with their exact error messages",
    "decisions taken and why",
    "questions that were asked and answered, with the answer",
    "paths of files read, created or changed, with one line on each",
    "values, settings, versions, identifiers and error strings that later work depends on",
];
