//! When a message was sent: its `timestamp` or `created_at` field, or the time its line of an
//! agent's log carries ([`stamp_from_lines`]), as unix milliseconds.

use hermes_compaction::core::Message;
use serde_json::Value;

/// The key of the library metadata (never sent on the wire, never counted) that holds the time
/// [`stamp_from_lines`] read from a message's line of an agent's log.
pub const META_KEY: &str = "sent_at_ms";

/// A message's `timestamp` (or `created_at`) in unix milliseconds: a number (seconds, or
/// milliseconds when it is 10^11 or more), a numeric string, or an RFC 3339 string; else the
/// time [`stamp_from_lines`] put in its metadata.
pub fn timestamp_ms(m: &Message) -> Option<u64> {
    let raw = m
        .extra_fields()
        .find(|(k, _)| *k == "timestamp" || *k == "created_at")
        .map(|(_, v)| v);
    match raw {
        Some(raw) => value_ms(&serde_json::from_str(raw).ok()?),
        None => m.meta()?.extra.get(META_KEY)?.as_u64(),
    }
}

/// The time one line of a log carries: its top-level `timestamp` (or `created_at`), as
/// [`timestamp_ms`] reads it. Claude Code, Codex and pi write one on every line.
pub fn line_timestamp_ms(line: &str) -> Option<u64> {
    let Ok(Value::Object(obj)) = serde_json::from_str::<Value>(line) else {
        return None;
    };
    value_ms(obj.get("timestamp").or_else(|| obj.get("created_at"))?)
}

/// Stamps each message with the time of the log line it was read from (`line_of(i)`, 1-based,
/// into `text`), in its library metadata under [`META_KEY`], so the replay sees an agent log's
/// real gaps between requests while the wire form (and so every token count) stays the one
/// of the normalized transcript. A message that already carries a `timestamp` field, or whose
/// line carries none, is left alone. Returns how many were stamped.
///
/// ```
/// use compaction_sim::time;
/// use hermes_compaction::core::Message;
///
/// let log = "{\"type\":\"user\",\"timestamp\":\"2026-01-01T00:00:00Z\"}\n\
///            {\"type\":\"assistant\",\"timestamp\":\"2026-01-01T00:06:00Z\"}";
/// let mut msgs = vec![Message::user("hi"), Message::assistant("hello")];
/// let wire = msgs[1].to_wire_json();
/// assert_eq!(time::stamp_from_lines(&mut msgs, log, |i| Some(i + 1)), 2);
/// assert_eq!(time::timestamp_ms(&msgs[1]), Some(1_767_225_960_000));
/// assert_eq!(msgs[1].to_wire_json(), wire); // nothing on the wire
/// ```
pub fn stamp_from_lines(
    messages: &mut [Message],
    text: &str,
    line_of: impl Fn(usize) -> Option<usize>,
) -> usize {
    let lines: Vec<&str> = text.split('\n').collect();
    let mut stamped = 0;
    for (i, m) in messages.iter_mut().enumerate() {
        if timestamp_ms(m).is_some() {
            continue;
        }
        let Some(ms) = line_of(i)
            .and_then(|n| lines.get(n.checked_sub(1)?))
            .and_then(|l| line_timestamp_ms(l))
        else {
            continue;
        };
        m.meta_mut().extra.insert(META_KEY.into(), Value::from(ms));
        stamped += 1;
    }
    stamped
}

/// A JSON time: a number (seconds, or milliseconds when it is 10^11 or more), a numeric
/// string, or an RFC 3339 string.
fn value_ms(v: &Value) -> Option<u64> {
    let number = match v {
        Value::Number(n) => n.as_f64(),
        Value::String(s) => match s.trim().parse::<f64>() {
            Ok(n) => Some(n),
            Err(_) => return rfc3339_ms(s.trim()),
        },
        _ => None,
    }?;
    if !number.is_finite() || number < 0.0 {
        return None;
    }
    Some(if number >= 1e11 {
        number as u64
    } else {
        (number * 1e3) as u64
    })
}

/// `YYYY-MM-DD[T ]HH:MM:SS[.fff][Z|+HH:MM|-HH:MM]` in unix milliseconds (no zone: UTC).
fn rfc3339_ms(s: &str) -> Option<u64> {
    let b = s.as_bytes();
    let num = |r: std::ops::Range<usize>| -> Option<i64> {
        let part = s.get(r)?;
        part.bytes()
            .all(|c| c.is_ascii_digit())
            .then(|| part.parse().ok())?
    };
    if b.len() < 19 || b[4] != b'-' || b[7] != b'-' || !matches!(b[10], b'T' | b't' | b' ') {
        return None;
    }
    let (y, mo, d) = (num(0..4)?, num(5..7)?, num(8..10)?);
    let (h, mi, sec) = (num(11..13)?, num(14..16)?, num(17..19)?);
    if !(1..=12).contains(&mo) || !(1..=31).contains(&d) || h > 23 || mi > 59 || sec > 60 {
        return None;
    }
    let mut i = 19;
    let mut millis = 0i64;
    if b.get(i) == Some(&b'.') {
        let start = i + 1;
        i = start;
        while b.get(i).is_some_and(u8::is_ascii_digit) {
            i += 1;
        }
        let frac = s.get(start..i)?;
        let digits: String = frac.chars().chain("000".chars()).take(3).collect();
        millis = digits.parse().ok()?;
    }
    let offset_secs = match s.get(i..)? {
        "" | "Z" | "z" => 0,
        z if z.len() == 6 && matches!(&z[..1], "+" | "-") && &z[3..4] == ":" => {
            let v = num(i + 1..i + 3)? * 3_600 + num(i + 4..i + 6)? * 60;
            if z.starts_with('-') { -v } else { v }
        }
        _ => return None,
    };
    // Days from the civil date (Howard Hinnant's algorithm).
    let y = if mo <= 2 { y - 1 } else { y };
    let era = y.div_euclid(400);
    let yoe = y - era * 400;
    let mp = (mo + 9) % 12;
    let doy = (153 * mp + 2) / 5 + d - 1;
    let doe = yoe * 365 + yoe / 4 - yoe / 100 + doy;
    let days = era * 146_097 + doe - 719_468;
    let secs = days * 86_400 + h * 3_600 + mi * 60 + sec - offset_secs;
    u64::try_from(secs * 1_000 + millis).ok()
}

#[cfg(test)]
mod tests {
    use super::*;

    fn stamped(raw: &str) -> Message {
        Message::from_json(&format!(
            r#"{{"role":"user","content":"x","timestamp":{raw}}}"#
        ))
        .unwrap()
    }

    #[test]
    fn timestamps_in_seconds_milliseconds_and_rfc3339() {
        let at = |raw: &str| timestamp_ms(&stamped(raw));
        // 2026-01-01T00:00:00Z = 1767225600 s.
        assert_eq!(at("1767225600"), Some(1_767_225_600_000));
        assert_eq!(at("1767225600.5"), Some(1_767_225_600_500));
        assert_eq!(at("1767225600123"), Some(1_767_225_600_123));
        assert_eq!(at(r#""1767225600""#), Some(1_767_225_600_000));
        assert_eq!(at(r#""2026-01-01T00:00:00Z""#), Some(1_767_225_600_000));
        assert_eq!(at(r#""2026-01-01T00:00:00.25Z""#), Some(1_767_225_600_250));
        assert_eq!(
            at(r#""2026-01-01 02:00:00+02:00""#),
            Some(1_767_225_600_000)
        );
        assert_eq!(at(r#""2024-02-29T12:00:00""#), Some(1_709_208_000_000));
        for bad in [
            r#""yesterday""#,
            r#""2026-13-01T00:00:00Z""#,
            "-5",
            "null",
            "true",
        ] {
            assert_eq!(at(bad), None, "{bad}");
        }
        assert_eq!(timestamp_ms(&Message::user("no stamp")), None);
    }
}
