//! Old image payloads: after a batch pass only the newest images keep their payload.
//!
//! A session with many screenshots would otherwise carry every one of them (the estimator
//! counts each image at a fixed cost, providers charge far more) long after the model looked
//! at it. [`strip_old_images`] plans replacing each image part of the rewritable ranges that is
//! not among the transcript's newest `keep` images by one text part naming the image's type
//! and size ([`placeholder`]). The replacement is an ordinary one-for-one splice, so the store
//! archives the original row and the payload stays recoverable; the message keeps every other
//! part and field (tool pairing is untouched). A placeholder is text, so stripping is
//! idempotent.

use std::ops::Range;

use serde_json::Value;

use crate::message::{Content, Message, Part};

/// First characters of every placeholder [`placeholder`] writes.
pub(crate) const PLACEHOLDER_PREFIX: &str = "[image removed after compaction:";

/// The text part that stands in for an image part: its media type and payload size (or that
/// it was a link), never the payload or the link itself.
fn placeholder(part: &Part) -> String {
    let what = match payload(&part.0) {
        Payload::Data { mime, bytes } => format!("{mime}, {}", size(bytes)),
        Payload::Link => "linked image".to_owned(),
        Payload::Unknown => "image".to_owned(),
    };
    format!("{PLACEHOLDER_PREFIX} {what}; the original is archived]")
}

/// Replacements for the messages of `ranges` (ascending, disjoint) that hold an image part
/// older than the transcript's newest `keep` image parts, counted over the whole transcript
/// (images outside `ranges`, such as the protected tail's, count towards `keep` and are never
/// touched). Messages listed in `skip` are left alone. Returns `(index, replacement)` in
/// ascending order.
pub(crate) fn strip_old_images(
    messages: &[Message],
    ranges: &[Range<usize>],
    keep: usize,
    skip: &[usize],
) -> Vec<(usize, Message)> {
    let mut out = Vec::new();
    let Some(first) = ranges.iter().map(|r| r.start).min() else {
        return out;
    };
    let mut seen = 0usize;
    for i in (first..messages.len()).rev() {
        let m = &messages[i];
        let count = m.content().map_or(0, Content::image_count);
        if count == 0 {
            continue;
        }
        let rewritable = ranges.iter().any(|r| r.contains(&i)) && !skip.contains(&i);
        let kept_here = keep.saturating_sub(seen).min(count);
        seen += count;
        if !rewritable || kept_here == count {
            continue;
        }
        let Some(Content::Parts(parts)) = m.content() else {
            continue;
        };
        // The newest `kept_here` images of this message keep their payload.
        let mut left_to_keep = kept_here;
        let mut new_parts: Vec<Part> = Vec::with_capacity(parts.len());
        for p in parts.iter().rev() {
            if p.is_image() {
                if left_to_keep > 0 {
                    left_to_keep -= 1;
                    new_parts.push(p.clone());
                } else {
                    new_parts.push(Part::text_part(placeholder(p)));
                }
            } else {
                new_parts.push(p.clone());
            }
        }
        new_parts.reverse();
        out.push((i, m.with_content(Some(Content::Parts(new_parts)))));
    }
    out.reverse();
    out
}

enum Payload {
    Data { mime: String, bytes: usize },
    Link,
    Unknown,
}

fn payload(part: &Value) -> Payload {
    // OpenAI chat: {"image_url": {"url": ...}} or {"image_url": "..."} (Responses input_image);
    // Anthropic: {"source": {"type": "base64", "media_type": ..., "data": ...}}.
    let url = part
        .get("image_url")
        .and_then(|v| v.get("url").or(Some(v)))
        .and_then(Value::as_str);
    if let Some(url) = url {
        return match url.strip_prefix("data:") {
            Some(rest) => {
                let (head, data) = rest.split_once(',').unwrap_or((rest, ""));
                let mime = head.split(';').next().filter(|m| !m.is_empty());
                Payload::Data {
                    mime: clean_mime(mime.unwrap_or("image")),
                    bytes: decoded_len(data, head.ends_with(";base64")),
                }
            }
            None => Payload::Link,
        };
    }
    if let Some(src) = part.get("source") {
        if let Some(data) = src.get("data").and_then(Value::as_str) {
            let mime = src
                .get("media_type")
                .and_then(Value::as_str)
                .unwrap_or("image");
            return Payload::Data {
                mime: clean_mime(mime),
                bytes: decoded_len(data, true),
            };
        }
        if src.get("url").is_some() {
            return Payload::Link;
        }
    }
    Payload::Unknown
}

/// A media type as written, kept only when it looks like one (`type/subtype` of token
/// characters, short), so no payload text reaches the placeholder.
fn clean_mime(mime: &str) -> String {
    let ok = mime.len() <= 64
        && mime.split_once('/').is_some_and(|(a, b)| {
            !a.is_empty()
                && !b.is_empty()
                && mime
                    .chars()
                    .all(|c| c.is_ascii_alphanumeric() || "/+-.".contains(c))
        });
    if ok {
        mime.to_ascii_lowercase()
    } else {
        "image".to_owned()
    }
}

fn decoded_len(data: &str, base64: bool) -> usize {
    if !base64 {
        return data.len();
    }
    let padding = data.bytes().rev().take_while(|&b| b == b'=').count();
    (data.len() / 4 * 3).saturating_sub(padding)
}

fn size(bytes: usize) -> String {
    const KB: f64 = 1024.0;
    let b = bytes as f64;
    if b >= KB * KB {
        format!("{:.1} MB", b / (KB * KB))
    } else if b >= KB {
        format!("{:.1} KB", b / KB)
    } else {
        format!("{bytes} bytes")
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::message::Role;
    use serde_json::json;

    fn shot(n: usize) -> Message {
        let mut m = Message::new(Role::User, "");
        m.set_content(Some(Content::Parts(vec![
            Part::text_part(format!("screenshot {n}")),
            Part(json!({"type": "image_url", "image_url": {"url": format!("data:image/jpeg;base64,{}", "QUJD".repeat(100 + n))}})),
        ])));
        m
    }

    #[test]
    fn only_the_newest_images_keep_their_payload() {
        let msgs: Vec<Message> = (0..6).map(shot).collect();
        // Rewritable: the first four; the newest two (outside) count towards `keep`.
        let out = strip_old_images(&msgs, std::slice::from_ref(&(0..4)), 3, &[]);
        let idx: Vec<usize> = out.iter().map(|(i, _)| *i).collect();
        assert_eq!(idx, [0, 1, 2]);
        for (i, m) in &out {
            assert_eq!(m.content().unwrap().image_count(), 0);
            assert!(m.text().contains(&format!("screenshot {i}")));
            assert!(
                m.text()
                    .contains("[image removed after compaction: image/jpeg, ")
            );
            assert!(!m.text().contains("QUJD"));
        }
        // Idempotent: placeholders are text.
        let mut after = msgs.clone();
        for (i, m) in out {
            after[i] = m;
        }
        assert!(strip_old_images(&after, std::slice::from_ref(&(0..4)), 3, &[]).is_empty());
        // Skipped messages stay as they are; nothing is stripped when all fit.
        assert_eq!(
            strip_old_images(&msgs, std::slice::from_ref(&(0..4)), 3, &[0, 1, 2]).len(),
            0
        );
        assert!(strip_old_images(&msgs, std::slice::from_ref(&(0..4)), 6, &[]).is_empty());
    }

    #[test]
    fn a_placeholder_names_the_media_type_and_size() {
        let part = Part(json!({
            "type": "image_url",
            "image_url": {"url": format!("data:image/png;base64,{}", "A".repeat(4_096))},
        }));
        assert_eq!(
            placeholder(&part),
            "[image removed after compaction: image/png, 3.0 KB; the original is archived]"
        );
    }

    #[test]
    fn placeholders_name_type_and_size_never_the_payload() {
        let cases = [
            (
                json!({"type": "image_url", "image_url": {"url": "https://example.com/a.png?token=s3cr3t"}}),
                "linked image",
            ),
            (
                json!({"type": "input_image", "image_url": "data:image/webp;base64,AAAA"}),
                "image/webp, 3 bytes",
            ),
            (
                json!({"type": "image", "source": {"type": "base64", "media_type": "image/gif", "data": "AAAAAA=="}}),
                "image/gif, 4 bytes",
            ),
            (
                json!({"type": "image_url", "image_url": {"url": "data:<script>;base64,AAAA"}}),
                "image, 3 bytes",
            ),
            (json!({"type": "image"}), "image;"),
        ];
        for (part, want) in cases {
            let text = placeholder(&Part(part));
            assert!(text.contains(want), "{text}");
            assert!(
                !text.contains("s3cr3t") && !text.contains("script"),
                "{text}"
            );
        }
    }
}
