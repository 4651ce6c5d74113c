"""Benchmark: does the digest tell the truth under pressure? Every fact class at 5/10/20/40x.

Seeded synthetic sessions (``compactkit.evals.synth``: three domains — coding, data, support —
and four agent styles — typed tools, one bash tool, an editor tool, ReAct text actions) are
compacted by ``DigestCompressor(target_tokens=before // ratio)`` at 5x, 10x, 20x and 40x
(exact o200k_base tokens, the whole request). The generator plants and labels every fact; the
eval scorer (``compactkit.evals.scoring``) decides whether the compacted request still holds
each one. Reported per ratio:

* the share kept of every retention class (constraint, artifact_modified, artifact_read, error,
  identifier, recall, decision, continuation, update, tool_state), against the targets
  (>= 0.95 at 10x, >= 0.85 at 20x, >= 0.60 at 40x);
* ``stale``: value updates whose superseded value is presented as current (target 0);
* ``invented``: identifiers, constraints and goals the summary holds that the transcript does
  not (target 0);
* ``action``: of the files the summary lists, the share listed with the right action (a file
  created, modified or deleted under "Files modified", a file only read under "Files read");
* ``resolved``: of the errors the summary lists, the share marked resolved, over all sessions
  and per domain. Not a share to drive to 1.0: in the coding and data sessions every planted
  error is followed by an edit and a passing run of the checks (a fix the digest can see), but
  in the support sessions a refused refund or a carrier rejection is followed by an escalation
  or another tool, never by the same call succeeding — not resolved, and the digest rightly
  leaves those open. What must hold is that every error marked resolved was (no false mark).

Then, per ratio with a target, the ``oracle`` (``_oracle.py``): can *any* summary reach every
class's target share at that ratio? Per session, the room is the target minus what must be sent
whatever the summary says (the instructions, the groups no compressor may fold — the newest
group, the latest user input, pending calls — the tool schemas and the summary message), and,
in compactkit's forms, minus the title, the goal and the rules kept whole and the trimming
note. The need is the fewest tokens of lines that hold each class's target share of its probes,
pooled over the sessions as the shares above are (a probe the request holds anyway is free),
in three forms: ``digest``, each probed fact as the digest renders a bare bullet (an error line
in backticks, a decision's checked phrases), under its heading; ``entries``, only the digest's
own entries, each in its barest form (a decision clipped to 80 characters, a measurement with
its earlier runs); ``bare``, the facts' words alone (no goal, title or note; the rules a class
like the others). A probe costs the least tokens per probe of a line holding its words (an
error line holding a path counts for both), so ``needs`` is a lower bound: over ``room``, no
summary of that form reaches the targets. ``found`` means actual summaries, one per session
within its own target, were built and scored with the same scorer (greedy: not finding them
proves nothing). ``alone`` counts the sessions that could not reach the target shares of their
own probes within their own room.

Last, per ratio, ``every entry alike``: if every entry of a class is as likely to be asked for
(the digest cannot know which will be), a summary keeps a class's target share of its facts by
keeping that share of its entries; the line gives the tokens of the cheapest such share of every
scored class's entries (pooled, at their barest: ``_forms.bare`` then ``barer``) against the
same room.

Run: ``python evals/benchmarks/bench_digest_truth.py`` (``--tiny`` for CI's smoke run,
``--json`` for machine-readable output, ``--seeds N`` for more sessions per shape,
``--stored`` to number the items as a stored memory numbers them).
"""

from __future__ import annotations

import argparse
import json
import re
import statistics
import sys
import time
from typing import Any

from _oracle import FORMS, OracleCase, Witness, cheapest, every_entry, oracle_case, within_each

from compactkit import DigestCompressor, MemorySnapshot
from compactkit.budget import TiktokenCounter
from compactkit.compressors import SummaryDocument
from compactkit.evals import scoring
from compactkit.evals.schema import CLASSES, ArtifactProbe, Case, RecallProbe
from compactkit.evals.synth import DOMAINS, STYLES, SynthSpec, generate
from compactkit.formats.transcript import parse_transcript

RATIOS = (5, 10, 20, 40)
TARGETS = {10: 0.95, 20: 0.85, 40: 0.60}
_PREFIX = re.compile(r"^(?:Later: |\((?:system|developer|user)\) )")
_REFS = re.compile(r" *\[#[0-9#,\s\u2013-]+\]$")  # an entry's provenance references
_NOTE = re.compile(r" \((?:current|superseded)[^)]*\)$|\s*[—-] (?:from|resolved).*$")


def _plain(entry: str) -> str:
    """An entry's words as the transcript would hold them: no label, no references, no clip
    mark, no backticks."""
    text = _PREFIX.sub("", _REFS.sub("", entry)).replace("`", "")
    return text.removesuffix("…").removesuffix("...").strip()


def invented_entries(doc: SummaryDocument, source: str) -> list[str]:
    """Constraints and goals of ``doc`` whose words the transcript ``source`` does not hold."""
    flat = scoring.normalize(source.replace("`", ""))
    out = []
    for key in ("constraints", "goal"):
        for entry in doc.entries(key):
            words = scoring.normalize(_plain(entry))
            pieces = [p for p in re.split(r"\s*…\s*", words) if p]
            if any(p not in flat for p in pieces):
                out.append(f"{key}: {entry[:100]}")
    return out


def measure(
    case: Case, ratio: int, counter: TiktokenCounter, *, stored: bool = False
) -> dict[str, Any]:
    """Compact ``case`` to ``before // ratio`` tokens and score it (``stored``: its items
    numbered 1..n, as a stored memory numbers them, so that entries carry references)."""
    transcript = parse_transcript(json.dumps(case.transcript), format=case.format, source=case.id)
    tools = tuple(transcript.tools)
    items = transcript.items
    if stored:
        items = [item.model_copy(update={"seq": n}) for n, item in enumerate(items, 1)]
    snapshot = MemorySnapshot.from_items(items)
    source = snapshot.render_items()
    before = counter.count(source, tools=tools).tokens
    target = max(1, before // ratio)
    compressor = DigestCompressor(target_tokens=target, counter=counter, tools=tools)
    start = time.perf_counter()
    result = compressor.compress(snapshot)
    seconds = time.perf_counter() - start
    compacted = result.snapshot.render_items()
    scores = scoring.score_probes(case.probes, compacted)
    doc = SummaryDocument.parse(result.snapshot.summary or "")
    source_text = scoring.source_text(source)
    written = scoring.written_text(compacted, source)
    kept: dict[str, list[int]] = {}
    for s in scores:
        kept.setdefault(s.cls, []).append(int(s.kept))
    # files: the action the summary lists each file under
    modified = "\n".join(doc.entries("files_modified"))
    read = "\n".join(doc.entries("files_read"))
    right = listed = 0
    for probe in case.probes:
        if not isinstance(probe, ArtifactProbe):
            continue
        in_modified, in_read = f"`{probe.path}`" in modified, f"`{probe.path}`" in read
        if not (in_modified or in_read):
            continue
        listed += 1
        changed = probe.action != "read"
        right += int(in_modified == changed and (changed or in_read))
    errors = doc.entries("errors")
    shown = [
        e
        for p in case.probes
        if isinstance(p, RecallProbe) and p.kind == "error"
        for e in errors
        if scoring.normalize(p.fact)[:60] in scoring.normalize(e.replace("`", ""))
    ]
    return {
        "case": case.id,
        "ratio": ratio,
        "before": before,
        "after": result.stats.tokens_after,
        "target": target,
        "outcome": result.outcome,
        "seconds": seconds,
        "kept": kept,
        "stale": sum(s.stale for s in scores),
        "invented": [
            *scoring.hallucinated(written, source_text),
            *invented_entries(doc, "\n".join(scoring.context_lines(source))),
        ],
        "action": (right, listed),
        "resolved": (sum("resolved" in e for e in shown), len(shown)),
    }


def run(cases: list[Case], *, stored: bool = False) -> dict[str, Any]:
    """Every case at every ratio; the per-class shares pooled over the cases."""
    counter = TiktokenCounter("o200k_base")
    rows = [measure(case, ratio, counter, stored=stored) for case in cases for ratio in RATIOS]
    table: dict[int, dict[str, Any]] = {}
    for ratio in RATIOS:
        mine = [r for r in rows if r["ratio"] == ratio]
        shares = {}
        for cls in CLASSES:
            values = [v for r in mine for v in r["kept"].get(cls, [])]
            if values:
                shares[cls] = round(sum(values) / len(values), 3)
        action = [r["action"] for r in mine]
        resolved = [r["resolved"] for r in mine]
        by_domain: dict[str, list[tuple[int, int]]] = {}
        for r in mine:
            by_domain.setdefault(r["case"].split("-", 1)[0], []).append(r["resolved"])
        table[ratio] = {
            "classes": shares,
            "stale": sum(r["stale"] for r in mine),
            "invented": sorted({i for r in mine for i in r["invented"]}),
            "action": round(sum(a for a, _ in action) / max(1, sum(n for _, n in action)), 3),
            "resolved": _share(resolved),
            "resolved_by_domain": {d: _share(v) for d, v in sorted(by_domain.items())},
            "met_target": sum(r["after"] <= r["target"] for r in mine),
            "cases": len(mine),
            "median_ms": round(statistics.median(r["seconds"] for r in mine) * 1e3, 1),
        }
    return {"cases": [c.id for c in cases], "ratios": table, "oracle": oracle(cases, counter)}


def oracle(cases: list[Case], counter: TiktokenCounter) -> dict[str, Any]:
    """Per form and ratio with a target: the fewest tokens the facts need against the room
    (pooled), the summaries found within each session's target, and per session."""
    out: dict[str, Any] = {}
    for form in FORMS:
        seen = [oracle_case(case, counter, form) for case in cases]
        for ratio, share in TARGETS.items():
            shares = dict.fromkeys(CLASSES, share)
            bound = cheapest(seen, ratio, shares)
            found = within_each(seen, ratio, shares, counter)
            if not found.met:  # once more, the classes it left short first
                short = [c for c, v in found.shares.items() if c in shares and v < share]
                found = max(found, within_each(seen, ratio, shares, counter, short), key=_better)
            out[f"{form}:{ratio}"] = {
                "needs": bound.need,
                "room": bound.room,
                "fits": bound.fits,
                "classes": {c: vars(n) for c, n in sorted(bound.classes.items())},
                "found": found.met,
                "found_tokens": found.tokens,
                "found_shares": {c: round(v, 3) for c, v in sorted(found.shares.items())},
                "sessions": [_alone(one, ratio, shares) for one in seen],
            }
            if form == "entries":
                alike = every_entry(seen, ratio, share)
                out[f"every_entry:{ratio}"] = {
                    "needs": alike.need,
                    "room": alike.room,
                    "fits": alike.fits,
                    "classes": {
                        p: {"entries": n, "tokens": t} for p, (n, t) in alike.pools.items()
                    },
                }
    return out


def _better(found: Witness) -> tuple[bool, float]:
    """Met first, then the smallest share."""
    return found.met, min(found.shares.values(), default=0.0)


def _alone(one: OracleCase, ratio: int, shares: dict[str, float]) -> dict[str, Any]:
    """One session on its own: its room and what its own target shares need."""
    bound = cheapest([one], ratio, shares)
    return {"case": one.case, "needs": bound.need, "room": bound.room, "fits": bound.fits}


def _share(pairs: list[tuple[int, int]]) -> float:
    """sum(found) / sum(of), rounded (0 when there is nothing)."""
    return round(sum(a for a, _ in pairs) / max(1, sum(n for _, n in pairs)), 3)


def _print(report: dict[str, Any]) -> None:
    table = report["ratios"]
    print(f"digest truth on {len(report['cases'])} synthetic sessions")
    header = f"{'class':<18}" + "".join(f"{f'{r}x':>8}" for r in RATIOS)
    print(header)
    for cls in CLASSES:
        cells = []
        for ratio in RATIOS:
            share = table[ratio]["classes"].get(cls)
            miss = share is not None and ratio in TARGETS and share < TARGETS[ratio]
            cells.append(f"{'-' if share is None else f'{share:.2f}'}{'!' if miss else ' ':1}")
        print(f"{cls:<18}" + "".join(f"{c:>8}" for c in cells))
    print(f"{'target':<18}" + "".join(f"{TARGETS.get(r, '-'):>8} " for r in RATIOS))
    for key in ("stale", "action", "resolved", "met_target", "median_ms"):
        print(f"{key:<18}" + "".join(f"{table[r][key]!s:>8} " for r in RATIOS))
    for domain in table[RATIOS[0]]["resolved_by_domain"]:
        cells = "".join(f"{table[r]['resolved_by_domain'][domain]!s:>8} " for r in RATIOS)
        print(f"{'  ' + domain:<18}{cells}")
    print(f"{'invented':<18}" + "".join(f"{len(table[r]['invented']):>8} " for r in RATIOS))
    for ratio in RATIOS:
        for entry in table[ratio]["invented"][:5]:
            print(f"  invented at {ratio}x: {entry}")
    print("('!' marks a share under its target)")
    _print_oracle(report["oracle"])


def _print_oracle(found: dict[str, Any]) -> None:
    print("oracle (the fewest tokens of lines holding every class's target share, pooled):")
    for form in FORMS:
        for ratio in TARGETS:
            row = found[f"{form}:{ratio}"]
            alone = sum(not s["fits"] for s in row["sessions"])
            verdict = "fits" if row["fits"] else "does NOT fit"
            within = "found" if row["found"] else "not found"
            print(
                f"  {ratio}x {form:<8} oracle: needs {row['needs']:,} tokens, room "
                f"{row['room']:,} -> {verdict}; summaries within each session's target: "
                f"{within} ({row['found_tokens']:,} tokens); alone: {alone} of "
                f"{len(row['sessions'])} sessions over their room"
            )
    for ratio in TARGETS:
        row = found[f"every_entry:{ratio}"]
        verdict = "fits" if row["fits"] else "does NOT fit"
        parts = ", ".join(f"{p} {c['tokens']:,}" for p, c in row["classes"].items())
        print(
            f"  {ratio}x every entry alike (any may be asked for): the cheapest "
            f"{TARGETS[ratio]:.0%} of every scored class's entries at their barest need "
            f"{row['needs']:,} tokens, room {row['room']:,} -> {verdict} ({parts})"
        )
    for ratio in TARGETS:
        digest, entries = found[f"digest:{ratio}"], found[f"entries:{ratio}"]
        bare = found[f"bare:{ratio}"]
        if digest["found"]:
            answer = "reachable by a summary in compactkit's form that writes the probed facts"
        elif not bare["fits"]:
            answer = "reachable by no summary"
        elif not digest["fits"] and bare["found"]:
            answer = "reachable only by a summary without compactkit's goal, rules and note"
        else:
            answer = "undecided (the bound fits, no summary within each session was found)"
        if entries["found"]:
            mine = "reach every target (summaries found)"
        elif entries["fits"]:
            mine = "fit the bound, but no summaries within each session's target were found"
        else:
            mine = "cannot reach every target (over the bound)"
        print(f"  verdict {ratio}x: {answer}; the digest's own entries at their barest {mine}")


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0] if __doc__ else "")
    parser.add_argument("--tiny", action="store_true", help="a few seconds, for CI")
    parser.add_argument("--json", action="store_true")
    parser.add_argument("--seeds", type=int, default=2, help="sessions per domain and style")
    parser.add_argument("--size", type=int, default=40_000, help="session size in tokens")
    parser.add_argument(
        "--stored",
        action="store_true",
        help="number the items as a stored memory does (entries then carry references)",
    )
    args = parser.parse_args()
    if args.tiny:
        specs = [
            SynthSpec(domain="coding", style="bash", size_tokens=12_000, seed=0),
            SynthSpec(domain="support", style="typed", size_tokens=12_000, seed=0),
        ]
    else:
        specs = [
            SynthSpec(domain=domain, style=style, size_tokens=args.size, seed=seed)
            for domain in DOMAINS
            for style in STYLES
            for seed in range(args.seeds)
        ]
    report = run([generate(spec) for spec in specs], stored=args.stored)
    if args.json:
        json.dump(report, sys.stdout, indent=1)
        print()
    else:
        _print(report)


if __name__ == "__main__":
    main()
