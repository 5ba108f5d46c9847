#!/usr/bin/env python3
"""How well can what a pass keeps be chosen without knowing the future?

Reads the needs files that `hermes-compaction simulate --needs FILE` writes (one JSON line per
session: for every recorded message its role, tool, size, the answers before it, the answers
that need it by the re-read model's rule, and the digests of the identifiers it holds) and
answers two questions with them, on sessions the predictor was not fitted on:

1. The need curve: the chance that a message is needed by one of the next H answers, by its
   age in answers (and by any later answer at all).
2. Coverage at a budget: at points of a session where the prompt is large (at least
   --min-prompt-chars of wire JSON before the answer), keep a share of the prompt's characters
   chosen by a rule, and count the share of the next H answers' needs the kept messages hold.
   The rules: `tail` (the newest messages), `last-use` (the most recently written or used,
   then the newest), `used-4` (used by one of the last four answers, then the newest), `learned` (a
   gradient-boosted classifier fitted on --train, ranking by its probability per character)
   and `oracle` (the needed messages, smallest first: what foresight keeps).

The learned model sees only what a compressor could know at the time: age, position, size,
role, tool, the message's own use so far, the user turn, and how many of its identifiers the
last five messages hold. --superseded adds one more: the share of its identifiers that a later
message also holds. The re-read model sends a need to the latest holder of an identifier, so
that feature is partly the measure's own rule; it is reported apart.

Needs numpy and scikit-learn (`pip install numpy scikit-learn`); nothing else, no network.

    hermes-compaction simulate --policies none --needs fx.jsonl --input FIXTURES/*.jsonl
    hermes-compaction simulate --policies none --needs val.jsonl --input VALIDATION/*.jsonl
    python3 tools/predictors/predict.py --train fx.jsonl --test val.jsonl
"""

import argparse
import bisect
import json
import math
import sys
from collections import Counter

ROLES = ["system", "developer", "user", "assistant", "tool", "other"]
TOOL_KINDS = ["read", "view", "cat", "bash", "shell", "exec", "grep", "search", "glob", "find",
              "list", "ls", "edit", "replace", "write", "create", "patch", "todo", "task", "web"]
FEATURES = ["log age (answers)", "log distance (messages)", "log chars", "role", "tool kind",
            "uses so far", "log answers since last use", "in the current user turn",
            "user turns back", "in the first three", "relative position", "log prompt chars",
            "share of ids in the last five messages", "log ids in the last five messages",
            "log ids held", "share of ids held later"]
CATEGORICAL = [3, 4]


def read_sessions(paths):
    sessions = []
    for path in paths:
        try:
            f = open(path, encoding="utf-8")
        except OSError as e:
            sys.exit(f"{path}: {e.strerror}")
        with f:
            for n, line in enumerate(f, 1):
                line = line.strip()
                if not line:
                    continue
                try:
                    rec = json.loads(line)
                    msgs = rec["messages"]
                    for m in msgs:
                        m["used_by"], m["answer"], m["chars"]  # noqa: B018 (shape check)
                except (ValueError, KeyError, TypeError) as e:
                    sys.exit(f"{path}:{n}: not a needs line ({e})")
                sessions.append((rec.get("transcript", f"{path}:{n}"), msgs))
    if not sessions:
        sys.exit(f"no session in {', '.join(paths)}")
    return sessions


def tool_kind(name):
    if not name:
        return len(TOOL_KINDS) + 1
    low = name.lower()
    for k, word in enumerate(TOOL_KINDS):
        if word in low:
            return k
    return len(TOOL_KINDS)


def points(msgs, horizon, every, min_prompt_chars, superseded):
    """Yields, per evaluation point, (features, need weights, chars, prompt chars)."""
    n = len(msgs)
    chars = [m["chars"] for m in msgs]
    answer = [m["answer"] for m in msgs]
    uses = [m["used_by"] for m in msgs]
    ids = [set(m.get("ids", [])) for m in msgs]
    role = [m["role"] if m["role"] in ROLES else "other" for m in msgs]
    kind = [tool_kind(m.get("tool")) if m["role"] == "tool" else len(TOOL_KINDS) + 2
            for m in msgs]
    turn, u = [], 0
    for r in role:
        u += r == "user"
        turn.append(u)
    first_of_answer = {}
    for i, r in enumerate(role):
        if r == "assistant":
            first_of_answer.setdefault(answer[i], i)
    answers = max(answer[-1] + (role[-1] == "assistant"), 0) if n else 0
    for t in range(0, answers, every):
        p = first_of_answer.get(t)
        if p is None:
            continue
        prompt = sum(chars[:p])
        if prompt < min_prompt_chars:
            continue
        recent = set().union(*ids[max(0, p - 5):p])
        later, held_later = set(), [0.0] * p
        for j in range(p - 1, -1, -1):
            held_later[j] = len(ids[j] & later) / len(ids[j]) if ids[j] else 1.0
            later |= ids[j]
        rows, weights = [], []
        for j in range(p):
            k = bisect.bisect_left(uses[j], t)
            last = uses[j][k - 1] if k else None
            overlap = len(ids[j] & recent)
            rows.append([
                math.log1p(t - answer[j]), math.log1p(p - j), math.log1p(chars[j]),
                ROLES.index(role[j]), kind[j], k,
                math.log1p(t - last) if last is not None else 20.0,
                float(turn[j] == turn[p]), turn[p] - turn[j], float(j < 3), j / p,
                math.log1p(prompt), overlap / max(1, len(ids[j])), math.log1p(overlap),
                math.log1p(len(ids[j])), held_later[j] if superseded else 0.0,
            ])
            weights.append(sum(1 for a in uses[j][k:] if a < t + horizon))
        yield rows, weights, chars[:p], prompt


def curve(sessions, horizon):
    """The need curve: per age bucket, needed within `horizon` answers, needed ever."""
    seen, soon, ever = Counter(), Counter(), Counter()
    for _, msgs in sessions:
        answers = max((m["answer"] for m in msgs), default=0) + 1
        for m in msgs:
            for t in range(m["answer"] + 1, answers):
                b = min(t - m["answer"], 64).bit_length()
                seen[b] += 1
                k = bisect.bisect_left(m["used_by"], t)
                nxt = m["used_by"][k] if k < len(m["used_by"]) else None
                soon[b] += nxt is not None and nxt < t + horizon
                ever[b] += nxt is not None
    return [(b, seen[b], soon[b] / seen[b], ever[b] / seen[b]) for b in sorted(seen)]


def keep(order, chars, budget):
    used, kept = 0, []
    for j in order:
        if used + chars[j] <= budget:
            used += chars[j]
            kept.append(j)
    return kept


def coverage(np, model, pts, budgets):
    rules = ["tail", "last-use", "used-4", "learned", "oracle"]
    sums = {(r, b): 0.0 for r in rules for b in budgets}
    count = 0
    for rows, weights, chars, prompt in pts:
        w = np.array(weights, dtype=float)
        if w.sum() == 0:
            continue
        x = np.array(rows, dtype=float)
        c = np.array(chars, dtype=float)
        j = np.arange(len(rows))
        recency = -j
        since_use = x[:, 6]
        since_touch = np.minimum(x[:, 0], since_use)
        orders = {
            "tail": np.argsort(-j, kind="stable"),
            "last-use": np.lexsort((recency, since_touch)),
            "used-4": np.lexsort((recency, since_use > math.log1p(4))),
            "oracle": np.lexsort((c, w == 0)),
        }
        if model is not None:
            prob = model.predict_proba(x)[:, 1]
            orders["learned"] = np.argsort(-prob / (c + 400.0), kind="stable")
        for b in budgets:
            for r, o in orders.items():
                kept = keep(o, chars, b * prompt)
                sums[(r, b)] += w[kept].sum() / w.sum()
        count += 1
    return {k: v / max(count, 1) for k, v in sums.items()}, count


def main():
    ap = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    ap.add_argument("--train", nargs="+", required=True, help="needs files to fit on")
    ap.add_argument("--test", nargs="+", required=True, help="needs files to score on")
    ap.add_argument("--horizon", type=int, default=8, help="answers ahead (default 8)")
    ap.add_argument("--budgets", default="0.1,0.2,0.3,0.5",
                    help="shares of the prompt's characters kept (default 0.1,0.2,0.3,0.5)")
    ap.add_argument("--every", type=int, default=3, help="an evaluation point every N answers")
    ap.add_argument("--min-prompt-chars", type=int, default=100_000,
                    help="evaluate where the prompt before the answer is at least this large")
    ap.add_argument("--superseded", action="store_true",
                    help="let the learned model see the share of ids a later message holds")
    args = ap.parse_args()
    try:
        budgets = [float(b) for b in args.budgets.split(",")]
    except ValueError:
        sys.exit(f"--budgets: not a list of numbers: {args.budgets}")
    if not all(0 < b <= 1 for b in budgets) or args.horizon < 1 or args.every < 1:
        sys.exit("--budgets must lie in (0, 1]; --horizon and --every at least 1")
    try:
        import numpy as np
        from sklearn.ensemble import HistGradientBoostingClassifier
    except ImportError:
        sys.exit("needs numpy and scikit-learn: pip install numpy scikit-learn")

    train = read_sessions(args.train)
    test = read_sessions(args.test)
    pt = lambda ss: [q for _, m in ss for q in points(m, args.horizon, args.every,
                                                      args.min_prompt_chars, args.superseded)]
    fit = pt(train)
    x = np.array([r for rows, *_ in fit for r in rows], dtype=float)
    y = np.array([w > 0 for _, ws, *_ in fit for w in ws])
    if len(set(y.tolist())) < 2:
        sys.exit("the training files hold no evaluation point with and without needs")
    model = HistGradientBoostingClassifier(
        max_iter=200, learning_rate=0.05, max_leaf_nodes=15, early_stopping=False,
        categorical_features=CATEGORICAL, random_state=0)
    model.fit(x, y)

    print(f"need curve of the test sessions ({len(test)}): P(needed within {args.horizon} "
          "answers) / P(needed ever), by age in answers")
    for b, n, soon, ever in curve(test, args.horizon):
        lo, hi = (1 << (b - 1)), (1 << b) - 1
        age = f"{lo}" if lo == hi else f"{lo}-{hi}" if b < 7 else f"{lo}+"
        print(f"  age {age:>6}: {soon:.3f} / {ever:.3f}   ({n} message-answers)")
    cov, count = coverage(np, model, pt(test), budgets)
    print(f"coverage of the next {args.horizon} answers' needs at a budget "
          f"({count} points; fitted on {len(train)} sessions, {len(x)} rows"
          f"{', with the superseded feature' if args.superseded else ''})")
    print("  " + "rule".ljust(10) + "".join(f"{b:>8.0%}" for b in budgets))
    for r in ["tail", "last-use", "used-4", "learned", "oracle"]:
        print("  " + r.ljust(10) + "".join(f"{cov[(r, b)]:>8.3f}" for b in budgets))


if __name__ == "__main__":
    main()
