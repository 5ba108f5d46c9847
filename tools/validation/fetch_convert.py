#!/usr/bin/env python3
"""Refetch the validation split and convert it to OpenAI chat JSONL.

Reads `sessions.tsv` (beside this script): one public agent session a row, as a repository,
a commit (prefix), a path in it and the agent's log format. Each file is read with
`git show COMMIT:PATH` from a local mirror of the repository and written, converted, to
OUT/sessions/NAME.jsonl: one OpenAI chat message a line, `role` system|user|assistant|tool,
`content` a string, `tool_calls` on the assistant messages that call tools and
`tool_call_id` on the results; every call is answered by exactly one tool message right
after its assistant message. One exception, kept because the split was measured with it: a
user's pasted image stays an OpenAI content list (`image_url` parts) unless --text-only.
OUT/MANIFEST.tsv lists what was written (split last, `validation`); with --raw the files as
read are kept in OUT/raw/NAME.EXT too.

Claude Code, Codex rollout and pi logs are read by the project's own CLI
(`session import` into a throwaway SQLite store, `session export --wire`); the other
formats (SWE-agent, mini-SWE-agent, OpenHands v1 output, gemini-cli stream, Codex TUI
session log) are converted here, the first three as the shared fixtures were.

Python 3 standard library only. Nothing is fetched from the network: the mirrors must be
there (`--mirror-root`, laid out as ROOT/OWNER+NAME/repo or ROOT/OWNER+NAME, bare or not),
or name a repository's git directory with `--git-dir OWNER/NAME=PATH`.

    cargo build --release -p hermes-compaction-cli
    python3 tools/validation/fetch_convert.py --mirror-root /work/.mirror \\
        --out /work/validation --raw
"""

import argparse
import csv
import json
import os
import re
import subprocess
import sys
import tempfile

HERE = os.path.dirname(os.path.abspath(__file__))

# ---------------------------------------------------------------------------------------------
# Reading the table and the files


def read_rows(path):
    with open(path, newline="", encoding="utf-8") as f:
        rows = list(csv.DictReader(f, delimiter="\t"))
    for r in rows:
        for key in ("name", "repo", "commit", "path", "format"):
            if not r.get(key):
                sys.exit(f"{path}: row {r} has no {key}")
    return rows


def git_dir(repo, mirror_root, explicit):
    if repo in explicit:
        return explicit[repo]
    if mirror_root:
        base = os.path.join(mirror_root, repo.replace("/", "+"))
        for cand in (os.path.join(base, "repo"), base, base + ".git"):
            if os.path.isdir(cand):
                return cand
    sys.exit(f"no git directory for {repo}: give --mirror-root or --git-dir {repo}=PATH")


def git(gdir, *args):
    return subprocess.run(
        ["git", "-C", gdir, *args], check=True, stdout=subprocess.PIPE
    ).stdout


def read_source(gdir, commit, path):
    """The file's bytes at the commit, and the full commit id."""
    try:
        full = git(gdir, "rev-parse", "--verify", "-q", commit + "^{commit}").decode().strip()
    except subprocess.CalledProcessError:
        sys.exit(f"{gdir}: commit {commit} is not in the mirror")
    try:
        return git(gdir, "show", f"{full}:{path}"), full
    except subprocess.CalledProcessError:
        sys.exit(f"{gdir}: {path} is not in commit {full}")


def split_fragment(path):
    """`file#key=value` -> (file, {key: value})."""
    if "#" not in path:
        return path, {}
    path, frag = path.split("#", 1)
    return path, dict(p.split("=", 1) for p in frag.split("&"))


def raw_ext(path):
    base = os.path.basename(path)
    for ext in (".traj.json",):
        if base.endswith(ext):
            return ext
    return os.path.splitext(base)[1]


def json_lines(data):
    out = []
    for line in data.decode("utf-8").splitlines():
        line = line.strip()
        if line:
            out.append(json.loads(line))
    return out


# ---------------------------------------------------------------------------------------------
# Building messages


def msg(role, content):
    return {"role": role, "content": content if isinstance(content, str) else ""}


def call(cid, name, arguments):
    if not isinstance(arguments, str):
        arguments = json.dumps(arguments, ensure_ascii=False)
    return {"id": cid, "type": "function", "function": {"name": name, "arguments": arguments}}


def assistant(content, calls=None):
    m = msg("assistant", content)
    if calls:
        m["tool_calls"] = calls
    return m


def tool(cid, content):
    m = msg("tool", content)
    m["tool_call_id"] = cid
    return m


def text_of(value):
    """A string from a string, a list of text blocks, or None."""
    if value is None:
        return ""
    if isinstance(value, str):
        return value
    if isinstance(value, list):
        parts = []
        for b in value:
            if isinstance(b, str):
                parts.append(b)
            elif isinstance(b, dict) and isinstance(b.get("text"), str):
                parts.append(b["text"])
        return "\n".join(parts)
    return json.dumps(value, ensure_ascii=False)


# ---------------------------------------------------------------------------------------------
# SWE-agent .traj


def swe_agent(data, _frag):
    d = json.loads(data)
    history = d.get("history") or []
    steps = d.get("trajectory") or []
    if history:
        # The observation of the last step (the submission) is not in the history.
        last = text_of(steps[-1].get("observation")) if steps else ""
        return swe_agent_history(history, last)
    return swe_agent_trajectory(steps)


def swe_agent_history(history, last=""):
    out = []
    n = 0
    seen = {}  # a function-calling id used again (replayed demonstrations) becomes ID__2, ...
    pending = None  # id of a thought/action call still waiting for its observation
    for h in history:
        role = h.get("role")
        content = text_of(h.get("content"))
        if role == "system":
            out.append(msg("system", content))
        elif role == "assistant":
            if pending is not None:
                out.append(tool(pending, ""))
                pending = None
            if h.get("tool_calls"):
                calls = []
                for c in h["tool_calls"]:
                    seen[c["id"]] = seen.get(c["id"], 0) + 1
                    cid = c["id"] if seen[c["id"]] == 1 else "%s__%d" % (c["id"], seen[c["id"]])
                    fn = c["function"]
                    calls.append(call(cid, fn["name"], fn.get("arguments", "")))
                out.append(assistant(content, calls))
            elif h.get("action") is not None:
                n += 1
                pending = "call_%04d" % n
                out.append(assistant(content, [call(pending, "bash", {"command": h["action"]})]))
            else:
                out.append(assistant(content))
        elif role == "tool":
            ids = h.get("tool_call_ids") or [h.get("tool_call_id")]
            n_seen = seen.get(ids[0], 1)
            out.append(tool(ids[0] if n_seen == 1 else "%s__%d" % (ids[0], n_seen), content))
        elif role == "user":
            if pending is not None:
                out.append(tool(pending, content))
                pending = None
            else:
                out.append(msg("user", content))
    if pending is not None:
        out.append(tool(pending, last))
    return out


def swe_agent_trajectory(steps):
    out = []
    for i, s in enumerate(steps, 1):
        cid = "call_%04d" % i
        calls = [call(cid, "bash", {"command": s.get("action", "")})]
        out.append(assistant(text_of(s.get("response")), calls))
        out.append(tool(cid, text_of(s.get("observation"))))
    return out


# ---------------------------------------------------------------------------------------------
# mini-SWE-agent .traj.json

FENCE = re.compile(r"```(?:mswea_bash_command|bash)\s*\n(.*?)\n```", re.S)


def mini_swe_agent(data, _frag):
    d = json.loads(data)
    messages = d["messages"] if isinstance(d, dict) else d
    out = []
    n = 0
    pending = []  # ids of calls still to answer, in order
    for m in messages:
        role = m.get("role")
        content = text_of(m.get("content"))
        if role == "assistant":
            for cid in pending:
                out.append(tool(cid, ""))
            pending = []
            if m.get("tool_calls"):
                calls = [
                    call(c["id"], c["function"]["name"], c["function"].get("arguments", ""))
                    for c in m["tool_calls"]
                ]
                out.append(assistant(content, calls))
                pending = [c["id"] for c in calls]
            else:
                found = FENCE.findall(content)
                if found:
                    n += 1
                    cid = "call_%04d" % n
                    calls = [call(cid, "bash", {"command": found[0].strip()})]
                    out.append(assistant(content, calls))
                    pending = [cid]
                else:
                    out.append(assistant(content))
        elif role == "tool":
            cid = m.get("tool_call_id")
            if cid in pending:
                pending.remove(cid)
            out.append(tool(cid, content))
        elif role in ("user", "exit") and pending:
            # A text-based agent's observation, or the submission answering the last call.
            out.append(tool(pending.pop(0), content))
        elif role == "exit":
            continue
        else:
            for cid in pending:
                out.append(tool(cid, ""))
            pending = []
            out.append(msg("system" if role == "system" else "user", content))
    for cid in pending:
        out.append(tool(cid, ""))
    return out


# ---------------------------------------------------------------------------------------------
# OpenHands v1 output JSONL (one record per instance)


def observation_text(o):
    for key in ("output", "content", "message", "text"):
        if key in o and o[key] is not None:
            return text_of(o[key])
    return ""


def openhands_v1(data, frag):
    want = frag.get("instance_id")
    records = json_lines(data)
    if want is not None:
        records = [r for r in records if str(r.get("instance_id")) == want]
        if not records:
            raise ValueError(f"no record with instance_id {want}")
    r = records[0]
    out = []
    if r.get("instruction"):
        out.append(msg("user", text_of(r["instruction"])))
    results = {}
    for e in r.get("history") or []:
        if e.get("kind") == "ObservationEvent" and e.get("tool_call_id"):
            results[e["tool_call_id"]] = observation_text(e.get("observation") or {})
    group = None  # (llm_response_id, assistant message)
    for e in r.get("history") or []:
        kind = e.get("kind")
        if kind == "ActionEvent":
            cid = e.get("tool_call_id")
            if cid not in results:
                continue  # never answered: the run stopped there
            tc = e.get("tool_call") or {}
            c = call(cid, tc.get("name") or e.get("tool_name", ""), tc.get("arguments", ""))
            thought = text_of(e.get("thought"))
            rid = e.get("llm_response_id")
            if group is not None and rid is not None and group[0] == rid:
                group[1]["tool_calls"].append(c)
                if thought:
                    group[1]["content"] = "\n".join(x for x in (group[1]["content"], thought) if x)
            else:
                group = (rid, assistant(thought, [c]))
                out.append(group[1])
        elif kind == "MessageEvent" and e.get("source") == "agent":
            group = None
            lm = e.get("llm_message") or {}
            out.append(assistant(text_of(lm.get("content"))))
    # Results right after their assistant message, in call order.
    final = []
    for m in out:
        final.append(m)
        for c in m.get("tool_calls") or []:
            final.append(tool(c["id"], results[c["id"]]))
    return final


# ---------------------------------------------------------------------------------------------
# gemini-cli stream JSONL (`--output-format stream-json`)


def gemini_stream(data, _frag):
    events = json_lines(data)
    results = {}
    for e in events:
        if e.get("type") == "tool_result":
            out_text = e.get("output")
            if not out_text and isinstance(e.get("error"), dict):
                out_text = e["error"].get("message", "")
            results[e.get("tool_id")] = text_of(out_text)
    out = []
    for e in events:
        t = e.get("type")
        if t == "message":
            role = e.get("role")
            content = text_of(e.get("content"))
            if role == "assistant":
                last = out[-1] if out else {}
                streamed = last.get("role") == "assistant" and not last.get("tool_calls")
                if e.get("delta") and streamed:
                    last["content"] += content
                else:
                    out.append(assistant(content))
            else:
                out.append(msg("user", content))
        elif t == "tool_use":
            tid = e.get("tool_id")
            if tid not in results:
                continue  # never answered
            calls = [call(tid, e.get("tool_name", ""), e.get("parameters") or {})]
            out.append(assistant("", calls))
            out.append(tool(tid, results[tid]))
    return out


# ---------------------------------------------------------------------------------------------
# Codex TUI session log (codex-rs/tui `session-log`): one JSON object a line


KEY = re.compile(r"KeyEvent \{ code: (.*?), modifiers: (.*?), kind: (\w+)")


def codex_tui(data, frag):
    lines = json_lines(data)
    want = int(frag.get("session", "0"))
    # Sessions are split at `/new`.
    sessions = [[]]
    for d in lines:
        if d.get("kind") == "slash_command" and d.get("command") == "New":
            sessions.append([])
            continue
        sessions[-1].append(d)
    if want >= len(sessions):
        raise ValueError(f"the log has {len(sessions)} sessions, not {want + 1}")
    out = []
    typed = ""
    open_reply = None
    for d in sessions[want]:
        kind = d.get("kind")
        if kind == "key_event":
            m = KEY.match(d.get("event", ""))
            if not m or m.group(3) != "Press":
                continue
            code, mods = m.group(1), m.group(2)
            if code.startswith("Char(") and "CONTROL" not in mods:
                ch = code[6:-2]  # Char('x'), Rust's Debug form
                typed += ch.encode().decode("unicode_escape") if "\\" in ch else ch
            elif code == "Backspace":
                typed = typed[:-1]
            elif code == "Enter":
                if typed.strip() and not typed.startswith("/"):
                    open_reply = None
                    out.append(msg("user", typed))
                typed = ""
        elif kind == "codex_event":
            m = (d.get("payload") or {}).get("msg") or {}
            t = m.get("type")
            if t == "agent_message":
                open_reply = assistant(m.get("message", ""))
                out.append(open_reply)
            elif t == "exec_command_begin":
                args = {"command": m.get("command", [])}
                args = json.dumps(args, ensure_ascii=False, separators=(",", ":"))
                c = call(m["call_id"], "shell", args)
                # A call joins the reply it follows, or starts one of its own.
                if open_reply is None or out[-1] is not open_reply:
                    open_reply = assistant("")
                    out.append(open_reply)
                open_reply.setdefault("tool_calls", []).append(c)
            elif t == "exec_command_end":
                text = (m.get("stdout") or "") + (m.get("stderr") or "")
                out.append(tool(m["call_id"], text))
                open_reply = None
    return answered_only(out)


def answered_only(out):
    """Drop calls without a result (a run cut short) and keep results right after their call."""
    results = {m["tool_call_id"]: m for m in out if m["role"] == "tool"}
    final = []
    for m in out:
        if m["role"] == "tool":
            continue
        if m.get("tool_calls"):
            m["tool_calls"] = [c for c in m["tool_calls"] if c["id"] in results]
            if not m["tool_calls"]:
                del m["tool_calls"]
                if not m["content"]:
                    continue
        final.append(m)
        for c in m.get("tool_calls") or []:
            final.append(results[c["id"]])
    return final


# ---------------------------------------------------------------------------------------------
# Claude Code, Codex rollouts, pi: the project's CLI


def cli_format(fmt):
    return {"claude-code": "claude-code", "codex": "codex", "pi": "pi"}[fmt]


def via_cli(cli, fmt, name, data, ext, workdir, text_only=False):
    src = os.path.join(workdir, name + ext)
    with open(src, "wb") as f:
        f.write(data)
    db = os.path.join(workdir, "import.db")
    subprocess.run(
        [cli, "session", "import", "--db", db, "--format", cli_format(fmt), "--session", name, src],
        check=True, stdout=subprocess.DEVNULL,
    )
    wire = subprocess.run(
        [cli, "session", "export", "--db", db, "--session", name, "--wire"],
        check=True, stdout=subprocess.PIPE,
    ).stdout
    out = json_lines(wire)
    for m in out:
        if m.get("role") == "developer":
            m["role"] = "system"
        if m.get("content") is None:
            m["content"] = ""
        elif not isinstance(m["content"], str) and text_only:
            m["content"] = flatten(m["content"])
    return answer_last(out)


def answer_last(out):
    """A log that ends inside a call (exported while it ran): the call gets an empty result,
    as SWE-agent's last call does, so that the recorded answer stays in the replay."""
    if out and out[-1].get("role") == "assistant":
        for c in out[-1].get("tool_calls") or []:
            out.append(tool(c["id"], ""))
    return out


def flatten(content):
    """A list of content parts as text; an image becomes a placeholder."""
    if content is None:
        return ""
    parts = []
    for p in content:
        if p.get("type") == "text":
            parts.append(p.get("text", ""))
        elif p.get("type") in ("image_url", "image"):
            parts.append("[image]")
    return "\n".join(parts)


# ---------------------------------------------------------------------------------------------
# Checking and writing

CONVERTERS = {
    "swe-agent": swe_agent,
    "mini-swe-agent": mini_swe_agent,
    "openhands-v1": openhands_v1,
    "gemini-cli-stream": gemini_stream,
    "codex-tui": codex_tui,
}


def check(name, messages):
    """The wire shape the simulator reads; exits on the first violation."""
    if not messages:
        sys.exit(f"{name}: empty conversation")
    i = 0
    while i < len(messages):
        m = messages[i]
        if m.get("role") not in ("system", "user", "assistant", "tool"):
            sys.exit(f"{name}: message {i} has role {m.get('role')!r}")
        content = m.get("content")
        if not isinstance(content, str) and not (
            m["role"] == "user"
            and isinstance(content, list)
            and all(isinstance(p, dict) and p.get("type") in ("text", "image_url") for p in content)
        ):
            sys.exit(f"{name}: message {i}'s content is neither text nor a user's text/image parts")
        if m["role"] == "tool":
            sys.exit(f"{name}: message {i} is a tool result without its call")
        calls = m.get("tool_calls") or []
        if calls and m["role"] != "assistant":
            sys.exit(f"{name}: message {i} has tool_calls but is {m['role']}")
        ids = [c["id"] for c in calls]
        for c in calls:
            if c.get("type") != "function" or not isinstance(c["function"].get("arguments"), str):
                sys.exit(f"{name}: message {i} has a malformed call {c}")
        if len(set(ids)) != len(ids):
            sys.exit(f"{name}: message {i} repeats a call id")
        got = []
        j = i + 1
        while j < len(messages) and messages[j].get("role") == "tool":
            got.append(messages[j].get("tool_call_id"))
            j += 1
        if sorted(got) != sorted(ids):
            sys.exit(f"{name}: message {i}'s calls {ids} are answered by {got}")
        i = j


def write_jsonl(path, messages):
    with open(path, "w", encoding="utf-8") as f:
        for m in messages:
            f.write(json.dumps(m, ensure_ascii=False, separators=(",", ":")) + "\n")


def main():
    ap = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    ap.add_argument("--sessions", default=os.path.join(HERE, "sessions.tsv"),
                    help="the table (default: beside this script)")
    ap.add_argument("--mirror-root", help="directory of mirrors, ROOT/OWNER+NAME[/repo]")
    ap.add_argument("--git-dir", action="append", default=[], metavar="OWNER/NAME=PATH",
                    help="a repository's git directory (repeatable)")
    ap.add_argument("--out", required=True,
                    help="output directory; sessions go to OUT/sessions/NAME.jsonl")
    ap.add_argument("--cli", default=os.path.join(HERE, "..", "..", "target", "release",
                                                  "hermes-compaction"),
                    help="the hermes-compaction binary, for Claude Code, Codex and pi logs")
    ap.add_argument("--raw", action="store_true",
                    help="also keep the files as read in OUT/raw/NAME.EXT")
    ap.add_argument("--text-only", action="store_true",
                    help="write a user's image as the text [image] (the default keeps OpenAI "
                         "image parts, as the measured split had them)")
    ap.add_argument("--only", action="append", default=[], metavar="NAME",
                    help="convert only these sessions (repeatable; leaves MANIFEST.tsv alone)")
    args = ap.parse_args()

    explicit = {}
    for g in args.git_dir:
        repo, _, path = g.partition("=")
        explicit[repo] = path
    rows = read_rows(args.sessions)
    if args.only:
        rows = [r for r in rows if r["name"] in args.only]
    os.makedirs(os.path.join(args.out, "sessions"), exist_ok=True)
    if args.raw:
        os.makedirs(os.path.join(args.out, "raw"), exist_ok=True)
    manifest = []
    with tempfile.TemporaryDirectory(prefix="validation-") as work:
        for r in rows:
            path, frag = split_fragment(r["path"])
            gdir = git_dir(r["repo"], args.mirror_root, explicit)
            data, full = read_source(gdir, r["commit"], path)
            ext = raw_ext(path)
            if args.raw:
                with open(os.path.join(args.out, "raw", r["name"] + ext), "wb") as f:
                    f.write(data)
            fmt = r["format"]
            if fmt in CONVERTERS:
                messages = CONVERTERS[fmt](data, frag)
            else:
                cli = os.path.abspath(args.cli)
                if not os.access(cli, os.X_OK):
                    sys.exit(f"{r['name']}: {fmt} needs the CLI; build it or give --cli PATH")
                messages = via_cli(cli, fmt, r["name"], data, ext, work, args.text_only)
            check(r["name"], messages)
            write_jsonl(os.path.join(args.out, "sessions", r["name"] + ".jsonl"), messages)
            print(f"{r['name']}\t{r['repo']}@{full[:10]}\t{len(messages)} messages")
            manifest.append([r["name"], r["repo"], full, r["path"], r["licence"], fmt,
                             str(len(messages)), "validation"])
    if args.only:
        return
    # The split is the last column, as docs/ECONOMICS.md's commands read it.
    with open(os.path.join(args.out, "MANIFEST.tsv"), "w", encoding="utf-8") as f:
        f.write("name\trepo\tcommit\tpath\tlicence\tformat\tmessages\tsplit\n")
        for row in manifest:
            f.write("\t".join(row) + "\n")


if __name__ == "__main__":
    main()
