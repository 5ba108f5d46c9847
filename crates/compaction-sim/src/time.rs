//! When a message was sent: its `timestamp` or `created_at` field, as unix milliseconds.

use hermes_compaction::core::Message;

/// A message's `timestamp` (or `created_at`) in unix milliseconds: a number (seconds, or
/// milliseconds when it is 10^11 or more), a numeric string, or an RFC 3339 string.
pub fn timestamp_ms(m: &Message) -> Option<u64> {
    let raw = m
        .extra_fields()
        .find(|(k, _)| *k == "timestamp" || *k == "created_at")?
        .1;
    let v: serde_json::Value = serde_json::from_str(raw).ok()?;
    let number = match &v {
        serde_json::Value::Number(n) => n.as_f64(),
        serde_json::Value::String(s) => match s.trim().parse::<f64>() {
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
