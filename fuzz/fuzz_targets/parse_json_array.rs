//! Any text through `parse_json_array` and `Message::from_json`: never a panic, errors short,
//! and a parsed message serializes back to JSON that parses to the same message.
#![no_main]

use compaction_core::{Message, parse};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    match parse::parse_json_array(text) {
        Ok(messages) => {
            for m in &messages {
                let back = Message::from_json(&m.to_json()).expect("written message parses");
                assert_eq!(&back, m);
            }
        }
        Err(e) => assert!(e.to_string().len() < 400),
    }
    match Message::from_json(text) {
        Ok(m) => assert_eq!(Message::from_json(&m.to_json()).as_ref(), Ok(&m)),
        Err(e) => assert!(format!("{e:?}").len() < 400),
    }
});
