//! `Message`'s serde impls: lossless exactly as `from_json`/`to_json`, alone and embedded.

use compaction_core::Error;
use compaction_core::{Message, Meta};
use serde::{Deserialize, Serialize};
use serde_json::Value;

use crate::common;

/// A framework's own type holding messages.
#[derive(Debug, Serialize, Deserialize)]
struct Envelope {
    session: String,
    first: Message,
    rest: Vec<Message>,
    maybe: Option<Message>,
}

/// Every way a message leaves and comes back through serde, each compared by `to_json` bytes.
fn check_round_trips(name: &str, msgs: &[Message]) {
    for (i, m) in msgs.iter().enumerate() {
        let json = m.to_json();
        let s = serde_json::to_string(m).unwrap_or_else(|e| panic!("{name}[{i}]: {e}"));
        assert!(
            s == json,
            "{name}[{i}]: serde_json::to_string differs from to_json"
        );
        let back: Message = serde_json::from_str(&s).unwrap_or_else(|e| panic!("{name}[{i}]: {e}"));
        assert!(
            back.to_json() == json,
            "{name}[{i}]: from_str changed the message"
        );
        assert_eq!(back.is_pristine(), m.is_pristine(), "{name}[{i}]");

        let v = serde_json::to_value(m).unwrap_or_else(|e| panic!("{name}[{i}]: {e}"));
        assert_eq!(v, Value::from(m), "{name}[{i}]");
        // Through a value the key order is kept; the bytes are the value's, so compare values.
        let from_value =
            Message::try_from(v.clone()).unwrap_or_else(|e| panic!("{name}[{i}]: {e}"));
        let reread: Value = serde_json::from_str(&from_value.to_json()).expect("valid JSON");
        assert_eq!(reread, v, "{name}[{i}]: TryFrom<Value> lost a field");
        let keys = |v: &Value| v.as_object().map(|o| o.keys().cloned().collect::<Vec<_>>());
        assert_eq!(keys(&reread), keys(&v), "{name}[{i}]: key order changed");
        let via_from_value: Message =
            serde_json::from_value(v).unwrap_or_else(|e| panic!("{name}[{i}]: {e}"));
        assert!(
            via_from_value.to_json() == from_value.to_json(),
            "{name}[{i}]"
        );
    }
    // Embedded in a struct, compact and pretty.
    let env = Envelope {
        session: name.to_owned(),
        first: msgs[0].clone(),
        rest: msgs.to_vec(),
        maybe: msgs.last().cloned(),
    };
    for text in [
        serde_json::to_string(&env).expect("serializes"),
        serde_json::to_string_pretty(&env).expect("serializes"),
    ] {
        let back: Envelope = serde_json::from_str(&text).unwrap_or_else(|e| panic!("{name}: {e}"));
        assert_eq!(back.session, name);
        assert!(back.first.to_json() == msgs[0].to_json(), "{name}: first");
        assert_eq!(back.rest.len(), msgs.len(), "{name}");
        for (i, (a, b)) in back.rest.iter().zip(msgs).enumerate() {
            assert!(
                a.to_json() == b.to_json(),
                "{name}[{i}]: embedded round trip"
            );
        }
        assert!(back.maybe.as_ref().map(Message::to_json) == msgs.last().map(Message::to_json));
    }
    check_binary_formats(name, &env);
    // The compact form embeds each message's bytes verbatim.
    let compact = serde_json::to_string(&env.rest).expect("serializes");
    let expected = format!(
        "[{}]",
        msgs.iter()
            .map(Message::to_json)
            .collect::<Vec<_>>()
            .join(",")
    );
    assert!(compact == expected, "{name}: embedded bytes differ");
}

/// CBOR, MessagePack and bincode (the last not self-describing): every message, embedded in
/// a framework's struct, comes back with its exact bytes.
fn check_binary_formats(name: &str, env: &Envelope) {
    let same = |back: &Envelope, format: &str| {
        assert_eq!(back.session, env.session, "{name}: {format}");
        assert!(
            back.first.to_json() == env.first.to_json(),
            "{name}: {format} first"
        );
        assert_eq!(back.rest.len(), env.rest.len(), "{name}: {format}");
        for (i, (a, b)) in back.rest.iter().zip(&env.rest).enumerate() {
            assert!(
                a.to_json() == b.to_json(),
                "{name}[{i}]: {format} changed the message"
            );
            assert_eq!(a.meta(), b.meta(), "{name}[{i}]: {format} metadata");
        }
        assert!(
            back.maybe.as_ref().map(Message::to_json) == env.maybe.as_ref().map(Message::to_json),
            "{name}: {format} option"
        );
    };
    let mut cbor = Vec::new();
    ciborium::into_writer(env, &mut cbor).unwrap_or_else(|e| panic!("{name}: cbor {e}"));
    let back: Envelope =
        ciborium::from_reader(cbor.as_slice()).unwrap_or_else(|e| panic!("{name}: cbor {e}"));
    same(&back, "CBOR");
    let packed = rmp_serde::to_vec(env).unwrap_or_else(|e| panic!("{name}: msgpack {e}"));
    let back: Envelope =
        rmp_serde::from_slice(&packed).unwrap_or_else(|e| panic!("{name}: msgpack {e}"));
    same(&back, "MessagePack");
    let packed = rmp_serde::to_vec_named(env).unwrap_or_else(|e| panic!("{name}: msgpack {e}"));
    let back: Envelope =
        rmp_serde::from_slice(&packed).unwrap_or_else(|e| panic!("{name}: msgpack {e}"));
    same(&back, "MessagePack (named)");
    let bin = bincode::serialize(env).unwrap_or_else(|e| panic!("{name}: bincode {e}"));
    let back: Envelope =
        bincode::deserialize(&bin).unwrap_or_else(|e| panic!("{name}: bincode {e}"));
    same(&back, "bincode");
}

#[test]
fn binary_formats_refuse_what_is_not_a_message() {
    // A string that is not a message's JSON is an error naming the problem, never its text.
    let bin = bincode::serialize(&"{\"content\":\"secret text\"}").expect("serializes");
    let err = bincode::deserialize::<Message>(&bin).unwrap_err();
    assert!(err.to_string().contains("no `role`"), "{err}");
    assert!(!err.to_string().contains("secret"), "{err}");
    let mut cbor = Vec::new();
    ciborium::into_writer(&7_u32, &mut cbor).expect("serializes");
    assert!(ciborium::from_reader::<Message, _>(cbor.as_slice()).is_err());
}

#[test]
fn example_session_round_trips_through_serde() {
    let text = include_str!("../../../examples/sessions/coding-agent.jsonl");
    let msgs = compaction_core::parse::parse_jsonl(text).expect("example parses");
    assert!(msgs.len() > 300);
    check_round_trips("coding-agent.jsonl", &msgs);
}

#[test]
fn shared_fixtures_round_trip_through_serde() {
    let Some(files) = common::fixtures() else {
        return;
    };
    let mut total = 0;
    for (name, bytes) in &files {
        let msgs = compaction_core::parse::parse_jsonl(std::str::from_utf8(bytes).expect("UTF-8"))
            .unwrap_or_else(|e| panic!("{name}: {e}"));
        total += msgs.len();
        check_round_trips(name, &msgs);
    }
    assert!(total > 4_000, "{total} fixture messages");
}

#[test]
fn metadata_and_unknown_fields_survive() {
    let mut m = Message::from_json(
        r#"{"ts":1,"role":"tool","tool_call_id":"c1","content":"x","z":[1.50,"\u00e9"]}"#,
    )
    .expect("parses");
    *m.meta_mut() = Meta {
        row_id: Some(42),
        ..Meta::default()
    };
    let s = serde_json::to_string(&m).expect("serializes");
    assert_eq!(s, m.to_json());
    assert!(s.ends_with(r#""_hermes":{"row_id":42}}"#), "{s}");
    let back: Message = serde_json::from_str(&s).expect("reads");
    assert_eq!(back.row_id(), Some(42));
    assert_eq!(back, m);
    // Unknown values keep their exact bytes (number spelling, escapes).
    assert!(s.contains(r#""z":[1.50,"\u00e9"]"#), "{s}");
}

#[test]
fn bad_input_is_an_error_naming_the_problem() {
    let err = serde_json::from_str::<Message>(r#"{"content":"secret text"}"#).unwrap_err();
    assert!(err.to_string().contains("no `role`"), "{err}");
    assert!(!err.to_string().contains("secret"), "{err}");
    let err = serde_json::from_str::<Envelope>(
        r#"{"session":"s","first":{"role":"user"},"rest":[{"role":7}],"maybe":null}"#,
    )
    .unwrap_err();
    assert!(err.to_string().contains("`role`"), "{err}");
    assert_eq!(
        Message::try_from(Value::from("text")),
        Err(Error::NotAnObject { found: "a string" })
    );
    assert!(matches!(
        Message::try_from(serde_json::json!({"content": "x"})),
        Err(Error::MissingRole)
    ));
}
