//! Any bytes through `parse_transcript` (JSONL or a JSON array, detected): never a panic; an
//! error is short (it never quotes the input); what parses writes back and parses again to the
//! same messages.
#![no_main]

use compaction_core::parse;
use libfuzzer_sys::fuzz_target;

fuzz_target!(|data: &[u8]| {
    match parse::parse_transcript(data) {
        Ok((messages, _)) => {
            let text = parse::to_jsonl(&messages);
            let again = parse::parse_jsonl(&text).expect("written JSONL parses");
            assert_eq!(again, messages);
            for m in &messages {
                let wire = m.to_wire_json();
                assert!(!wire.contains('\n'), "one message is one line");
                let _ = m.to_wire_value();
            }
        }
        Err(e) => {
            let shown = format!("{e} {e:?}");
            assert!(shown.len() < 400, "an error quoted its input: {} bytes", shown.len());
        }
    }
});
