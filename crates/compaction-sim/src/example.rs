//! The bundled example session: a coding agent fixing a small Rust project over many turns,
//! with tool calls (some parallel) and large tool outputs. Generated deterministically, so
//! `examples/sessions/coding-agent.jsonl` in the repository is exactly
//! `hermes-compaction example-session` (a test keeps them equal).

use hermes_compaction::core::{Message, ToolCall, parse};

/// Turns in the example session.
pub const TURNS: usize = 36;

/// The example session as messages.
pub fn session() -> Vec<Message> {
    let mut g = Gen { state: 0x5eed_cafe };
    let mut msgs = vec![Message::system(SYSTEM)];
    let mut call = 0usize;
    for turn in 0..TURNS {
        let (task, module) = TASKS[turn % TASKS.len()];
        let module = format!("{module}{}", if turn >= TASKS.len() { "_v2" } else { "" });
        msgs.push(Message::user(format!("{task} (module `{module}`)")));
        let rounds = 2 + g.below(5);
        for round in 0..rounds {
            let parallel = round == 0 && g.below(3) == 0;
            let tools: Vec<&str> = if parallel {
                vec!["read_file", "grep"]
            } else {
                vec![TOOLS[(turn + round + g.below(3)) % TOOLS.len()]]
            };
            let mut calls = Vec::new();
            let mut results = Vec::new();
            for tool in tools {
                call += 1;
                let id = format!("call_{call:04}");
                let (args, output) = tool_io(&mut g, tool, &module, turn, round);
                calls.push(ToolCall::function(&id, tool, args));
                results.push(Message::tool_result(&id, output));
            }
            let thought = if round == 0 {
                format!("Let me look at `{module}` first.")
            } else {
                String::new()
            };
            msgs.push(Message::assistant_tool_calls(thought, calls));
            msgs.extend(results);
        }
        msgs.push(Message::assistant(format!(
            "Done: {} in `src/{module}.rs`. I ran `cargo test` and all {} tests pass. \
             The change is limited to {} functions; nothing else in the crate needed to move.",
            task.to_lowercase().trim_end_matches('.'),
            40 + turn * 3,
            1 + g.below(4),
        )));
    }
    msgs
}

/// The example session as JSONL.
pub fn session_jsonl() -> String {
    parse::to_jsonl(&session())
}

const SYSTEM: &str = "You are a careful coding agent working in a Rust repository. Use the tools to read, search, edit and test. Keep changes small, run the tests after every edit, and report what you changed.";

const TOOLS: [&str; 4] = ["read_file", "run_shell", "grep", "edit_file"];

const TASKS: [(&str, &str); 12] = [
    (
        "The config loader panics on an empty file; make it return an error instead.",
        "config",
    ),
    (
        "Add a `--verbose` flag to the CLI and thread it through to the logger.",
        "cli",
    ),
    (
        "The retry loop in the HTTP client never gives up; cap it at five attempts.",
        "http",
    ),
    (
        "Parsing dates with a trailing Z fails; support RFC 3339 fully.",
        "dates",
    ),
    (
        "Speed up the tokenizer: it allocates a String per token.",
        "tokenizer",
    ),
    (
        "The cache evicts the newest entry instead of the oldest; fix the LRU order.",
        "cache",
    ),
    (
        "Add a test for the CSV export with quoted commas.",
        "export",
    ),
    ("Rename `Thing` to `Record` across the crate.", "model"),
    (
        "The migration runner applies the same migration twice after a crash.",
        "migrate",
    ),
    ("Make the progress bar respect NO_COLOR.", "progress"),
    ("Handle SIGTERM gracefully in the worker pool.", "workers"),
    ("Document the public API of the parser module.", "parser"),
];

/// A small deterministic generator (64-bit LCG).
struct Gen {
    state: u64,
}

impl Gen {
    fn next(&mut self) -> u64 {
        self.state = self
            .state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        self.state >> 33
    }

    fn below(&mut self, n: usize) -> usize {
        (self.next() % n as u64) as usize
    }
}

fn tool_io(g: &mut Gen, tool: &str, module: &str, turn: usize, round: usize) -> (String, String) {
    match tool {
        "read_file" => {
            let lines = 40 + g.below(120);
            let mut out = String::new();
            for i in 0..lines {
                out.push_str(&code_line(g, module, i));
                out.push('\n');
            }
            (format!(r#"{{"path":"src/{module}.rs"}}"#), out)
        }
        "grep" => {
            let hits = 5 + g.below(30);
            let mut out = String::new();
            for _ in 0..hits {
                let file = MODULES[g.below(MODULES.len())];
                out.push_str(&format!(
                    "src/{file}.rs:{}:    let {module}_{} = {}(&ctx)?;\n",
                    10 + g.below(400),
                    g.below(50),
                    IDENTS[g.below(IDENTS.len())],
                ));
            }
            (format!(r#"{{"pattern":"{module}_","path":"src"}}"#), out)
        }
        "run_shell" => {
            let tests = 30 + g.below(60);
            let mut out = format!(
                "   Compiling {module} v0.3.{turn} (/work/project)\n    Finished `test` profile in {}.{}s\n     Running unittests src/lib.rs\n\nrunning {tests} tests\n",
                2 + g.below(20),
                g.below(10)
            );
            let failing = round == 0 && g.below(2) == 0;
            for i in 0..tests {
                let ok = !(failing && i == tests / 2);
                out.push_str(&format!(
                    "test {module}::tests::{}_{i} ... {}\n",
                    IDENTS[g.below(IDENTS.len())],
                    if ok { "ok" } else { "FAILED" }
                ));
            }
            if failing {
                out.push_str(&format!(
                    "\nfailures:\n\n---- {module}::tests::case stdout ----\nthread 'case' panicked at src/{module}.rs:{}:9:\nassertion `left == right` failed\n  left: {}\n right: {}\n",
                    20 + g.below(300),
                    g.below(100),
                    g.below(100)
                ));
            }
            out.push_str(&format!(
                "\ntest result: {}. {} passed; {} failed; 0 ignored\n",
                if failing { "FAILED" } else { "ok" },
                tests - usize::from(failing),
                usize::from(failing)
            ));
            (r#"{"cmd":"cargo test --quiet"}"#.to_owned(), out)
        }
        _ => {
            let line = 10 + g.below(200);
            (
                format!(
                    r#"{{"path":"src/{module}.rs","old":"{}","new":"{}"}}"#,
                    IDENTS[g.below(IDENTS.len())],
                    IDENTS[g.below(IDENTS.len())]
                ),
                format!("Edited src/{module}.rs: replaced 1 occurrence at line {line}."),
            )
        }
    }
}

fn code_line(g: &mut Gen, module: &str, i: usize) -> String {
    let id = IDENTS[g.below(IDENTS.len())];
    match g.below(7) {
        0 => format!("/// Returns the {id} of this {module} (line {i})."),
        1 => format!(
            "pub fn {id}_{i}(&self, input: &str) -> Result<{}, Error> {{",
            cap(id)
        ),
        2 => format!(
            "    let {id} = self.{}.get(input).ok_or(Error::Missing)?;",
            IDENTS[g.below(IDENTS.len())]
        ),
        3 => format!("    if {id}.is_empty() {{ return Err(Error::Empty(\"{module}\")); }}"),
        4 => format!("    Ok({}::from({id}))", cap(id)),
        5 => "}".to_owned(),
        _ => String::new(),
    }
}

fn cap(s: &str) -> String {
    let mut c = s.chars();
    c.next()
        .map_or_else(String::new, |f| f.to_uppercase().chain(c).collect())
}

const MODULES: [&str; 8] = [
    "config", "cli", "http", "dates", "cache", "export", "model", "parser",
];

const IDENTS: [&str; 16] = [
    "value", "entry", "record", "token", "header", "buffer", "limit", "retry", "path", "span",
    "offset", "state", "handle", "cursor", "window", "budget",
];

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_session_is_valid_and_sized_for_the_demo() {
        let msgs = session();
        let report = hermes_compaction::core::validate::validate(&msgs);
        assert!(report.is_clean(), "{:?}", report.issues);
        assert!(msgs.len() > 200, "{} messages", msgs.len());
        let bytes = session_jsonl().len();
        assert!((150_000..600_000).contains(&bytes), "{bytes} bytes");
    }
}
