//! The command line, as clap types.

use std::path::PathBuf;

use clap::{Args, Parser, Subcommand, ValueEnum};

use crate::input::TranscriptFormat;
use compaction_sim::Policy;

/// Keeps long-running LLM agent conversations inside a finite context window.
///
/// Exit codes: 0 success; 1 a runtime failure (store, summarizer, writing output); 2 bad
/// input, bad configuration or bad usage. Errors are printed as `error: FILE:LINE: reason`
/// when they concern a transcript line (`FILE:[INDEX]` for a JSON array, `FILE:0` for the file
/// as a whole) and never quote transcript text.
#[derive(Debug, Parser)]
#[command(name = "hermes-compaction", version, propagate_version = true)]
pub struct Cli {
    /// What to do.
    #[command(subcommand)]
    pub command: Command,
}

/// The subcommands.
#[derive(Debug, Subcommand)]
pub enum Command {
    /// Compact one transcript file into a new JSONL file.
    ///
    /// Input is JSONL (one OpenAI-format message per line) or a JSON array. Every mode refuses
    /// (exit 2, no output written) a file that is unreadable, empty, not UTF-8, has a line that
    /// is not valid JSON or not a message object, a message without a role, a role other than
    /// system/developer/user/assistant/tool, or a tool result whose call is missing, repeated
    /// or not adjacent. A result answers a call's `call_id` when the call has one
    /// (Responses-style calls, `{"id": "fc_1", "call_id": "call_1", ...}`), else its `id`. A
    /// tool call without a result (an interrupted turn) is accepted. The output is written to
    /// a temporary file next to FILE and renamed into place, so an error never creates or
    /// overwrites it.
    ///
    /// Batch and prune passes keep only the newest three image payloads: an older image in the
    /// rewritable part of the transcript becomes a short text placeholder naming its type and
    /// size ("[image removed after compaction: image/png, 45.0 KB; ...]"). With a store
    /// (`session compact`) the original row is archived and stays recoverable; a file in,
    /// file out run keeps the input file as the original.
    ///
    /// A summary is written as a marker message: batch ("[CONTEXT SUMMARY · hermes-compaction
    /// · batch]"), micro (the rolling summary) or progress (the older part of a long current
    /// turn). When no user message with text would remain (the only user turns are images or
    /// blank), a batch pass also writes one short user-role continuation message beside its
    /// summary ("[CONTINUATION · hermes-compaction] ..."), so the summary never becomes the
    /// first user-role text; it is no summary and never stacks.
    Compact(CompactArgs),
    /// Replay transcripts as an agent lives them, under several policies side by side.
    ///
    /// Each user message starts a turn; before each assistant message the model is called
    /// with the compacted transcript (before_request, then after_response with the prompt
    /// size); after each tool round after_tool_round and after each turn finalize_turn run.
    /// The table shows, per policy: compression events per 100 turns, mean turns between
    /// compressions (turns / events), summary calls, tokens reclaimed per event, peak and mean
    /// occupancy (prompt / threshold), window overflows (prompt > context length as sent,
    /// after the overflow passes a refused request gets), prompt tokens split into cache hits
    /// and misses (each request reuses the longest run of unchanged leading messages of the
    /// previous one, compared by wire JSON), summarizer
    /// tokens (estimated from the material and the output when the summarizer reports no
    /// usage, as the extractive one does), estimated cost, earliest changed message index
    /// (min/median), prune-only : full-summary ratio, compaction wall time, far recall (the
    /// share of the identifiers each recorded answer uses from more than 10 messages back
    /// that its prompt still holds, pooled and per request, with summaries and verbatim) and
    /// ledger-fact retention (paths, commands, the latest user message).
    Simulate(SimulateArgs),
    /// Search the policy space over your sessions and recommend a configuration.
    ///
    /// Replays the sessions under many configurations (threshold and floor, tail budget,
    /// prune-first runway, proactive prune, micro cadence and reclaim gate, insertion-time
    /// trimming; only values the configuration loader accepts) under one pricing, prints the
    /// Pareto front of cost, far recall (the share of the identifiers each recorded answer
    /// uses from more than 10 messages back that its prompt still holds, summaries included)
    /// and summary calls, with ledger-fact retention beside it, and writes the cheapest front
    /// point that meets --min-recall (default: the starting configuration's far recall) and
    /// --max-summary-calls as TOML that --config accepts. Configurations that overflow the
    /// window are never recommended.
    Tune(TuneArgs),
    /// Read telemetry logs (plain, tracing JSON or gzip) and print the report.
    Report(ReportArgs),
    /// The session store from the command line (SQLite path or postgres:// URL).
    #[command(subcommand)]
    Session(SessionCommand),
    /// Run the main job on the embedded defaults: import the bundled example session into a
    /// SQLite file, compact it there (extractive summarizer, no API key), then replay it under
    /// every policy and print the side-by-side table.
    Demo(DemoArgs),
    /// Print the bundled example session (JSONL) to stdout; it is generated deterministically.
    #[command(hide = true)]
    ExampleSession,
}

/// A compaction mode.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum Mode {
    /// One forced batch pass: prune first, summarize the middle unless pruning alone reaches
    /// the low-water mark.
    #[default]
    Batch,
    /// One forced prune-only pass: old tool outputs and long arguments shortened, no
    /// summarizer.
    Prune,
    /// Micro passes as the agent-loop micro policy makes them (the oldest whole exchange into
    /// the rolling summary, the older part of a long current turn into its progress marker)
    /// until nothing is absorbable or --passes is reached. A pass whose summarizer fails
    /// (after the extractive fallback when compression.fallback_to_extractive is on) exits 1.
    Micro,
}

/// The `--summarizer` parser: a name of the facade's provider table
/// ([`Provider::all`](hermes_compaction::Provider::all)), so a provider added there is
/// accepted and listed in `--help` with no change here.
pub fn provider_parser() -> impl clap::builder::TypedValueParser<Value = hermes_compaction::Provider>
{
    let names: Vec<&'static str> = hermes_compaction::Provider::all()
        .into_iter()
        .map(hermes_compaction::Provider::name)
        .collect();
    use clap::builder::TypedValueParser as _;
    clap::builder::PossibleValuesParser::new(names).map(|name| {
        hermes_compaction::Provider::from_name(&name).expect("a name of the provider table")
    })
}

/// Options shared by the commands that compact.
#[derive(Clone, Debug, Default, Args)]
pub struct EngineArgs {
    /// Context length of the main model in tokens [default: model.context_length of the
    /// configuration, 128000].
    #[arg(long, value_name = "N")]
    pub context_length: Option<u64>,
    /// TOML configuration file (see config/default.toml); HERMES_COMPACTION__* variables
    /// override it.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Summarizer [default: auxiliary.compression.provider, extractive]: extractive
    /// (deterministic, no network) or openai (an OpenAI-compatible endpoint). `openai` reads
    /// auxiliary.compression.{base_url, model, api_key_env, timeout, max_retries, temperature}
    /// and fails with exit 2 when the key variable is unset. When auxiliary.compression.model
    /// differs from model.name, a failing auxiliary model (not found, 5xx, timeout) is retried
    /// on model.name. Auth and quota failures abort the pass; an HTTP 402 that says its limit
    /// resets ("resets at", "try again in", Retry-After) is transient instead (main model, then
    /// the extractive fallback).
    #[arg(long, value_parser = provider_parser())]
    pub summarizer: Option<hermes_compaction::Provider>,
    /// Apply the configuration's `[profiles.NAME]` over its `[compression]` table (a policy
    /// for a kind of session, e.g. sub-agents).
    #[arg(long, value_name = "NAME")]
    pub profile: Option<String>,
}

/// `compact`.
#[derive(Clone, Debug, Args)]
pub struct CompactArgs {
    /// The transcript (JSONL or JSON array, or an agent's log: see --format).
    #[arg(long, short, value_name = "FILE")]
    pub input: PathBuf,
    /// How the input is read.
    #[command(flatten)]
    pub input_format: FormatArg,
    /// Where to write the compacted transcript (JSONL). Not with --dry-run.
    #[arg(long, short, value_name = "FILE", required_unless_present = "dry_run")]
    pub output: Option<PathBuf>,
    /// The kind of pass.
    #[command(flatten)]
    pub pass: PassArgs,
    /// Print what the pass would do and change nothing: each message's index, role, tool,
    /// size and fate (kept, pinned, pruned with its one-liner, demoted, summarized, merged),
    /// the planned summaries and the tokens before and after. Calls no summarizer and writes
    /// no file. Micro mode shows the next micro pass.
    #[arg(long, conflicts_with_all = ["output", "telemetry", "passes"])]
    pub dry_run: bool,
    /// With --dry-run: print the preview as one JSON object instead.
    #[arg(long, requires = "dry_run")]
    pub json: bool,
    /// Batch mode: the topic the summary keeps in full detail (other topics are compressed
    /// harder) [default: derived from the latest user request]. Secrets in it are redacted
    /// before it reaches the summarizer, like everything sent there.
    #[arg(long, value_name = "TEXT")]
    pub focus: Option<String>,
    /// Write the run's telemetry lines to this file (one event per pass); it must not be the
    /// input or the output file.
    #[arg(long, value_name = "FILE")]
    pub telemetry: Option<PathBuf>,
    /// Engine options.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// `simulate`.
#[derive(Clone, Debug, Args)]
pub struct SimulateArgs {
    /// Transcripts to replay (JSONL or JSON arrays, or agents' logs: see --format).
    #[arg(long, short, value_name = "FILE", num_args = 1.., required = true)]
    pub input: Vec<PathBuf>,
    /// How the input is read.
    #[command(flatten)]
    pub input_format: FormatArg,
    /// Policies, comma-separated: none, batch, prune-first, batch-naive, micro (the
    /// configuration's reclaim gate, none by default), micro+gate (micro with the economic
    /// gate, micro_compact_min_reclaim_tokens = "auto"), batch+trim, micro+trim.
    #[arg(
        long,
        value_delimiter = ',',
        default_value = "none,batch,batch-naive,micro,micro+gate",
        value_parser = <Policy as std::str::FromStr>::from_str
    )]
    pub policies: Vec<Policy>,
    /// Price table (TOML or JSON with input_per_mtok, cached_input_per_mtok,
    /// output_per_mtok, summary_input_per_mtok, summary_output_per_mtok in dollars per million
    /// tokens) [default: $3 input, $0.30 cached input, $15 output, the summarizer priced
    /// alike].
    #[arg(long, value_name = "FILE")]
    pub prices: Option<PathBuf>,
    /// Price with a provider cache profile: anthropic, openai, openai-gpt5, google, local,
    /// custom (the configuration's [compression.cache_custom]), prices (the price table) or
    /// all (every named profile, one table each plus a cost-by-profile summary). A profile
    /// applies its time-to-live, minimum cacheable prefix and cache-write premium, and the
    /// replayed compressor uses it for its cache-aware decisions [default: the price table
    /// when --prices is given, else compression.cache_profile of the configuration, else the
    /// price table].
    #[arg(long, value_name = "NAME")]
    pub cache_profile: Option<String>,
    /// Seconds between two requests when messages carry no `timestamp`; a request after the
    /// profile's time-to-live gets no cache hits.
    #[arg(long, value_name = "SECS", default_value_t = compaction_sim::replay::DEFAULT_REQUEST_GAP_SECS)]
    pub request_gap_secs: u64,
    /// Also replay each policy with the time-to-live rule off
    /// (compression.cold_cache_rewrites = false), as POLICY-nottl beside POLICY: the cost
    /// difference is what rewriting once the cache had gone cold saved (price with a cache
    /// profile: the price table has no time-to-live).
    #[arg(long)]
    pub ttl_compare: bool,
    /// Also replay each policy with foresight of the next N answers, as POLICY+foresightN
    /// beside POLICY: before every hook the messages those recorded answers need (the
    /// re-read model's sources) are pinned, so the passes keep exactly them verbatim. Not a
    /// mechanism: what the policy's trigger, head, summary and tail could reach if it knew
    /// which messages the next answers need (docs/ECONOMICS.md, "A bound from foresight").
    /// Repeatable; more than 0.
    #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
    pub foresight: Vec<u64>,
    /// Latency of a summarizer call, fixed part in milliseconds (with --summary-ms-per-token:
    /// the added wait at the trigger; see docs/ECONOMICS.md).
    #[arg(long, value_name = "MS", default_value_t = compaction_sim::latency::DEFAULT_FIXED_MS)]
    pub summary_latency_ms: u64,
    /// Latency of a summarizer call, milliseconds per output token.
    #[arg(long, value_name = "MS", default_value_t = compaction_sim::latency::DEFAULT_PER_OUTPUT_TOKEN_MS)]
    pub summary_ms_per_token: f64,
    /// Prepare the summary ahead once the prompt reaches this share of the threshold (0 to 1,
    /// exclusive): the wait at the trigger is what is left of the call, and a candidate the
    /// trigger cannot use is counted as wasted cost [default: no preparation].
    #[arg(long, value_name = "SHARE")]
    pub prepare_at: Option<f64>,
    /// Trim limit of the batch+trim and micro+trim policies, tokens: larger tool results are
    /// trimmed as they are appended (head and tail kept, the original in an in-memory store).
    /// The other policies never trim [default: compression.insert_trim_tokens when set, else
    /// 8000].
    #[arg(long, value_name = "N")]
    pub insert_trim_tokens: Option<u64>,
    /// Also write the rows and totals as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Also draw occupancy over requests per policy as an SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Also write one JSON line per request, so anyone can re-price the replay:
    /// {"policy", "transcript", "request", "chars": [..], "hashes": [..]}, where the i-th chars
    /// entry is the number of Unicode scalar values of message i's compact wire JSON and the
    /// i-th hashes entry its FNV-1a 64 digest in hex, for the prompt as sent (one pricing only).
    #[arg(long, value_name = "FILE.jsonl")]
    pub trace: Option<PathBuf>,
    /// Also write every distinct message that appears in a traced prompt, once, one JSON line
    /// each: {"hash": HASH, "wire": WIRE}, HASH being its 16 hex digits as in --trace and WIRE
    /// its compact wire JSON as a string, so a replay can be scored with measures of one's own
    /// (one pricing only; works with or without --trace).
    #[arg(long, value_name = "FILE.jsonl")]
    pub trace_text: Option<PathBuf>,
    /// Also write, per input, one JSON line of what each recorded message is needed for,
    /// without text: {"transcript", "messages": [{"role", "tool", "chars", "answer",
    /// "used_by", "ids"}]}, `used_by` being the answers that need the message by the re-read
    /// model's rule and `ids` the digests of the identifiers it holds; the input of
    /// tools/predictors/ (docs/ECONOMICS.md, "What predicts the next answers' needs").
    #[arg(long, value_name = "FILE.jsonl")]
    pub needs: Option<PathBuf>,
    /// Also score another compressor's trace of the same inputs (JSON lines in the format
    /// of --trace, e.g. ../shared/anchors/hermes-replay/, uncompressed) with the same
    /// scorer as the policies: its cost in the issue units, far and content recall and
    /// re-reads appear as one more column. Needs --score-text; one pricing only.
    #[arg(long, value_name = "FILE.jsonl", requires = "score_text")]
    pub score_trace: Option<PathBuf>,
    /// The text of the scored trace's messages, in the format of --trace-text.
    #[arg(long, value_name = "FILE.jsonl", requires = "score_trace")]
    pub score_text: Option<PathBuf>,
    /// The scored trace's summary calls and tokens:
    /// {"totals": [{"summary_calls", "summary_prompt_tokens", "summary_output_tokens"}]},
    /// added to its totals.
    #[arg(long, value_name = "FILE.json", requires = "score_trace")]
    pub score_totals: Option<PathBuf>,
    /// Print one table per transcript as well as the totals.
    #[arg(long)]
    pub per_transcript: bool,
    /// Check every pass of every replay against the laws (the transcript before and after
    /// it, as `laws::check` does): print each violation after the tables (policy,
    /// transcript, request, hook, the law and message indices, never text), add them to
    /// --json as `law_violations`, and exit 1 if there is any.
    #[arg(long)]
    pub check_laws: bool,
    /// Engine options.
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// `tune`.
#[derive(Clone, Debug, Args)]
pub struct TuneArgs {
    /// Sessions to replay (JSONL or JSON arrays, or agents' logs such as
    /// ~/.claude/projects/*/*.jsonl: see --format).
    #[arg(long, short, value_name = "FILE", num_args = 1.., required = true)]
    pub input: Vec<PathBuf>,
    /// How the input is read.
    #[command(flatten)]
    pub input_format: FormatArg,
    /// Pricing: a cache profile (anthropic, openai, openai-gpt5, google, local, custom) or
    /// prices (the price table; the cost is then in the units of docs/ECONOMICS.md)
    /// [default: compression.cache_profile of the configuration, else prices].
    #[arg(long, value_name = "NAME")]
    pub cache_profile: Option<String>,
    /// Configurations to evaluate, the starting one included (48: about 1 minute of CPU over
    /// 21 sessions).
    #[arg(long, value_name = "N", default_value_t = 48)]
    pub budget: usize,
    /// Seed of the search (the same seed and inputs give the same result).
    #[arg(long, value_name = "N", default_value_t = 13)]
    pub seed: u64,
    /// Leave micro-compaction out of the search.
    #[arg(long)]
    pub no_micro: bool,
    /// Leave insertion-time trimming out of the search.
    #[arg(long)]
    pub no_trim: bool,
    /// Leave the summary request's form out of the search (warm: the agent's own model with
    /// its cached prefix; standalone: a model at --summary-price-ratio of its prices); the
    /// starting configuration's form is kept.
    #[arg(long)]
    pub no_warm: bool,
    /// The standalone summary model's price per token relative to the agent model's, input
    /// and output alike (0.3: 30% of the agent's prices), 0 to 100 [default:
    /// auxiliary.compression.price_ratio of the configuration, 1.0].
    #[arg(long, value_name = "RATIO")]
    pub summary_price_ratio: Option<f64>,
    /// The recommendation keeps at least this far recall (pooled, summaries included), 0 to 1
    /// [default: the starting configuration's].
    #[arg(long, value_name = "SHARE")]
    pub min_recall: Option<f64>,
    /// The recommendation also keeps at least this mean ledger-fact retention (paths,
    /// commands, latest user message), 0 to 1 [default: no limit].
    #[arg(long, value_name = "SHARE")]
    pub min_retention: Option<f64>,
    /// The recommendation makes at most this many summary calls over the sessions.
    #[arg(long, value_name = "N")]
    pub max_summary_calls: Option<u64>,
    /// Seconds between two requests when messages carry no `timestamp`.
    #[arg(long, value_name = "SECS", default_value_t = compaction_sim::replay::DEFAULT_REQUEST_GAP_SECS)]
    pub request_gap_secs: u64,
    /// Where to write the recommended configuration (TOML) [default: printed after the front].
    #[arg(long, short, value_name = "FILE.toml")]
    pub output: Option<PathBuf>,
    /// Also draw the points and the front as an SVG.
    #[arg(long, value_name = "FILE.svg")]
    pub plot: Option<PathBuf>,
    /// Also write every point, the front and the recommendation as JSON.
    #[arg(long, value_name = "FILE")]
    pub json: Option<PathBuf>,
    /// Engine options (the starting configuration and the context length).
    #[command(flatten)]
    pub engine: EngineArgs,
}

/// `report`.
#[derive(Clone, Debug, Args)]
pub struct ReportArgs {
    /// Log files.
    #[arg(value_name = "LOG", num_args = 1.., required = true)]
    pub logs: Vec<PathBuf>,
    /// One section per session after the overall one.
    #[arg(long)]
    pub per_session: bool,
    /// JSON instead of the table.
    #[arg(long)]
    pub json: bool,
}

/// `session ...`.
#[derive(Debug, Subcommand)]
pub enum SessionCommand {
    /// Store a transcript as a new session.
    Import {
        /// The transcript (JSONL or JSON array, or an agent's log: see --format).
        #[arg(value_name = "FILE")]
        file: PathBuf,
        /// How the file is read.
        #[command(flatten)]
        input_format: FormatArg,
        /// SQLite path or URL (sqlite:PATH), or postgres:// URL.
        #[arg(long, value_name = "URL")]
        db: String,
        /// Session id, 1-256 bytes without control characters [default: the file name
        /// without extension].
        #[arg(long, value_name = "ID", value_parser = crate::paths::session_id)]
        session: Option<String>,
    },
    /// Print a session as JSONL to stdout: its active messages as stored, each line with the
    /// library's `_hermes` metadata (row id, summary marker kind, trim handle), which
    /// `session import` and `compact` read back. `--wire` prints what a model is sent instead.
    /// Never creates a database: a missing SQLite file exits 2. Reads a SQLite database it
    /// may not write (read-only file or mount, or sqlite:PATH?mode=ro) without migrating it.
    Export {
        /// The stored session.
        #[command(flatten)]
        store: StoreArgs,
        /// Include archived rows; every row then carries `active`, `compacted`, `generation`
        /// and `position` in its `_hermes` metadata (`--format openai` only).
        #[arg(long, conflicts_with = "wire")]
        all: bool,
        /// The plain wire form: the active messages without the `_hermes` metadata.
        #[arg(long)]
        wire: bool,
        /// Dialect of the output: openai (chat messages with their `_hermes` metadata) or
        /// anthropic (Anthropic Messages: results grouped into user turns as `tool_result`
        /// blocks, calls as `tool_use` blocks).
        #[arg(long, value_enum, default_value_t = ExportFormat::Openai)]
        format: ExportFormat,
    },
    /// Run one pass on a stored session and commit it (archive_and_compact).
    Compact {
        /// The stored session.
        #[command(flatten)]
        store: StoreArgs,
        /// The kind of pass.
        #[command(flatten)]
        pass: PassArgs,
        /// Engine options.
        #[command(flatten)]
        engine: EngineArgs,
    },
    /// List the session's generations: when, what pass, tokens before -> after, rows
    /// archived and inserted, and whether `session undo --to` can go back to it.
    History {
        /// The stored session.
        #[command(flatten)]
        store: StoreArgs,
    },
    /// Undo: make the active messages those of an earlier generation again, as a new
    /// generation (nothing is deleted, so an undo is itself undone with another undo).
    /// Unknown or unrestorable generations exit 2 and change nothing.
    Undo {
        /// The stored session.
        #[command(flatten)]
        store: StoreArgs,
        /// The generation to go back to [default: the one before the current].
        #[arg(long, value_name = "N")]
        to: Option<u64>,
    },
    /// Show what generation N archived and what replaced it (summary text, pruned outputs
    /// and their one-liners), redacted. Local only: it reads your own store.
    Diff {
        /// The stored session.
        #[command(flatten)]
        store: StoreArgs,
        /// The generation (1 or later).
        #[arg(long, value_name = "N", value_parser = clap::value_parser!(u64).range(1..))]
        generation: u64,
        /// TOML configuration file: its compression.redaction_rules (a ruleset in gitleaks'
        /// format) redacts the diff; HERMES_COMPACTION__* variables apply too.
        #[arg(long, value_name = "FILE")]
        config: Option<PathBuf>,
    },
    /// Pin (or with --unpin, unpin) the active message at INDEX: no pass prunes, trims,
    /// summarizes or reorders it. A generation of its own, so `session undo` reverts it. An
    /// index out of range exits 2 and changes nothing.
    Pin {
        /// The stored session.
        #[command(flatten)]
        store: StoreArgs,
        /// Index of the message among the active ones (as `session export` prints them, 0
        /// first).
        #[arg(long, value_name = "I")]
        index: usize,
        /// Remove the pin instead.
        #[arg(long)]
        unpin: bool,
    },
}

/// `--format`, how an input file is read.
#[derive(Clone, Copy, Debug, Args)]
pub struct FormatArg {
    /// Input format: auto (an agent's own log recognised from its first lines, else
    /// Anthropic Messages when a message has Anthropic tool or thinking blocks, else OpenAI
    /// chat), openai, anthropic (tool_use/tool_result/thinking content blocks; compact writes
    /// the result back in the same dialect), or an agent log format: claude-code (a Claude
    /// Code project log), codex (a Codex rollout), pi, gemini (a Gemini CLI chat recording;
    /// positions are record indices).
    #[arg(long, default_value = "auto", value_parser = crate::input::format_parser())]
    pub format: TranscriptFormat,
}

/// `--mode` and `--passes`: the kind of pass a compaction command runs.
#[derive(Clone, Copy, Debug, Args)]
pub struct PassArgs {
    /// What kind of pass.
    #[arg(long, value_enum, default_value_t = Mode::Batch)]
    pub mode: Mode,
    /// Micro mode: at most this many passes that change the transcript (micro only).
    #[arg(long, value_name = "N")]
    pub passes: Option<u32>,
}

/// `--db` and `--session`: a stored session.
#[derive(Clone, Debug, Args)]
pub struct StoreArgs {
    /// SQLite path or URL, or postgres:// URL.
    #[arg(long, value_name = "URL")]
    pub db: String,
    /// Session id.
    #[arg(long, value_name = "ID", value_parser = crate::paths::session_id)]
    pub session: String,
}

/// The dialect `session export` writes.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, ValueEnum)]
pub enum ExportFormat {
    /// OpenAI chat messages.
    #[default]
    Openai,
    /// Anthropic Messages.
    Anthropic,
}

/// `demo`.
#[derive(Clone, Debug, Args)]
pub struct DemoArgs {
    /// SQLite file (or any store URL) to use [default: a fresh file in the temporary
    /// directory, removed afterwards].
    #[arg(long, value_name = "URL")]
    pub db: Option<String>,
    /// Context length of the replay and the compaction.
    #[arg(long, value_name = "N", default_value_t = 32_000)]
    pub context_length: u64,
}
