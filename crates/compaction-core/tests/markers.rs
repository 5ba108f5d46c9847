//! Marker round trips for arbitrary bodies (a body holding marker syntax: a unit test of
//! `marker`).

use compaction_core::marker::{classify, parse_body, render};
use compaction_core::parse;
use compaction_core::{MarkerKind, Message, Role};
use proptest::prelude::*;

fn kind() -> impl Strategy<Value = MarkerKind> {
    prop::sample::select(vec![
        MarkerKind::Batch,
        MarkerKind::Micro,
        MarkerKind::Progress,
    ])
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(512))]

    #[test]
    fn any_body_round_trips(kind in kind(), user in any::<bool>(), body in any::<String>()) {
        let role = if user { Role::User } else { Role::Assistant };
        let m = render(kind, role, &body);
        prop_assert_eq!(classify(&m), Some(kind));
        prop_assert_eq!(parse_body(&m), Some(body.clone()));
        // Through a transcript file and back.
        let text = parse::to_jsonl(std::slice::from_ref(&m));
        let back = parse::parse_jsonl(&text).expect("marker parses");
        prop_assert_eq!(back[0].marker_kind(), Some(kind));
        prop_assert_eq!(parse_body(&back[0]), Some(body.clone()));
        // Stripped of metadata (what a model or another store sees), the text still decides.
        let plain = Message::from_json(&m.to_wire_json()).expect("wire JSON parses");
        prop_assert_eq!(plain.marker_kind(), None);
        prop_assert_eq!(classify(&plain), Some(kind));
        prop_assert_eq!(parse_body(&plain), Some(body));
    }

    #[test]
    fn ordinary_text_is_not_a_marker(text in "[^\\[].{0,80}") {
        prop_assert_eq!(classify(&Message::user(text.clone())), None);
        prop_assert_eq!(classify(&Message::assistant(text)), None);
    }
}
