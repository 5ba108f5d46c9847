//! Parse / serialize round trips for generated transcripts.

use compaction_core::Message;
use compaction_core::parse::{self, Format};
use compaction_core::strategies;
use proptest::prelude::*;

fn as_json_array(messages: &[Message]) -> String {
    let items: Vec<String> = messages.iter().map(Message::to_json).collect();
    format!("[{}]", items.join(","))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    #[test]
    fn jsonl_round_trips_byte_for_byte(msgs in strategies::transcript()) {
        let text = parse::to_jsonl(&msgs);
        let parsed = parse::parse_jsonl(&text).expect("generated JSONL parses");
        prop_assert_eq!(parsed.len(), msgs.len());
        prop_assert_eq!(parse::to_jsonl(&parsed), text.clone());
        let (again, format) = parse::parse_transcript(text.as_bytes()).expect("detects JSONL");
        prop_assert_eq!(format, Format::Jsonl);
        prop_assert_eq!(again, parsed);
    }

    #[test]
    fn jsonl_with_markers_round_trips(msgs in strategies::transcript_with_markers()) {
        let text = parse::to_jsonl(&msgs);
        let parsed = parse::parse_jsonl(&text).expect("generated JSONL parses");
        prop_assert_eq!(parse::to_jsonl(&parsed), text);
        // Metadata survives and never reaches the wire.
        for (a, b) in msgs.iter().zip(&parsed) {
            prop_assert_eq!(a.marker_kind(), b.marker_kind());
            prop_assert!(!b.to_wire_json().contains("_hermes"));
        }
    }

    #[test]
    fn json_arrays_round_trip(msgs in strategies::transcript_with_markers()) {
        let text = as_json_array(&msgs);
        let (parsed, format) = parse::parse_transcript(text.as_bytes()).expect("array parses");
        prop_assert_eq!(format, Format::JsonArray);
        prop_assert_eq!(as_json_array(&parsed), text.clone());
        // Pretty-printed arrays parse to the same messages (bodies reformatted, not lost).
        let pretty = serde_json::to_string_pretty(&serde_json::from_str::<serde_json::Value>(&text).unwrap()).unwrap();
        let (from_pretty, _) = parse::parse_transcript(pretty.as_bytes()).expect("pretty array parses");
        prop_assert_eq!(from_pretty.len(), msgs.len());
        for (a, b) in msgs.iter().zip(&from_pretty) {
            prop_assert_eq!(a.to_wire_value(), b.to_wire_value());
            prop_assert_eq!(a.marker_kind(), b.marker_kind());
            prop_assert_eq!(a.text(), b.text());
        }
    }

    #[test]
    fn edits_keep_unknown_fields_verbatim(msgs in strategies::transcript(), replacement in ".{0,40}") {
        for m in &msgs {
            let mut edited = m.clone();
            edited.set_text(replacement.clone());
            let reparsed = Message::from_json(&edited.to_json()).expect("edited message parses");
            prop_assert_eq!(reparsed.text(), replacement.as_str());
            let before: Vec<(&str, &str)> = m.extra_fields().collect();
            let after: Vec<(String, String)> = reparsed
                .extra_fields()
                .map(|(k, v)| (k.to_owned(), v.to_owned()))
                .collect();
            prop_assert_eq!(before.len(), after.len());
            for ((k1, v1), (k2, v2)) in before.iter().zip(&after) {
                prop_assert_eq!(*k1, k2.as_str());
                prop_assert_eq!(*v1, v2.as_str());
            }
        }
    }
}
