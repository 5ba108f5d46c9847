//! How long passes take against a broken summarizer endpoint, at the default time settings.
//!
//! For each failure mode a fake OpenAI-compatible endpoint runs on 127.0.0.1 (plain threads,
//! no network beyond the loopback): `hang` (reads the request, never answers), `drip` (a
//! 200 whose body arrives one byte every half second), `http500`, `big` (a 2 MB completion),
//! `echo` (sends the prompt back as the summary) and `invalid-json`. Against each, one
//! compressor makes 30 micro passes in a row (`finalize_turn`, as an agent loop at the end of
//! 30 turns) and a fresh one makes one batch pass (`one_shot` with `OneShot::batch()`); each wall time is printed with
//! the bound it must keep (30 micro passes: 5 minutes; one batch pass: 90 s).
//!
//! Every `auxiliary.compression` time setting is the default (timeout 30 s, 1 retry, a 60 s
//! deadline per pass, breaker after 3 fast failures or 1 slow one, 120 s probe interval); the
//! only settings made are the endpoint, `compression.micro_compact` (micro passes are asked
//! for) and `compression.cache_profile = "none"` (so no pass is skipped by the cache gate and
//! every one needs a summary).
//!
//! ```sh
//! nice cargo run -p hermes-compaction --features openai --example failing_endpoint
//! # one mode, or several:
//! nice cargo run -p hermes-compaction --features openai --example failing_endpoint -- hang echo
//! ```
//!
//! Exits 1 when a bound is not kept. The hang and drip modes take about two minutes each.
// A command-line example: its table goes to stdout, a usage error to stderr.
#![allow(clippy::print_stdout, clippy::print_stderr)]

use hermes_compaction::OneShot;
use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

use hermes_compaction::core::{Message, ToolCall};
use hermes_compaction::{Compressor, Config, summarizer_from_config};

const MODES: [&str; 6] = ["hang", "drip", "http500", "big", "echo", "invalid-json"];
const MICRO_PASSES: usize = 30;
const MICRO_BOUND: Duration = Duration::from_secs(300);
const BATCH_BOUND: Duration = Duration::from_secs(90);

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if let Some(bad) = args.iter().find(|a| !MODES.contains(&a.as_str())) {
        eprintln!(
            "error: unknown mode {bad:?}; the modes are {}",
            MODES.join(", ")
        );
        std::process::exit(2);
    }
    let modes: Vec<&'static str> = MODES
        .into_iter()
        .filter(|m| args.is_empty() || args.iter().any(|a| a == m))
        .collect();
    let rt = tokio::runtime::Builder::new_multi_thread()
        .worker_threads(2)
        .enable_all()
        .build()
        .expect("runtime");
    let defaults = Config::default().auxiliary.compression;
    println!(
        "defaults: timeout={}s max_retries={} deadline_secs={} breaker_failures={} breaker_probe_secs={}",
        defaults.timeout,
        defaults.max_retries,
        defaults.deadline_secs,
        defaults.breaker_failures,
        defaults.breaker_probe_secs
    );
    println!(
        "{:<13} {:>10} {:>14} {:>9} {:>9} {:>9} {:>9}  bounds",
        "mode", "micro_30_s", "slowest_pass_s", "fallbacks", "requests", "batch_s", "batch_req"
    );
    let mut kept = true;
    for mode in modes {
        let server = Server::start(mode);
        // 30 micro passes on one compressor.
        let mut c = compressor(&server.base_url(), true);
        let mut t = c.transcript(session(80));
        let started = Instant::now();
        let (mut slowest, mut fallbacks) = (Duration::ZERO, 0);
        for _ in 0..MICRO_PASSES {
            let pass = Instant::now();
            if let Some(r) = rt.block_on(c.finalize_turn(&mut t)) {
                fallbacks += usize::from(r.stats.fallback_used());
            }
            slowest = slowest.max(pass.elapsed());
        }
        let micro = started.elapsed();
        let micro_requests = server.requests();
        // One batch pass on a fresh compressor (its own breaker, closed).
        let mut c = compressor(&server.base_url(), false);
        let mut t = c.transcript(session(80));
        let started = Instant::now();
        let b = rt
            .block_on(c.one_shot(&mut t, OneShot::batch()))
            .into_batch()
            .unwrap();
        let batch = started.elapsed();
        let ok = micro <= MICRO_BOUND && batch <= BATCH_BOUND && !b.failed();
        kept &= ok;
        println!(
            "{:<13} {:>10.1} {:>14.1} {:>9} {:>9} {:>9.1} {:>9}  {}",
            mode,
            micro.as_secs_f64(),
            slowest.as_secs_f64(),
            fallbacks,
            micro_requests,
            batch.as_secs_f64(),
            server.requests() - micro_requests,
            if ok { "kept" } else { "NOT KEPT" },
        );
    }
    if !kept {
        std::process::exit(1);
    }
}

/// A compressor at the default time settings, its summarizer at `base_url`.
fn compressor(base_url: &str, micro: bool) -> Compressor {
    let mut config = Config::default();
    config.model.context_length = 32_000;
    config.compression.micro_compact = micro;
    config.compression.cache_profile = "none".into();
    let aux = &mut config.auxiliary.compression;
    aux.provider = "openai".into();
    aux.base_url = base_url.to_owned();
    aux.model = "fake-model".into();
    aux.api_key_env = String::new();
    let summarizer = summarizer_from_config(&config).expect("summarizer");
    Compressor::builder(config)
        .summarizer(summarizer)
        .session("failing-endpoint")
        .build()
        .expect("compressor")
}

/// A coding session of `turns` turns, each with a tool call and a sizeable output.
fn session(turns: usize) -> Vec<Message> {
    let mut msgs = vec![Message::system("You are a coding agent.")];
    for i in 0..turns {
        let id = format!("call-{i}");
        msgs.push(Message::user(format!(
            "step {i}: run the tests in crate {i}"
        )));
        msgs.push(Message::assistant_tool_calls(
            "",
            vec![ToolCall::function(
                &id,
                "bash",
                r#"{"command":"cargo test"}"#,
            )],
        ));
        msgs.push(Message::tool_result(
            &id,
            format!("test {i} ok\n").repeat(60),
        ));
        msgs.push(Message::assistant(format!("step {i} done: the tests pass")));
    }
    msgs
}

/// A fake endpoint on 127.0.0.1 answering every request the way its mode says.
struct Server {
    port: u16,
    requests: Arc<AtomicUsize>,
}

impl Server {
    fn start(mode: &'static str) -> Server {
        let listener = TcpListener::bind("127.0.0.1:0").expect("bind 127.0.0.1");
        let port = listener.local_addr().expect("address").port();
        let requests = Arc::new(AtomicUsize::new(0));
        let counter = requests.clone();
        std::thread::spawn(move || {
            for stream in listener.incoming().flatten() {
                counter.fetch_add(1, Ordering::SeqCst);
                std::thread::spawn(move || {
                    let _ = answer(mode, stream);
                });
            }
        });
        Server { port, requests }
    }

    fn base_url(&self) -> String {
        format!("http://127.0.0.1:{}/v1", self.port)
    }

    fn requests(&self) -> usize {
        self.requests.load(Ordering::SeqCst)
    }
}

/// Reads one request and answers it (one request per connection: `Connection: close`).
fn answer(mode: &str, mut stream: TcpStream) -> std::io::Result<()> {
    let body = read_request(&mut stream)?;
    match mode {
        "hang" => {
            // Hold the connection until the client gives up.
            let mut sink = [0u8; 1024];
            while stream.read(&mut sink)? > 0 {}
            Ok(())
        }
        "drip" => {
            stream.write_all(
                b"HTTP/1.1 200 OK\r\nContent-Type: application/json\r\nContent-Length: 1000000\r\nConnection: close\r\n\r\n{",
            )?;
            loop {
                std::thread::sleep(Duration::from_millis(500));
                stream.write_all(b" ")?;
            }
        }
        "http500" => respond(
            &mut stream,
            "500 Internal Server Error",
            br#"{"error":{"message":"internal error","type":"server_error"}}"#,
        ),
        "big" => respond(
            &mut stream,
            "200 OK",
            &completion(&"lorem ipsum ".repeat(175_000)),
        ),
        "echo" => {
            let prompt: serde_json::Value = serde_json::from_slice(&body).unwrap_or_default();
            let user = prompt["messages"][1]["content"]
                .as_str()
                .unwrap_or_default();
            respond(&mut stream, "200 OK", &completion(user))
        }
        _ => respond(&mut stream, "200 OK", b"{\"choices\": [ this is not json"),
    }
}

fn completion(content: &str) -> Vec<u8> {
    serde_json::json!({
        "model": "fake-model",
        "choices": [{"index": 0, "finish_reason": "stop",
                     "message": {"role": "assistant", "content": content}}],
        "usage": {"prompt_tokens": 1, "completion_tokens": 1},
    })
    .to_string()
    .into_bytes()
}

fn respond(stream: &mut TcpStream, status: &str, body: &[u8]) -> std::io::Result<()> {
    let head = format!(
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n",
        body.len()
    );
    stream.write_all(head.as_bytes())?;
    stream.write_all(body)?;
    stream.flush()
}

/// The request body (headers read up to the blank line, then `Content-Length` bytes).
fn read_request(stream: &mut TcpStream) -> std::io::Result<Vec<u8>> {
    let mut reader = BufReader::new(stream.try_clone()?);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line)? == 0 {
            break;
        }
        let l = line.trim_end();
        if l.is_empty() {
            break;
        }
        if let Some((name, value)) = l.split_once(':')
            && name.eq_ignore_ascii_case("content-length")
        {
            length = value.trim().parse().unwrap_or(0);
        }
    }
    let mut body = vec![0u8; length];
    reader.read_exact(&mut body)?;
    Ok(body)
}
