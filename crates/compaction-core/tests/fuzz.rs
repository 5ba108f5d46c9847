//! Parsing never panics: arbitrary bytes, and real or generated lines after mutation.

use compaction_core::parse;
use compaction_core::strategies;
use proptest::prelude::*;

use crate::common;

/// One way to damage a line.
#[derive(Clone, Debug)]
enum Mutation {
    Truncate(prop::sample::Index),
    Flip(prop::sample::Index, u8),
    Insert(prop::sample::Index, Vec<u8>),
    Delete(prop::sample::Index, usize),
    Duplicate(prop::sample::Index, usize),
}

fn mutation() -> impl Strategy<Value = Mutation> {
    let garbage = prop_oneof![
        prop::collection::vec(any::<u8>(), 1..8),
        prop::sample::select(vec![
            b"{".to_vec(),
            b"}".to_vec(),
            b"\"".to_vec(),
            b"\\".to_vec(),
            b"\\u".to_vec(),
            b"\\ud800".to_vec(),
            b",\"role\":null".to_vec(),
            b"[".to_vec(),
            b"\n".to_vec(),
            b"\xff".to_vec(),
            b"\xe4\xbd".to_vec(),
            b"1e999999".to_vec(),
        ]),
    ];
    prop_oneof![
        any::<prop::sample::Index>().prop_map(Mutation::Truncate),
        (any::<prop::sample::Index>(), 1u8..=255).prop_map(|(i, x)| Mutation::Flip(i, x)),
        (any::<prop::sample::Index>(), garbage).prop_map(|(i, g)| Mutation::Insert(i, g)),
        (any::<prop::sample::Index>(), 1usize..16).prop_map(|(i, n)| Mutation::Delete(i, n)),
        (any::<prop::sample::Index>(), 1usize..16).prop_map(|(i, n)| Mutation::Duplicate(i, n)),
    ]
}

fn apply(line: &[u8], m: &Mutation) -> Vec<u8> {
    let mut out = line.to_vec();
    if out.is_empty() {
        return out;
    }
    match m {
        Mutation::Truncate(i) => out.truncate(i.index(out.len())),
        Mutation::Flip(i, x) => {
            let at = i.index(out.len());
            out[at] ^= x;
        }
        Mutation::Insert(i, g) => {
            let at = i.index(out.len() + 1);
            out.splice(at..at, g.iter().copied());
        }
        Mutation::Delete(i, n) => {
            let at = i.index(out.len());
            let end = (at + n).min(out.len());
            out.drain(at..end);
        }
        Mutation::Duplicate(i, n) => {
            let at = i.index(out.len());
            let end = (at + n).min(out.len());
            let copy = out[at..end].to_vec();
            out.splice(end..end, copy);
        }
    }
    out
}

/// Parses damaged input; whatever parses must serialize to something that parses the same.
fn check(bytes: &[u8]) {
    if let Ok((msgs, _)) = parse::parse_transcript(bytes) {
        let text = parse::to_jsonl(&msgs);
        let again = parse::parse_jsonl(&text).expect("re-serialized output parses");
        assert_eq!(again, msgs);
    }
    if let Ok(s) = std::str::from_utf8(bytes) {
        let _ = parse::parse_jsonl(s);
        let _ = parse::parse_json_array(s);
        let _ = compaction_core::Message::from_json(s);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn arbitrary_bytes_never_panic(bytes in prop::collection::vec(any::<u8>(), 0..512)) {
        check(&bytes);
    }

    #[test]
    fn arbitrary_strings_never_panic(s in "\\PC{0,200}") {
        check(s.as_bytes());
    }

    #[test]
    fn mutated_generated_lines_never_panic(
        msgs in strategies::transcript(),
        pick in any::<prop::sample::Index>(),
        mutations in prop::collection::vec(mutation(), 1..4),
    ) {
        let text = parse::to_jsonl(&msgs);
        let lines: Vec<&str> = text.lines().collect();
        let mut line = lines[pick.index(lines.len())].as_bytes().to_vec();
        for m in &mutations {
            line = apply(&line, m);
        }
        check(&line);
        // The damaged line inside a whole transcript, and as the element of an array.
        let mut whole = text.as_bytes().to_vec();
        whole.extend_from_slice(&line);
        check(&whole);
        let mut array = b"[".to_vec();
        array.extend_from_slice(&line);
        array.push(b']');
        check(&array);
    }
}

#[test]
fn mutated_fixture_lines_never_panic() {
    let Some(files) = common::fixtures() else {
        return;
    };
    let config = ProptestConfig::with_cases(64);
    for (name, bytes) in files {
        let lines: Vec<Vec<u8>> = bytes
            .split(|&b| b == b'\n')
            .filter(|l| !l.is_empty())
            .map(<[u8]>::to_vec)
            .collect();
        let mut runner = proptest::test_runner::TestRunner::new(config.clone());
        let strategy = (
            prop::sample::select(lines),
            prop::collection::vec(mutation(), 1..4),
        );
        runner
            .run(&strategy, |(line, mutations)| {
                let mut line = line;
                for m in &mutations {
                    line = apply(&line, m);
                }
                check(&line);
                Ok(())
            })
            .unwrap_or_else(|e| panic!("{name}: {e}"));
    }
}
