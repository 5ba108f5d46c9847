//! The marker parser on any text and any message: never a panic; a marker the library renders
//! is classified as what it is, and its body reads back.
#![no_main]

use compaction_core::{MarkerKind, Message, Role, marker};
use libfuzzer_sys::fuzz_target;

fuzz_target!(|text: &str| {
    for m in [Message::user(text), Message::assistant(text)] {
        let _ = marker::classify(&m);
        let _ = marker::parse_body(&m);
    }
    if let Ok(m) = Message::from_json(text) {
        let _ = marker::classify(&m);
        let _ = marker::parse_body(&m);
    }
    for kind in [MarkerKind::Batch, MarkerKind::Micro, MarkerKind::Progress] {
        let m = marker::render(kind, Role::Assistant, text);
        assert_eq!(marker::classify(&Message::user(m.text())), Some(kind));
        assert_eq!(marker::classify(&m), Some(kind));
        assert!(marker::parse_body(&m).is_some());
    }
});
