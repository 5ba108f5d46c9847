use super::*;
use crate::error::Error;

fn check_roundtrip(line: &str) {
    let m = Message::from_json(line).expect("parses");
    assert_eq!(m.to_json(), line.trim());
}

#[test]
fn pristine_roundtrip_is_byte_identical() {
    check_roundtrip(r#"{"role":"user","content":"caf\u00e9 \/ x"}"#);
    check_roundtrip(r#"{ "role" : "assistant", "reasoning_content": "hmm", "content": null }"#);
    check_roundtrip(
        r#"{"role":"assistant","content":"","tool_calls":[{"id":"a","type":"function","function":{"name":"ls","arguments":"{}"}}],"ts":1.50}"#,
    );
}

#[test]
fn modified_body_keeps_unknown_fields_verbatim_and_in_order() {
    let line = r#"{"id":"x1","role":"assistant","content":"old","reasoning":{"a":1.50,"b":"\u00e9"},"ts":12}"#;
    let mut m = Message::from_json(line).unwrap();
    m.set_text("new");
    assert_eq!(
        m.to_json(),
        r#"{"id":"x1","role":"assistant","content":"new","reasoning":{"a":1.50,"b":"\u00e9"},"ts":12}"#
    );
}

#[test]
fn meta_is_kept_apart_and_stripped_from_wire() {
    let line = r#"{"role":"assistant","content":"s","_hermes":{"marker":"micro","row_id":7}}"#;
    let m = Message::from_json(line).unwrap();
    assert_eq!(m.marker_kind(), Some(MarkerKind::Micro));
    assert_eq!(m.row_id(), Some(7));
    assert_eq!(m.to_wire_json(), r#"{"role":"assistant","content":"s"}"#);
    assert_eq!(m.to_json(), line);
}

#[test]
fn multi_line_input_serializes_to_one_line() {
    let pretty = "{\n  \"role\": \"user\",\n  \"content\": \"a \\n b\",\n  \"x\": {\n    \"n\": 1.50\n  }\n}";
    let m = Message::from_json(pretty).unwrap();
    assert_eq!(
        m.to_json(),
        r#"{"role":"user","content":"a \n b","x":{"n":1.50}}"#
    );
    let mut edited = m.clone();
    edited.set_text("b");
    assert_eq!(
        edited.to_json(),
        r#"{"role":"user","content":"b","x":{"n":1.50}}"#
    );
}

#[test]
fn null_tool_calls_stay_null_when_the_body_is_rewritten() {
    let mut m =
        Message::from_json(r#"{"role":"assistant","content":"a","tool_calls":null}"#).unwrap();
    assert!(!m.has_tool_calls());
    m.set_text("b");
    assert_eq!(
        m.to_json(),
        r#"{"role":"assistant","content":"b","tool_calls":null}"#
    );
    m.tool_calls_mut()
        .unwrap()
        .push(ToolCall::function("c", "f", "{}"));
    assert!(m.to_json().contains(r#""tool_calls":[{"id":"c""#));
    let mut empty =
        Message::from_json(r#"{"role":"assistant","content":"a","tool_calls":[]}"#).unwrap();
    empty.set_text("b");
    assert_eq!(
        empty.to_json(),
        r#"{"role":"assistant","content":"b","tool_calls":[]}"#
    );
}

#[test]
fn errors_name_the_problem() {
    assert_eq!(
        Message::from_json(r#"{"content":"x"}"#).unwrap_err(),
        Error::MissingRole
    );
    assert_eq!(
        Message::from_json("[1]").unwrap_err(),
        Error::NotAnObject { found: "an array" }
    );
    assert!(matches!(
        Message::from_json(r#"{"role":"user","content":5}"#).unwrap_err(),
        Error::InvalidField {
            field: "content",
            ..
        }
    ));
    assert!(matches!(
        Message::from_json(r#"{"role":"user","role":"user"}"#).unwrap_err(),
        Error::DuplicateKey { .. }
    ));
    assert!(matches!(
        Message::from_json(r#"{"role":"us"#).unwrap_err(),
        Error::Json { .. }
    ));
}

#[test]
fn clones_share_until_written_and_a_write_never_reaches_the_other() {
    let line = r#"{"role":"assistant","content":"original","x-extra":{"a":1}}"#;
    let original = Message::from_json(line).unwrap();
    let edits: [fn(&mut Message); 6] = [
        |m| m.set_text("changed"),
        |m| m.set_content(None),
        |m| m.set_role(Role::User),
        |m| m.set_tool_calls(Some(vec![ToolCall::function("c", "f", "{}")])),
        |m| m.meta_mut().row_id = Some(7),
        |m| {
            *m.meta_mut() = Meta {
                row_id: Some(1),
                ..Meta::default()
            }
        },
    ];
    for edit in edits {
        let mut copy = original.clone();
        assert!(Arc::ptr_eq(&copy.b, &original.b), "a clone shares the body");
        edit(&mut copy);
        assert_ne!(copy.to_json(), original.to_json());
        assert_eq!(original.to_json(), line, "the original is untouched");
        assert_eq!(original.meta(), None);
    }
    // An unshared message is written in place.
    let mut alone = original.clone();
    drop(original);
    let before = Arc::as_ptr(&alone.b);
    alone.set_text("in place");
    assert_eq!(Arc::as_ptr(&alone.b), before);
    assert_eq!(alone.text(), "in place");
}

#[test]
fn parts_and_unknown_roles_survive() {
    let line = r#"{"role":"critic","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:x"}},{"type":"audio","x":1}]}"#;
    let mut m = Message::from_json(line).unwrap();
    assert_eq!(m.role(), &Role::Other("critic".into()));
    assert_eq!(m.content().unwrap().image_count(), 1);
    assert_eq!(m.text(), "a");
    m.set_name(Some("n".into()));
    assert_eq!(
        m.to_json(),
        r#"{"role":"critic","content":[{"type":"text","text":"a"},{"type":"image_url","image_url":{"url":"data:x"}},{"type":"audio","x":1}],"name":"n"}"#
    );
}
