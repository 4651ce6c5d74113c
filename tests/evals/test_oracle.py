"""bench_digest_truth's oracle (evals/benchmarks/_oracle.py): the fewest tokens of lines that
hold each class's target share, checked on cases small enough to work out by hand."""

from __future__ import annotations

import importlib.util
import json
import math
import sys
from pathlib import Path
from types import ModuleType
from typing import Any

from compactkit.budget import TiktokenCounter
from compactkit.evals.schema import Case, ConstraintProbe, RecallProbe

ROOT = Path(__file__).resolve().parents[2]
COUNTER = TiktokenCounter("o200k_base")


def _load() -> ModuleType:
    spec = importlib.util.spec_from_file_location("_oracle", ROOT / "evals/benchmarks/_oracle.py")
    assert spec is not None and spec.loader is not None
    module = importlib.util.module_from_spec(spec)
    sys.modules["_oracle"] = module  # (its dataclasses look their module up)
    spec.loader.exec_module(module)
    return module


oracle = _load()


def fact(
    case: str, cls: str, line: str, cost: int | None, share: float | None = None, **flags: bool
) -> Any:
    share = float(cost or 0) if share is None else share
    return oracle.OracleFact(case, cls, "errors", line, cost, share=share, **flags)


def case(name: str, before: int, base: int, *facts: Any) -> Any:
    from compactkit.compressors import SummaryDocument

    return oracle.OracleCase(name, (), "digest", (), (), SummaryDocument(), before, facts, base)


def test_the_cheapest_lines_of_a_class_are_taken_from_any_case() -> None:
    a = case("a", 1_000, 100, fact("a", "error", "a1", 5), fact("a", "error", "a2", 9))
    b = case(
        "b",
        1_000,
        200,
        fact("b", "error", "b1", 3),
        fact("b", "error", "b2", 4),
        fact("b", "error", "b3", 20),
        fact("b", "identifier", "id", 4),
    )
    bound = oracle.cheapest([a, b], 2, {"error": 0.6})
    # 5 errors, 0.6 of them: 3, the cheapest over both cases (3 + 4 + 5); no identifier asked
    assert bound.need == 12 and bound.fits and bound.satisfiable
    assert sorted(f.line for f in bound.chosen) == ["a1", "b1", "b2"]
    assert bound.room == (500 - 100) + (500 - 200)
    assert vars(bound.classes["error"]) == {
        "probes": 5,
        "needed": 3,
        "free": 0,
        "written": 3,
        "tokens": 12,
    }
    assert "identifier" not in bound.classes
    # at 10x the room is 0 + 0: the same lines no longer fit
    assert oracle.cheapest([a, b], 10, {"error": 0.6}).fits is False


def test_free_shared_and_required_lines() -> None:
    one = case(
        "a",
        1_000,
        100,
        fact("a", "error", "held", 50, free=True),  # the request holds it: free
        fact("a", "error", "e1", 7),
        fact("a", "error", "e2", 8),
        fact("a", "error", "e3", 6, share=3.0),  # a line of 6 tokens holding it and another
        fact("a", "recall", "m", 10, share=5.0),  # one line holding two probes: 5 each
        fact("a", "recall", "m", 10, share=5.0),
        fact("a", "recall", "m2", 6),
        fact("a", "update", "`x` = 2 (current)", 9, must=True),  # its old value reads current
    )
    bound = oracle.cheapest([one], 1, {"error": 0.75, "recall": 2 / 3})
    # errors: 3 of 4 needed, 1 free -> the two cheapest shares (3 + 7); recall: 2 of 3 -> the
    # shared line's two probes (5 + 5), not m2 (6); the update must be written (9)
    assert bound.need == (3 + 7) + (5 + 5) + 9
    assert bound.classes["error"].free == 1 and bound.classes["error"].written == 2
    assert bound.classes["recall"].tokens == 10
    assert bound.classes["update"].written == 1
    pending = case("a", 10, 0, oracle.OracleFact("a", "tool_state", None, "", None))
    assert oracle.cheapest([pending], 1, {}).need == 0
    assert oracle.cheapest([pending], 1, {"tool_state": 1.0}).satisfiable is False


ERRORS = [
    "ValueError: bad token",
    "KeyError: 'retry_budget_for_the_upstream_gateway_client'",
    "TypeError: expected str, got int",
    "ZeroDivisionError: division by zero in the backoff calculator of the transport layer",
    "OSError: disk full",
]


def transcript() -> list[dict[str, Any]]:
    messages: list[dict[str, Any]] = [
        {"role": "system", "content": "You are a coding agent."},
        {"role": "user", "content": "Fix the parser.\n\nNever touch setup.py."},
    ]
    for n, error in enumerate(ERRORS):
        call = {"id": f"c{n}", "type": "function"}
        call["function"] = {"name": "bash", "arguments": json.dumps({"command": f"pytest t{n}"})}
        messages.append({"role": "assistant", "content": None, "tool_calls": [call]})
        noise = "".join(f"collected line {i} of the run\n" for i in range(30))
        messages.append({"role": "tool", "tool_call_id": f"c{n}", "content": noise + error})
    messages.append({"role": "assistant", "content": "Looking into it."})
    # the last error is in the latest user input, which every request keeps
    messages.append({"role": "user", "content": f"Go on; the last run said {ERRORS[-1]}"})
    return messages


def test_a_session_worked_out_by_hand() -> None:
    probes = [RecallProbe(fact=e, kind="error") for e in ERRORS]
    test = Case(
        id="t",
        transcript=transcript(),
        format="chat",
        probes=(
            *probes,
            ConstraintProbe(text="Never touch setup.py."),
        ),
    )
    seen = oracle.oracle_case(test, COUNTER, "digest")
    errors = [f for f in seen.facts if f.cls == "error"]
    assert [f.free for f in errors] == [False] * 4 + [True]  # "OSError: disk full" is kept
    rule = next(f for f in seen.facts if f.cls == "constraint")
    assert rule.free  # the rules are always kept whole
    # 0.6 of 5 errors: 3; one is free, so the two cheapest bullets of the other four
    cost = {e: COUNTER.count_text(f"- `{e}`\n") for e in ERRORS}
    assert [f.cost for f in errors] == [cost[e] for e in ERRORS]
    shortest = sorted(ERRORS[:4], key=lambda e: cost[e])[:2]
    assert set(shortest) == {ERRORS[0], ERRORS[2]}  # (the two short lines)
    shares = {"error": 0.6, "constraint": 0.6}
    bound = oracle.cheapest([seen], 1, shares)
    assert bound.need == cost[ERRORS[0]] + cost[ERRORS[2]]
    # an actual summary: within the target, holding the two lines; the scorer agrees
    found = oracle.within_each([seen], 1, shares, COUNTER)
    assert found.met and found.over == 0 and found.shares["error"] == 0.6
    assert f"`{ERRORS[0]}`" in found.summaries[0] and f"`{ERRORS[2]}`" in found.summaries[0]
    assert ERRORS[1] not in found.summaries[0]
    assert found.tokens >= bound.need  # (headings and the note come on top)
    # a target with less room than that need: no summary reaches it
    ratio = next(r for r in range(1, 10_000) if seen.room(r) < bound.need)
    assert not oracle.cheapest([seen], ratio, shares).fits
    tight = oracle.within_each([seen], ratio, shares, COUNTER)
    assert not tight.met and tight.over == 0  # (what it writes stays within the target)


def test_a_probe_costs_the_least_per_probe_of_the_lines_holding_its_words() -> None:
    name = "retry_budget_for_the_upstream_gateway_client"
    probes = [RecallProbe(fact=e, kind="error") for e in ERRORS[:3]]
    test = Case(
        id="t",
        transcript=transcript(),
        format="chat",
        probes=(*probes, RecallProbe(fact=name, kind="identifier")),
    )
    seen = oracle.oracle_case(test, COUNTER, "digest")
    key_error, identifier = seen.facts[1], seen.facts[3]
    # the KeyError's line holds the identifier too: 2 probes share its tokens
    both = COUNTER.count_text(f"- `{ERRORS[1]}`\n") / 2
    alone = COUNTER.count_text(f"- `{name}`\n")
    assert key_error.share == both and identifier.share == min(both, alone)
    assert seen.facts[0].share == seen.facts[0].cost == COUNTER.count_text(f"- `{ERRORS[0]}`\n")
    assert both < alone
    # every probe: the three error lines, the identifier riding on the KeyError's
    bound = oracle.cheapest([seen], 1, {"error": 1.0, "identifier": 1.0})
    lines = sum(COUNTER.count_text(f"- `{e}`\n") for e in ERRORS[:3])
    assert bound.need == math.ceil(lines) and bound.classes["identifier"].tokens == both


def test_every_entry_alike_takes_each_class_cheapest_share_over_the_cases() -> None:
    from compactkit.compressors import SummaryDocument

    def entries(name: str, before: int, base: int, **costs: tuple[int, ...]) -> Any:
        return oracle.OracleCase(
            name, (), "entries", (), (), SummaryDocument(), before, (), base, entry_costs=costs
        )

    a = entries("a", 1_000, 100, errors=(5, 9, 3), values=(4, 4))
    b = entries("b", 1_000, 200, errors=(2,), decisions=(7,))
    bound = oracle.every_entry([a, b], 2, 0.6)
    # errors: 4 entries, 0.6 of them is 3: 2 + 3 + 5; values: 2 of 2: 8; decisions: 1 of 1: 7
    assert bound.pools == {"errors": (4, 10), "decisions": (1, 7), "values": (2, 8)}
    assert bound.need == 25 and bound.room == (500 - 100) + (500 - 200) and bound.fits
    assert not oracle.every_entry([a, b], 40, 0.6).fits  # rooms 25 - 100 and 25 - 200


def test_every_entry_alike_reads_the_digests_entries_at_their_barest() -> None:
    """On a real session: one cost per entry of a scored class (commands are not scored), the
    bound summing the cheapest share of each."""
    from compactkit.evals.synth import SynthSpec, generate

    case = generate(SynthSpec(domain="coding", style="bash", size_tokens=12_000, seed=0))
    seen = oracle.oracle_case(case, COUNTER, "entries")
    assert "commands" not in seen.entry_costs and seen.entry_costs["errors"]
    bound = oracle.every_entry([seen], 40, 0.6)
    for pool, (n, tokens) in bound.pools.items():
        costs = sorted(seen.entry_costs[pool])
        assert n == len(costs) and tokens == sum(costs[: math.ceil(0.6 * n - 1e-9)])
    assert bound.need == sum(t for _n, t in bound.pools.values())
