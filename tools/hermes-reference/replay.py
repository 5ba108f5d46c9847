#!/usr/bin/env python3
"""Replay agent sessions through Hermes Agent's own context compressor.

Writes what the compressor put in front of the model at every request, in the form of
`hermes-compaction simulate --trace/--trace-text` and of `../shared/anchors/hermes-replay/`,
so that `simulate --score-trace` scores Hermes Agent and the library with one scorer on any
set of sessions, not only the 21 fixtures the anchors cover.

It runs Hermes' code from a checkout you give it (`--hermes DIR`, its dependencies installed,
e.g. `pip install -e DIR` in a virtual environment); nothing of Hermes is in this repository.
The replay follows the anchors' README: before each recorded assistant message the prompt is
the compressor's running message list; `should_compress` decides on that list's rough size,
`compress` runs, the list is traced, and its size is fed back with `update_from_response`. The
summarizer is a stub that writes filler of the length Hermes' prompt asks for (its summaries
carry no content, as in the anchors). No network: the stub replaces the only model call.

`--august` (on by default) brings a July 2026 compressor in line with the August 2026 main
that made the anchors, in two behaviours (see README.md; checked against the anchors there):
the summary prefix carries the clause about tools staying active, and the tool-output prune
caps its protected-tail message floor at `_MAX_TAIL_MESSAGE_FLOOR`, leaves its own one-line
results alone, and demotes bulky outputs inside an oversized protected tail.
"""

import argparse
import json
import re
import sys
import types

FILLER_UNIT = "work continued on the task; "
# The clause an August 2026 summary prefix has before its last sentence.
TOOLS_CLAUSE = (
    "None of the above restricts HOW you work: your tools remain fully active — keep "
    "calling them normally for the active task (edit files, run commands, search) instead of "
    "merely narrating what you would do. "
)
LAST_SENTENCE = "The current session state (files, config, etc.) may reflect work"
# An August 2026 prefix names only the first of the historical sections it tells the model to
# discard.
LATER_SECTIONS = (
    " / '## Historical In-Progress State' / '## Historical Pending User Asks' / "
    "'## Historical Remaining Work'"
)
# Messages at the end of an oversized protected tail that the pressure pass never demotes.
PRESSURE_KEEP_RECENT = 3
DUPLICATE_NOTE = "[Duplicate tool output — same content as a more recent call]"
# User messages that are the host's own notes, not a user's ask.
HOST_NOTES = (
    "[System: Your previous response was truncated",
    "[System: The previous response was cut off",
    "[System: Your previous tool call",
    "[Your active task list was preserved across context compression]",
    "[IMPORTANT: Background process ",
)
SYNTHETIC_FLAGS = (
    "_todo_snapshot_synthetic", "_empty_recovery_synthetic",
    "_verification_stop_synthetic", "_pre_verify_synthetic",
)


def fnv1a64(text):
    h = 0xCBF29CE484222325
    for byte in text.encode("utf-8"):
        h = ((h ^ byte) * 0x100000001B3) & 0xFFFFFFFFFFFFFFFF
    return "%016x" % h


def sent(message):
    """The message as it goes on the wire: keys starting with `_` are Hermes' own."""
    return {k: v for k, v in message.items() if not k.startswith("_")}


def anchor_hash(message):
    # The anchors' hash: FNV-1a 64 of json.dumps(message, sort_keys=True), `_` keys left out.
    return fnv1a64(json.dumps(sent(message), sort_keys=True))


def wire(message):
    return json.dumps(sent(message), separators=(",", ":"), ensure_ascii=False)


def filler_summarizer(ledger):
    """Stands in for the summary model: `## Goal` and filler, as long as the prompt asks."""

    def call(**kwargs):
        prompt = kwargs["messages"][0]["content"]
        found = re.search(r"Target ~(\d+) tokens", prompt)
        if found is None:
            raise SystemExit("the summary prompt states no 'Target ~N tokens': another Hermes version?")
        tokens = int(found.group(1))
        chars = tokens * 4
        body = (FILLER_UNIT * (chars // len(FILLER_UNIT) + 1))[:chars].rstrip("; ")
        ledger["summary_calls"] += 1
        ledger["summary_prompt_tokens"] += (len(prompt) + 3) // 4
        ledger["summary_output_tokens"] += tokens
        message = types.SimpleNamespace(content="## Goal\n" + body)
        return types.SimpleNamespace(choices=[types.SimpleNamespace(message=message)])

    return call


def august_prune(cc):
    """The August 2026 tool-output prune, over the checkout's own per-message helpers."""
    size = cc._estimate_msg_budget_tokens
    floor_cap = cc._MAX_TAIL_MESSAGE_FLOOR

    def prune(self, messages, protect_tail_count, protect_tail_tokens=None, min_prune_chars=200):
        out = [dict(m) for m in messages]
        n = len(out)
        if n == 0:
            return out, 0
        calls = {}
        for m in out:
            if m.get("role") == "assistant":
                for call in m.get("tool_calls") or []:
                    if isinstance(call, dict):
                        fn = call.get("function", {})
                        calls[call.get("id", "")] = (fn.get("name", "unknown"), fn.get("arguments", ""))
        changed = 0

        # The protected tail: a token budget walked back from the end, at least `floor`
        # messages (protect_last_n, capped).
        if protect_tail_tokens:
            floor = min(protect_tail_count, n, floor_cap)
            used, first = 0, n
            for i in range(n - 1, -1, -1):
                cost = size(out[i])
                if used + cost > protect_tail_tokens and n - i >= floor:
                    first = i
                    break
                used += cost
                first = i
            boundary = n - max(n - first, floor)
        else:
            boundary = n - protect_tail_count

        # An older byte-identical copy of a tool output (200 characters or more) becomes a
        # note, anywhere in the list: the newest copy stays.
        newest = set()
        for i in range(n - 1, -1, -1):
            body = out[i].get("content")
            if out[i].get("role") != "tool" or not isinstance(body, str) or len(body) < 200:
                continue
            if body in newest:
                out[i] = {**out[i], "content": DUPLICATE_NOTE}
                changed += 1
            else:
                newest.add(body)

        def demote(i):
            nonlocal changed
            m = out[i]
            if m.get("role") != "tool":
                return False
            body = m.get("content", "")
            if isinstance(body, list):
                kept = cc._strip_image_parts_from_parts(body)
                if kept is None:
                    return False
                out[i] = {**m, "content": kept}
                changed += 1
                return True
            if not isinstance(body, str) or not body or body == cc._PRUNED_TOOL_PLACEHOLDER:
                return False
            one_line = body.startswith("[") and " chars)" in body and len(body) < 400
            if body.startswith(("[Duplicate tool output", "[screenshot removed")) or one_line:
                return False
            if len(body) <= min_prune_chars:
                return False
            name, args = calls.get(m.get("tool_call_id", ""), ("unknown", ""))
            out[i] = {**m, "content": cc._summarize_tool_result(name, args, body)}
            changed += 1
            return True

        def shorten(i):
            m = out[i]
            if m.get("role") != "assistant" or not m.get("tool_calls"):
                return False
            calls_out, touched = [], False
            for call in m["tool_calls"]:
                if isinstance(call, dict):
                    args = call.get("function", {}).get("arguments", "")
                    if len(args) > 500:
                        short = cc._truncate_tool_call_args_json(args)
                        if short != args:
                            call = {**call, "function": {**call["function"], "arguments": short}}
                            touched = True
                calls_out.append(call)
            if touched:
                out[i] = {**m, "tool_calls": calls_out}
            return touched

        start = max(0, boundary)
        for i in range(start):
            demote(i)
        for i in range(start):
            shorten(i)

        # Pressure: a protected tail over 1.5 times its budget has its bulky outputs demoted,
        # oldest first, the last few messages spared; then every output but the newest; then
        # the newest as well.
        if protect_tail_tokens:
            ceiling = int(protect_tail_tokens * 1.5)

            def tail_tokens():
                return sum(size(out[i]) for i in range(start, n))

            spare_from = n - min(PRESSURE_KEEP_RECENT, n)
            if spare_from > boundary and tail_tokens() > ceiling:
                for i in range(start, spare_from):
                    demote(i)
                    shorten(i)
                    if tail_tokens() <= ceiling:
                        break
                if tail_tokens() > ceiling:
                    newest_tool = next((i for i in range(n - 1, -1, -1) if out[i].get("role") == "tool"), None)
                    for i in range(start, n):
                        if i == newest_tool:
                            continue
                        if out[i].get("role") == "tool":
                            demote(i)
                        elif out[i].get("role") == "assistant":
                            shorten(i)
                    if newest_tool is not None and newest_tool >= boundary and tail_tokens() > ceiling:
                        demote(newest_tool)
        return out, changed

    return prune


def user_text(m):
    body = m.get("content")
    if isinstance(body, str):
        return body
    if isinstance(body, list):
        return "\n".join(p.get("text", "") for p in body if isinstance(p, dict) and p.get("type") == "text")
    return ""


def august_grounding(cc):
    """An August 2026 summary opens with the newest real user ask of the window it replaces."""
    generate = cc.ContextCompressor._generate_summary

    def grounded(self, turns, *args, **kwargs):
        summary = generate(self, turns, *args, **kwargs)
        if not summary or not summary.startswith(cc.SUMMARY_PREFIX + "\n"):
            return summary
        ask = None
        for m in reversed(turns):
            text = user_text(m).strip() if m.get("role") == "user" else ""
            if not text or any(m.get(f) for f in SYNTHETIC_FLAGS) or text.startswith(HOST_NOTES):
                continue
            if self._is_context_summary_content(m.get("content")):
                continue
            ask = text
            break
        if ask is None:
            return summary
        ask = re.sub(r"\s+", " ", cc.redact_sensitive_text(ask).strip())
        if len(ask) > 1400:
            ask = ask[:1385].rstrip() + " ...[truncated]"
        body = summary[len(cc.SUMMARY_PREFIX) + 1:]
        body = (
            "## Historical Task Snapshot\n"
            f"User asked (deterministic, from compacted turns): {ask!r}\n"
            "Historical only; newer protected-tail messages after this summary win.\n\n" + body
        ).strip()
        self._previous_summary = body
        return cc.SUMMARY_PREFIX + "\n" + body

    return grounded


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--hermes", required=True, help="a Hermes Agent checkout (its dependencies installed)")
    ap.add_argument("--context-length", type=int, required=True, help="the model window in tokens")
    ap.add_argument("--trace", required=True, help="one JSON line per request (as simulate --trace)")
    ap.add_argument("--text", required=True, help="every traced message once (as simulate --trace-text)")
    ap.add_argument("--totals", required=True, help="summary calls and tokens (as the anchors' totals)")
    ap.add_argument("--no-august", dest="august", action="store_false",
                    help="run the checkout's compressor as it is")
    ap.add_argument("inputs", nargs="+", help="sessions, OpenAI chat JSONL")
    a = ap.parse_args()

    sys.path.insert(0, a.hermes)
    try:
        import agent.context_compressor as cc
        from agent.model_metadata import estimate_messages_tokens_rough as rough
    except ImportError as e:
        raise SystemExit(f"cannot import Hermes' compressor from {a.hermes}: {e}")

    ledger = {"summary_calls": 0, "summary_prompt_tokens": 0, "summary_output_tokens": 0}
    cc.call_llm = filler_summarizer(ledger)
    if a.august:
        if TOOLS_CLAUSE not in cc.SUMMARY_PREFIX:
            at = cc.SUMMARY_PREFIX.index(LAST_SENTENCE)
            cc.SUMMARY_PREFIX = cc.SUMMARY_PREFIX[:at] + TOOLS_CLAUSE + cc.SUMMARY_PREFIX[at:]
        cc.SUMMARY_PREFIX = cc.SUMMARY_PREFIX.replace(LATER_SECTIONS, "")
        cc.ContextCompressor._prune_old_tool_results = august_prune(cc)
        cc.ContextCompressor._generate_summary = august_grounding(cc)

    texts = {}
    with open(a.trace, "w") as trace:
        for path in a.inputs:
            name = path.rsplit("/", 1)[-1].removesuffix(".jsonl")
            session = []
            try:
                f = open(path)
            except OSError as e:
                raise SystemExit(f"{path}: {e.strerror}")
            with f:
                for lineno, line in enumerate(f, 1):
                    if line.strip():
                        try:
                            message = json.loads(line)
                        except json.JSONDecodeError as e:
                            raise SystemExit(f"{path}:{lineno}: not a JSON message: {e}")
                        if not isinstance(message, dict) or not isinstance(message.get("role"), str):
                            raise SystemExit(f"{path}:{lineno}: not a chat message (an object with a role)")
                        session.append(message)
            compressor = cc.ContextCompressor(
                model="replay", config_context_length=a.context_length, quiet_mode=True
            )
            prompt, request = [], 0
            for message in session:
                if message.get("role") == "assistant":
                    if prompt:
                        tokens = rough(prompt)
                        if compressor.should_compress(tokens):
                            prompt = compressor.compress(prompt, current_tokens=tokens)
                        wires = [wire(m) for m in prompt]
                        hashes = [anchor_hash(m) for m in prompt]
                        texts.update(zip(hashes, wires))
                        trace.write(json.dumps({
                            "policy": "hermes-batch", "transcript": name, "request": request,
                            "chars": [len(w) for w in wires], "hashes": hashes,
                        }) + "\n")
                        compressor.update_from_response({"prompt_tokens": rough(prompt), "completion_tokens": 0})
                    request += 1
                prompt.append(message)
    with open(a.text, "w") as f:
        for h, w in texts.items():
            f.write(json.dumps({"hash": h, "wire": w}, ensure_ascii=False) + "\n")
    with open(a.totals, "w") as f:
        json.dump({"totals": [{"policy": "hermes-batch", **ledger}]}, f)
    print(json.dumps(ledger))


if __name__ == "__main__":
    main()
