//! The conversion both ways: rig -> ours -> rig is the identity; ours -> rig -> ours keeps
//! every role, text, call and result, and is byte-stable from the second trip on.

use compaction_anthropic as anthropic;
use compaction_core::Message;
use hermes_compaction_rig::{Error, from_rig, to_rig};
use proptest::prelude::*;
use rig_core::completion::Message as RigMessage;
use rig_core::message::{
    AssistantContent, AssistantMessage, CallId, Document, DocumentMediaType, DocumentSourceKind,
    Image, ImageDetail, ImageMediaType, LocalCallId, Opaque, Origin, Reasoning, StopReason,
    ToolCall, ToolFunction, ToolName, ToolResult, ToolResultContent, UserContent,
};
use serde_json::{Value, json};

fn name(s: &str) -> ToolName {
    ToolName::new(s).unwrap()
}

fn call(id: &str, tool: &str, args: Value) -> ToolCall {
    ToolCall::from_wire(id, ToolFunction::new(name(tool), args))
}

/// rig -> ours -> rig is the identity, and ours survives the store's body-only round trip
/// (metadata dropped, bodies re-parsed) with the same result.
fn check_rig(rig: &[RigMessage]) {
    let ours = from_rig(rig).unwrap();
    assert_eq!(to_rig(&ours).unwrap(), rig, "through the dialect");
    let bodies: Vec<Message> = ours
        .iter()
        .map(|m| Message::from_json(&m.to_wire_json()).unwrap())
        .collect();
    assert_eq!(
        to_rig(&bodies).unwrap(),
        rig,
        "through bodies only (the store)"
    );
}

fn signed_thinking() -> AssistantContent {
    AssistantContent::Reasoning(Reasoning::new("I should list the files.")).with_native(json!({
        "type": "thinking",
        "thinking": "I should list the files.",
        "signature": "EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+/Q2B==",
    }))
}

#[test]
fn a_tool_loop_with_signed_thinking_round_trips() {
    let c1 = call("toolu_1", "bash", json!({"cmd": "ls", "n": 2}));
    let rig = vec![
        RigMessage::system("You are terse."),
        RigMessage::user("list the files"),
        RigMessage::Assistant(AssistantMessage::new(vec![
            signed_thinking(),
            AssistantContent::text("Listing."),
            AssistantContent::ToolCall(c1.clone()),
        ])),
        RigMessage::tool_results(vec![
            c1.result(vec![ToolResultContent::text("a.txt\nb.txt")]),
        ]),
        RigMessage::assistant("Two files."),
    ];
    check_rig(&rig);
    let ours = from_rig(&rig).unwrap();
    // The laws' view: a call answered by a tool message.
    assert_eq!(ours[2].tool_calls()[0].call_id(), "toolu_1");
    assert_eq!(ours[3].tool_call_id(), Some("toolu_1"));
    // The signed block is byte-identical in our message, and after the dialect writes it.
    let block = r#"{"type":"thinking","thinking":"I should list the files.","signature":"EqQBCgIYAhIM1gbcDa9GJwZA2b3hGgxBdjrkzLoky3dl1pkiMOYds+/Q2B=="}"#;
    assert!(ours[2].to_wire_json().contains(block));
    assert!(anthropic::to_jsonl(&ours).contains(block));
    // And back in rig, the provider item is the same value, still current.
    let back = to_rig(&ours).unwrap();
    let RigMessage::Assistant(a) = &back[2] else {
        panic!("not an assistant message")
    };
    assert!(a.content[0].native_item().is_some());
    assert_eq!(
        serde_json::to_string(a.content[0].native_item().unwrap()).unwrap(),
        block
    );
}

#[test]
fn redacted_and_foreign_reasoning_round_trip() {
    let redacted = AssistantContent::Reasoning(Reasoning {
        text: String::new(),
        redacted: true,
        native: None,
    })
    .with_native(json!({"type": "redacted_thinking", "data": "EmwKAhgBEgy3va3pzix/LafPsn4a"}));
    // Reasoning of another provider (no Anthropic item), and an edited signed block (its
    // item is stale): both kept whole.
    let stale = match signed_thinking() {
        AssistantContent::Reasoning(mut r) => {
            r.text.push_str(" (edited)");
            AssistantContent::Reasoning(r)
        }
        _ => unreachable!(),
    };
    let rig = vec![
        RigMessage::user("q"),
        RigMessage::Assistant(AssistantMessage::new(vec![
            redacted,
            AssistantContent::reasoning("plain reasoning"),
            stale,
            AssistantContent::text("a"),
        ])),
    ];
    check_rig(&rig);
    let ours = from_rig(&rig).unwrap();
    assert!(
        ours[1]
            .to_wire_json()
            .contains(r#"{"type":"redacted_thinking","data":"EmwKAhgBEgy3va3pzix/LafPsn4a"}"#)
    );
}

#[test]
fn media_documents_ids_and_rig_only_fields_round_trip() {
    let local = ToolCall::new(
        CallId::Local(LocalCallId::new()),
        ToolFunction::parse(name("search"), r#"{"q": "ab"#),
    );
    let provider_item = AssistantContent::ToolCall(call("toolu_9", "read", json!({"path": "a"})))
        .with_native(json!({"type": "tool_use", "id": "toolu_9", "name": "read", "input": {"path": "a"}, "caller": {"type": "direct"}}));
    let AssistantContent::ToolCall(native_call) = provider_item.clone() else {
        unreachable!()
    };
    let image = Image {
        data: DocumentSourceKind::base64("iVBORw0KGgo="),
        media_type: Some(ImageMediaType::PNG),
        detail: Some(ImageDetail::High),
        native: None,
    };
    let url_image = Image {
        data: DocumentSourceKind::url("https://example.invalid/cat.jpg"),
        media_type: Some(ImageMediaType::JPEG),
        detail: None,
        native: None,
    };
    let raw_image = UserContent::image_raw(vec![0u8, 1, 2, 255], None, None);
    let pdf = UserContent::Document(Document {
        data: DocumentSourceKind::base64("JVBERi0xLjQ="),
        media_type: Some(DocumentMediaType::PDF),
        additional_params: Some(json!({"title": "spec", "citations": {"enabled": true}})),
    });
    let text_doc = UserContent::document_text("# notes", Some(DocumentMediaType::MARKDOWN));
    let file_doc = UserContent::Document(Document {
        data: DocumentSourceKind::file_id("file_011"),
        media_type: None,
        additional_params: None,
    });
    let audio = UserContent::audio_base64("UklGRg==", Some(rig_core::message::AudioMediaType::WAV));
    let rig = vec![
        RigMessage::User {
            content: vec![
                UserContent::text("look"),
                UserContent::Image(image.clone()),
                UserContent::Image(url_image),
                raw_image,
                pdf,
                text_doc,
                file_doc,
                audio,
            ],
        },
        RigMessage::Assistant(
            AssistantMessage::new(vec![
                AssistantContent::ToolCall(local.clone()),
                provider_item,
                AssistantContent::Image(image.clone()),
                AssistantContent::Opaque(Opaque {
                    item: json!({"type": "server_tool_use", "id": "srvtoolu_1", "name": "web_search", "input": {"query": "x"}}),
                    replay: true,
                }),
                AssistantContent::Opaque(Opaque {
                    item: json!({"type": "text", "text": "not replayed"}),
                    replay: false,
                }),
            ])
            .with_origin(Origin::new("anthropic.messages", "anthropic", "claude-x"))
            .with_stop(StopReason::ToolUse),
        ),
        RigMessage::User {
            content: vec![
                UserContent::ToolResult(ToolResult {
                    call: local.id.clone(),
                    name: name("search"),
                    content: vec![
                        ToolResultContent::text("found"),
                        ToolResultContent::json(json!({"hits": [1, 2.5, "x"], "next": null})),
                        ToolResultContent::Image(image),
                    ],
                    is_error: false,
                }),
                UserContent::ToolResult(
                    native_call.error_result(vec![ToolResultContent::text("no such file")]),
                ),
                UserContent::text("and now?"),
            ],
        },
        // A rig message of results alone right after one with results: two messages still.
        RigMessage::tool_results(vec![ToolResult {
            call: CallId::from_wire("toolu_9"),
            name: name("read_again"),
            content: vec![],
            is_error: false,
        }]),
        RigMessage::user("plain"),
        RigMessage::User { content: vec![] },
        RigMessage::Assistant(AssistantMessage::new(vec![])),
    ];
    check_rig(&rig);
}

#[test]
fn text_before_results_stays_in_its_message() {
    let c = call("c1", "t", json!({}));
    let rig = vec![
        RigMessage::from(vec![AssistantContent::ToolCall(c.clone())]),
        RigMessage::User {
            content: vec![
                UserContent::text("before"),
                UserContent::ToolResult(c.result(vec![ToolResultContent::text("r")])),
                UserContent::text("after"),
            ],
        },
        RigMessage::user("next"),
    ];
    check_rig(&rig);
}

#[test]
fn a_pruned_result_reads_back_as_text_of_the_same_call() {
    let c = call("c1", "bash", json!({"cmd": "cat big"}));
    let rig = vec![
        RigMessage::from(vec![AssistantContent::ToolCall(c.clone())]),
        RigMessage::tool_results(vec![
            c.result(vec![ToolResultContent::text("x".repeat(50))]),
        ]),
    ];
    let mut ours = from_rig(&rig).unwrap();
    // What a prune does to a tool message: the content becomes a one-liner.
    let body = ours[1].to_wire_json().replace(&"x".repeat(50), "[pruned]");
    ours[1] = Message::from_json(&body).unwrap();
    let back = to_rig(&ours).unwrap();
    let RigMessage::User { content } = &back[1] else {
        panic!("not a user message")
    };
    let UserContent::ToolResult(r) = &content[0] else {
        panic!("not a result")
    };
    assert_eq!(r.call, c.id);
    assert_eq!(r.name, name("bash"));
    assert_eq!(r.content, vec![ToolResultContent::text("[pruned]")]);
}

#[test]
fn what_rig_cannot_hold_is_an_error_naming_the_message() {
    let cases: [(&str, usize, &str); 4] = [
        (
            r#"{"role":"user","content":"q"}
{"role":"tool","tool_call_id":"nobody","content":"orphan"}"#,
            1,
            "names no tool",
        ),
        (r#"{"role":"function","content":"f"}"#, 0, "role"),
        (
            r#"{"role":"user","content":[{"type":"input_audio","input_audio":{"data":"secret-bytes"}}]}"#,
            0,
            "no place",
        ),
        (
            r#"{"role":"assistant","content":null,"tool_calls":[{"id":"","type":"function","function":{"name":"t","arguments":"{}"}}]}"#,
            0,
            "without an id",
        ),
    ];
    for (text, index, why) in cases {
        let ours = parse(text.as_bytes()).unwrap();
        match to_rig(&ours) {
            Err(Error::Convert { index: i, reason }) => {
                assert_eq!(i, index, "{text}");
                assert!(reason.contains(why), "{reason}");
                assert!(!reason.contains("secret") && !reason.contains("orphan"));
            }
            other => panic!("{text}: {other:?}"),
        }
    }
}

/// A transcript of another dialect (OpenAI chat): the same roles (a tool run is one rig
/// message), texts, calls and results; a second trip is byte-identical to the first.
fn check_foreign(ours: &[Message], what: &str) {
    let rig = to_rig(ours).unwrap_or_else(|e| panic!("{what}: {e}"));
    let back = from_rig(&rig).unwrap();
    assert_eq!(to_rig(&back).unwrap(), rig, "{what}: rig side");
    let again = from_rig(&to_rig(&back).unwrap()).unwrap();
    let wire = |m: &[Message]| m.iter().map(Message::to_wire_json).collect::<Vec<_>>();
    assert_eq!(wire(&again), wire(&back), "{what}: second trip");
    // Same messages in the chat view: role, visible text, calls (id, name, arguments as
    // JSON), results (id, text).
    assert_eq!(view(ours), view(&back), "{what}: chat view");
}

fn view(messages: &[Message]) -> Vec<Value> {
    messages
        .iter()
        .map(|m| {
            let v: Value = serde_json::from_str(&m.to_wire_json()).unwrap();
            let text = match v.get("content") {
                Some(Value::String(s)) => s.clone(),
                Some(Value::Array(parts)) => parts
                    .iter()
                    .filter_map(|p| p.get("text").and_then(Value::as_str))
                    .collect::<Vec<_>>()
                    .join(""),
                _ => String::new(),
            };
            let calls: Vec<Value> = m
                .tool_calls()
                .iter()
                .map(|c| {
                    let args: Value = serde_json::from_str(&c.function.arguments)
                        .unwrap_or_else(|_| json!({"arguments": c.function.arguments}));
                    json!([c.id, c.function.name, args])
                })
                .collect();
            json!([m.role().as_str(), text, calls, m.tool_call_id()])
        })
        .collect()
}

#[test]
fn every_shared_fixture_message_converts_both_ways() {
    let Some(fixtures) = test_support::fixture_bytes() else {
        return;
    };
    let mut messages = 0;
    for (file, bytes) in fixtures {
        let text = String::from_utf8(bytes).unwrap();
        let ours = parse(text.as_bytes()).unwrap_or_else(|e| panic!("{file}: {e}"));
        messages += ours.len();
        check_foreign(&ours, &file);
        // The rig messages the fixture reads as round-trip exactly the other way.
        check_rig(&to_rig(&ours).unwrap());
    }
    assert!(messages > 1000, "{messages} fixture messages");
}

#[test]
fn repository_examples_convert_both_ways() {
    let dir = test_support::workspace_root()
        .join("examples")
        .join("sessions");
    let mut seen = 0;
    for entry in std::fs::read_dir(&dir).unwrap() {
        let path = entry.unwrap().path();
        if path.extension().is_none_or(|x| x != "jsonl") {
            continue;
        }
        let text = std::fs::read_to_string(&path).unwrap();
        let name = test_support::file_name(&path);
        let ours = if anthropic::looks_like(&text) {
            anthropic::parse(&text)
        } else {
            parse(text.as_bytes())
        }
        .unwrap_or_else(|e| panic!("{name}: {e}"));
        match to_rig(&ours) {
            Ok(rig) => {
                check_rig(&rig);
                check_foreign(&ours, &name);
                seen += 1;
            }
            // An example holding what rig has no place for says which message.
            Err(Error::Convert { index, .. }) => assert!(index < ours.len(), "{name}"),
            Err(e) => panic!("{name}: {e}"),
        }
    }
    assert!(seen > 0, "no example in {}", dir.display());
}

#[test]
fn anthropic_shaped_transcripts_convert_both_ways() {
    proptest!(ProptestConfig::with_cases(64), |(lines in anthropic::strategies::transcript())| {
        let text = lines.join("\n") + "\n";
        let ours = anthropic::parse(&text).unwrap();
        if let Ok(rig) = to_rig(&ours) {
            check_rig(&rig);
        }
    });
}

fn text_strategy() -> impl Strategy<Value = String> {
    prop_oneof![
        "[a-z ]{0,12}",
        "\\PC{0,8}",
        Just(String::new()),
        Just("{\"a\": 1}".into())
    ]
}

fn assistant_block() -> impl Strategy<Value = AssistantContent> {
    prop_oneof![
        text_strategy().prop_map(AssistantContent::text),
        text_strategy().prop_map(AssistantContent::reasoning),
        (text_strategy(), "[A-Za-z0-9+/]{4,40}").prop_map(|(t, sig)| {
            AssistantContent::Reasoning(Reasoning::new(t.clone()))
                .with_native(json!({"type": "thinking", "thinking": t, "signature": sig}))
        }),
        (
            "[a-z0-9_]{1,8}",
            "[a-z]{1,6}",
            text_strategy(),
            any::<i64>()
        )
            .prop_map(|(id, tool, v, n)| {
                AssistantContent::tool_call(id, name(&tool), json!({"v": v, "n": n}))
            }),
    ]
}

fn rig_transcript() -> impl Strategy<Value = Vec<RigMessage>> {
    let turn = (
        text_strategy(),
        prop::collection::vec(assistant_block(), 0..4),
        any::<bool>(),
        text_strategy(),
    )
        .prop_map(|(prompt, blocks, error, output)| {
            let mut out = vec![RigMessage::user(prompt)];
            let calls: Vec<ToolCall> = blocks
                .iter()
                .filter_map(|b| match b {
                    AssistantContent::ToolCall(c) => Some(c.clone()),
                    _ => None,
                })
                .collect();
            out.push(RigMessage::Assistant(AssistantMessage::new(blocks)));
            if !calls.is_empty() {
                out.push(RigMessage::tool_results(
                    calls
                        .iter()
                        .map(|c| {
                            let content = vec![ToolResultContent::text(output.clone())];
                            if error {
                                c.error_result(content)
                            } else {
                                c.result(content)
                            }
                        })
                        .collect(),
                ));
            }
            out
        });
    prop::collection::vec(turn, 0..6).prop_map(|t| t.into_iter().flatten().collect())
}

#[test]
fn generated_rig_transcripts_round_trip() {
    proptest!(ProptestConfig::with_cases(128), |(rig in rig_transcript())| {
        let ours = from_rig(&rig).unwrap();
        prop_assert_eq!(&to_rig(&ours).unwrap(), &rig);
        let bodies: Vec<Message> = ours
            .iter()
            .map(|m| Message::from_json(&m.to_wire_json()).unwrap())
            .collect();
        prop_assert_eq!(&to_rig(&bodies).unwrap(), &rig);
    });
}

fn parse(bytes: &[u8]) -> compaction_core::Result<Vec<Message>> {
    compaction_core::parse::parse_transcript(bytes).map(|(m, _)| m)
}
