//! The reader survives garbage, binary bytes, cut lines, overlong lines and a 200 MB stream.

use std::io::{self, Read};

use compaction_telemetry::{MAX_LINE_BYTES, Report, ReportOptions};
use proptest::prelude::*;

const MICRO: &str = r#"micro compaction telemetry: {"duration_ms":12,"event":"micro_compaction","exchange_tokens":500,"occupancy_pct":41.5,"outcome":"absorbed","session_id":"s","tokens_after":900,"tokens_before":1000,"tokens_delta":-100}"#;

fn report(bytes: &[u8]) -> Report {
    Report::from_readers([bytes], ReportOptions::default()).unwrap()
}

#[test]
fn cut_lines_are_counted_and_their_remainders_ignored() {
    let (head, tail) = MICRO.split_at(MICRO.len() / 2);
    let log = format!(
        "{MICRO}\nINFO x: {head}\n{tail}\n{MICRO}\n{}",
        &MICRO[..MICRO.len() - 1]
    );
    let r = report(log.as_bytes());
    assert_eq!(r.input.lines, 5);
    assert_eq!(r.input.events, 2);
    // The first half and the final line (missing its closing brace) are malformed; the
    // second half has no prefix and is an ordinary line.
    assert_eq!(r.input.malformed_lines, 2);
    assert_eq!(r.overall.micro.passes, 2);
    assert_eq!(r.overall.micro.net_tokens_saved, 200);
}

#[test]
fn binary_bytes_and_invalid_utf8_are_skipped_and_counted() {
    let mut log = Vec::new();
    log.extend_from_slice(MICRO.as_bytes());
    log.push(b'\n');
    log.extend_from_slice(&[0xff, 0xfe, 0x00, 0x01, b'\n']);
    // A telemetry line cut in the middle of a multi-byte character.
    let cjk = "micro compaction telemetry: {\"session_id\":\"会话\"}";
    let bytes = cjk.as_bytes();
    let at = cjk.find('话').unwrap() + 1;
    log.extend_from_slice(&bytes[..at]);
    log.push(b'\n');
    log.extend_from_slice(&[0u8; 300]);
    log.push(b'\n');
    log.extend_from_slice(MICRO.as_bytes());
    let r = report(&log);
    assert_eq!(r.input.lines, 5);
    assert_eq!(r.input.events, 2);
    assert_eq!(r.input.non_utf8_lines, 2);
    // NUL bytes are valid UTF-8: an ordinary line.
    assert_eq!(r.input.malformed_lines, 0);
}

#[test]
fn random_garbage_never_fails_and_valid_lines_still_count() {
    let mut state = 0x9e37_79b9_7f4a_7c15_u64;
    let mut next = move || {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        state
    };
    let mut log = Vec::new();
    for i in 0..2_000 {
        if i % 10 == 0 {
            log.extend_from_slice(MICRO.as_bytes());
            log.push(b'\n');
        }
        let len = (next() % 400) as usize;
        for _ in 0..len {
            let b = next() as u8;
            // Keep the garbage on its own line.
            log.push(if b == b'\n' { b'.' } else { b });
        }
        if i % 7 == 0 {
            log.extend_from_slice(b" micro compaction telemetry: {\"tokens_delta\":");
        }
        log.push(b'\n');
    }
    let r = report(&log);
    assert_eq!(r.input.lines, 2_000 + 200);
    assert_eq!(r.overall.micro.passes, 200);
    assert_eq!(r.overall.micro.net_tokens_saved, 200 * 100);
    assert_eq!(
        r.input.events + r.input.malformed_lines + r.input.non_utf8_lines,
        r.input.lines - (r.input.lines - r.input.events - r.input.skipped_lines())
    );
    assert!(r.input.non_utf8_lines > 1_000, "{:?}", r.input);
}

#[test]
fn an_overlong_line_is_skipped_without_losing_its_neighbours() {
    let mut log = Vec::new();
    log.extend_from_slice(MICRO.as_bytes());
    log.push(b'\n');
    log.extend_from_slice(MICRO.as_bytes());
    log.extend(std::iter::repeat_n(b'x', MAX_LINE_BYTES + 10));
    log.push(b'\n');
    log.extend_from_slice(MICRO.as_bytes());
    log.push(b'\n');
    let r = report(&log);
    assert_eq!(r.input.lines, 3);
    assert_eq!(r.input.overlong_lines, 1);
    assert_eq!(r.input.events, 2);
}

proptest! {
    #[test]
    fn any_bytes_give_consistent_counts(bytes in proptest::collection::vec(any::<u8>(), 0..2_000)) {
        if bytes.starts_with(&[0x1f, 0x8b]) {
            // Read as gzip: random bytes after the magic are a corrupt archive, read up to the
            // damage and counted (or, without the `gzip` feature, refused), never a panic.
            match Report::from_readers([&bytes[..]], ReportOptions::default()) {
                Ok(r) => {
                    prop_assert!(r.input.truncated_inputs <= 1);
                    prop_assert!(r.input.events + r.input.skipped_lines() <= r.input.lines);
                }
                Err(_) => prop_assert!(!cfg!(feature = "gzip")),
            }
            return Ok(());
        }
        let r = report(&bytes);
        let newlines = bytes.iter().filter(|&&b| b == b'\n').count() as u64;
        let last_unterminated = u64::from(!bytes.is_empty() && bytes.last() != Some(&b'\n'));
        prop_assert_eq!(r.input.lines, newlines + last_unterminated);
        prop_assert!(r.input.events + r.input.skipped_lines() <= r.input.lines);
    }

    #[test]
    fn any_text_after_a_prefix_is_an_event_or_malformed(
        prefix in prop::sample::select(vec![
            "micro compaction telemetry: ",
            "context compression attempt telemetry: ",
            "compaction turn telemetry: ",
            "insert trim telemetry: ",
        ]),
        rest in "[ -~]{0,200}",
    ) {
        let line = format!("2026-01-01 INFO x: {prefix}{rest}");
        let r = report(line.as_bytes());
        prop_assert_eq!(r.input.events + r.input.malformed_lines, 1);
    }
}

/// Yields `lines` synthetic log lines (~200 bytes each) without materializing them.
struct SyntheticLog {
    lines: u64,
    n: u64,
    line: Vec<u8>,
    pos: usize,
}

/// Per 100 lines: one micro pass, one turn, one cut telemetry line, one binary line.
const SESSIONS: u64 = 7;

impl SyntheticLog {
    fn new(lines: u64) -> SyntheticLog {
        SyntheticLog {
            lines,
            n: 0,
            line: Vec::with_capacity(512),
            pos: 0,
        }
    }

    fn next_line(&mut self) {
        let n = self.n;
        self.n += 1;
        self.pos = 0;
        self.line.clear();
        let s = n % SESSIONS;
        let ts = "2026-03-14T10:00:00.000001Z  INFO";
        let text = match n % 100 {
            0 => format!(
                "{ts} hermes_compaction::telemetry: micro compaction telemetry: {{\"duration_ms\":{},\"event\":\"micro_compaction\",\"exchange_tokens\":700,\"occupancy_pct\":{}.5,\"outcome\":\"absorbed\",\"session_id\":\"s{s}\",\"tokens_after\":9000,\"tokens_before\":9100,\"tokens_delta\":-100}}",
                n / 100 % 50,
                n / 100 % 90
            ),
            50 => format!(
                "{ts} hermes_compaction::telemetry: compaction turn telemetry: {{\"event\":\"compaction_turn\",\"occupancy_pct\":40.0,\"prompt_tokens\":10,\"session_id\":\"s{s}\",\"turn\":{n}}}"
            ),
            66 => format!(
                "{ts} hermes_compaction::telemetry: micro compaction telemetry: {{\"duration_ms\":1,\"ev"
            ),
            33 => {
                self.line.extend_from_slice(&[0xc3, 0x28, 0xff, b'\n']);
                return;
            }
            _ => format!(
                "{ts} agent.run: API call #{n}: model=main-large in=123456 out=789 cache=100000/123456 (81%) elapsed=1.234s padding................................"
            ),
        };
        self.line.extend_from_slice(text.as_bytes());
        self.line.push(b'\n');
    }
}

impl Read for SyntheticLog {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        if self.pos == self.line.len() {
            if self.n == self.lines {
                return Ok(0);
            }
            self.next_line();
        }
        let k = out.len().min(self.line.len() - self.pos);
        out[..k].copy_from_slice(&self.line[self.pos..self.pos + k]);
        self.pos += k;
        Ok(k)
    }
}

/// Peak resident memory of this process in KiB (Linux only).
fn peak_rss_kib() -> Option<u64> {
    let status = std::fs::read_to_string("/proc/self/status").ok()?;
    let line = status.lines().find(|l| l.starts_with("VmHWM:"))?;
    line.split_whitespace().nth(1)?.parse().ok()
}

#[test]
fn a_200_mb_log_streams_in_bounded_memory() {
    const LINES: u64 = 1_150_000;
    let before = peak_rss_kib();
    let mut log = SyntheticLog::new(LINES);
    let mut bytes = 0u64;
    let counting = Read::by_ref(&mut log);
    let mut counter = CountingReader {
        inner: counting,
        bytes: &mut bytes,
    };
    let r = Report::from_readers([&mut counter], ReportOptions::default()).unwrap();
    assert!(bytes >= 200_000_000, "only {bytes} bytes generated");
    assert_eq!(r.input.lines, LINES);
    assert_eq!(r.input.events, LINES / 100 * 2);
    assert_eq!(r.input.malformed_lines, LINES / 100);
    assert_eq!(r.input.non_utf8_lines, LINES / 100);
    assert_eq!(r.overall.sessions, SESSIONS);
    assert_eq!(r.overall.micro.passes, LINES / 100);
    assert_eq!(r.overall.micro.net_tokens_saved, (LINES / 100 * 100) as i64);
    assert_eq!(r.overall.micro.duration_ms.unwrap().max, 49);
    assert_eq!(r.overall.turns.turns, LINES / 100);
    // Holding the input would need 200 MB; the report needs a few buffers and counters.
    if let (Some(before), Some(after)) = (before, peak_rss_kib()) {
        assert!(
            after.saturating_sub(before) < 100 * 1024,
            "peak RSS grew by {} KiB",
            after - before
        );
    }
}

struct CountingReader<'a, R> {
    inner: R,
    bytes: &'a mut u64,
}

impl<R: Read> Read for CountingReader<'_, R> {
    fn read(&mut self, out: &mut [u8]) -> io::Result<usize> {
        let n = self.inner.read(out)?;
        *self.bytes += n as u64;
        Ok(n)
    }
}
