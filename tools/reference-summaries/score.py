#!/usr/bin/env python3
"""How much of what the agents' own compaction summaries name a replayed prompt still holds.

The shared fixtures come with the summaries that Claude Code and pi wrote when they compacted
six of the sessions themselves (`fixtures/transcripts/reference-summaries/`, seven points).
For each point: the identifiers (the shape of docs/ECONOMICS.md's far recall) of the agent's
summary that the session had written before that point, and the share of them that some
message of the replayed prompt holds, in any form (verbatim, a summary, a ledger), at the
first request after the point. The summaries were written by another model with its own
judgement of what mattered, so no mechanism of this project is shaped to them.

    score.py --shared DIR LABEL=TRACE,TEXT [LABEL=TRACE,TEXT ...]

TRACE and TEXT are `simulate --trace` / `--trace-text` files (or the anchors' .gz files).
Standard library only.
"""

import argparse
import gzip
import json
import os
import re

RUN = re.compile(r"[A-Za-z0-9_./-]+")
CAMEL = re.compile(r"[a-z][A-Z]")


def identifiers(text):
    found = set()
    for run in RUN.findall(text):
        run = run.strip("./-")
        if len(run) < 6 or not (run[0].isalnum() or run[0] == "_") or not (run[-1].isalnum() or run[-1] == "_"):
            continue
        if any(c in run for c in "_./") or any(c.isdigit() for c in run) or CAMEL.search(run):
            found.add(run)
    return found


def string_values(value):
    if isinstance(value, str):
        stripped = value.strip()
        if stripped[:1] in "{[":
            try:
                yield from string_values(json.loads(stripped))
                return
            except ValueError:
                pass
        yield value
    elif isinstance(value, dict):
        for v in value.values():
            yield from string_values(v)
    elif isinstance(value, list):
        for v in value:
            yield from string_values(v)


def message_identifiers(message):
    found = set()
    for s in string_values(message):
        found |= identifiers(s)
    return found


def lines(path):
    with (gzip.open(path, "rt") if path.endswith(".gz") else open(path)) as f:
        for line in f:
            if line.strip():
                yield json.loads(line)


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--shared", required=True, help="the shared directory (holds fixtures/)")
    ap.add_argument("runs", nargs="+", help="LABEL=TRACE,TEXT")
    a = ap.parse_args()
    fixtures = os.path.join(a.shared, "fixtures", "transcripts")
    references = os.path.join(fixtures, "reference-summaries")

    points = []
    for f in sorted(os.listdir(references)):
        name = f.split(".native")[0]
        session = list(lines(os.path.join(fixtures, name + ".jsonl")))
        with open(os.path.join(references, f)) as fh:
            for point in json.load(fh):
                at = point["insert_before_output_message_index"]
                request = sum(1 for m in session[:at] if m.get("role") == "assistant")
                seen = set()
                for m in session[:at]:
                    seen |= message_identifiers(m)
                points.append((name, request, identifiers(point["text"]) & seen))

    for run in a.runs:
        label, _, files = run.partition("=")
        trace, _, text = files.partition(",")
        prompts = {(r["transcript"].removesuffix(".jsonl"), r["request"]): r["hashes"] for r in lines(trace)}
        wires = {d["hash"]: d["wire"] for d in lines(text)}
        held = named = 0
        cells = []
        for name, request, wanted in points:
            hashes = prompts.get((name, request))
            if hashes is None:
                cells.append("-")
                continue
            have = set()
            for h in hashes:
                have |= message_identifiers(json.loads(wires[h]))
            k = len(wanted & have)
            held, named = held + k, named + len(wanted)
            cells.append(f"{k}/{len(wanted)}")
        share = 100 * held / named if named else 0.0
        print(f"{label}\t{share:.1f}%\t" + " ".join(cells))


if __name__ == "__main__":
    main()
