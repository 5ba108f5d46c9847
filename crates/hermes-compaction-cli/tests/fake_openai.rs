//! A fake OpenAI-compatible endpoint on 127.0.0.1, for summarizer failure tests.

use std::io::{BufRead, BufReader, Read, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::atomic::{AtomicUsize, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;

/// What the endpoint answers.
#[derive(Clone, Copy, Debug)]
pub enum Reply {
    /// HTTP 500.
    ServerError,
    /// HTTP 200 with an empty completion.
    Empty,
    /// Reads the request and never answers (until well after the client's timeout).
    Hang,
    /// HTTP 200 with a short summary.
    Summary,
}

/// A running endpoint. Its thread lives as long as the test process.
pub struct Server {
    /// The base URL (`http://127.0.0.1:PORT/v1`).
    pub url: String,
    hits: Arc<AtomicUsize>,
    bodies: Arc<Mutex<Vec<String>>>,
}

impl Server {
    /// Requests received so far.
    pub fn hits(&self) -> usize {
        self.hits.load(Ordering::SeqCst)
    }

    /// The bodies of the requests received so far, in order.
    pub fn bodies(&self) -> Vec<String> {
        self.bodies.lock().unwrap().clone()
    }
}

/// Starts an endpoint answering every request with `reply`; `before_first` runs once, when
/// the first request has been read and before it is answered.
pub fn serve(reply: Reply, before_first: Option<Box<dyn FnOnce() + Send>>) -> Server {
    let listener = TcpListener::bind("127.0.0.1:0").expect("a local port");
    let url = format!("http://{}/v1", listener.local_addr().unwrap());
    let hits = Arc::new(AtomicUsize::new(0));
    let counter = hits.clone();
    let bodies = Arc::new(Mutex::new(Vec::new()));
    let received = bodies.clone();
    std::thread::spawn(move || {
        let mut before_first = before_first;
        for stream in listener.incoming() {
            let Ok(stream) = stream else { continue };
            let Some(body) = read_request(&stream) else {
                continue;
            };
            received.lock().unwrap().push(body);
            counter.fetch_add(1, Ordering::SeqCst);
            if let Some(f) = before_first.take() {
                f();
            }
            answer(stream, reply);
        }
    });
    Server { url, hits, bodies }
}

fn read_request(stream: &TcpStream) -> Option<String> {
    let mut reader = BufReader::new(stream);
    let mut length = 0usize;
    loop {
        let mut line = String::new();
        if reader.read_line(&mut line).ok()? == 0 {
            return None;
        }
        let line = line.trim_end();
        if line.is_empty() {
            break;
        }
        if let Some((k, v)) = line.split_once(':')
            && k.eq_ignore_ascii_case("content-length")
        {
            length = v.trim().parse().ok()?;
        }
    }
    let mut body = vec![0; length];
    reader.read_exact(&mut body).ok()?;
    Some(String::from_utf8_lossy(&body).into_owned())
}

fn answer(mut stream: TcpStream, reply: Reply) {
    let completion = |content: &str| {
        serde_json::json!({
            "id": "fake",
            "object": "chat.completion",
            "choices": [{
                "index": 0,
                "message": {"role": "assistant", "content": content},
                "finish_reason": "stop"
            }],
            "usage": {"prompt_tokens": 100, "completion_tokens": 20, "total_tokens": 120}
        })
        .to_string()
    };
    let (status, body) = match reply {
        Reply::ServerError => (
            "500 Internal Server Error",
            "{\"error\":{\"message\":\"boom\"}}".to_owned(),
        ),
        Reply::Empty => ("200 OK", completion("")),
        Reply::Summary => (
            "200 OK",
            completion("The user asked for the test suite several times; every run passed."),
        ),
        Reply::Hang => {
            std::thread::sleep(Duration::from_secs(5));
            return;
        }
    };
    let _ = write!(
        stream,
        "HTTP/1.1 {status}\r\nContent-Type: application/json\r\nContent-Length: {}\r\nConnection: close\r\n\r\n{body}",
        body.len()
    );
}

/// A configuration file in `dir` for the openai summarizer at `url`: no key, no retries, a
/// one-second timeout, and the extractive fallback as `fallback` says.
pub fn config(dir: &Path, url: &str, fallback: bool) -> PathBuf {
    let p = dir.join(format!("openai-{fallback}.toml"));
    std::fs::write(
        &p,
        format!(
            "[compression]\nfallback_to_extractive = {fallback}\n\n[auxiliary.compression]\n\
             provider = \"openai\"\nmodel = \"fake\"\nbase_url = \"{url}\"\napi_key_env = \"\"\n\
             timeout = 1\nmax_retries = 0\n"
        ),
    )
    .unwrap();
    p
}
