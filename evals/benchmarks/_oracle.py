"""The cheapest summary that could reach a share of every class: can *any* summary meet a target?

(For ``bench_digest_truth.py``'s ``oracle`` lines; tested in ``tests/evals/test_oracle.py``.)

A compressor is scored by the share of each class's probes the compacted request still holds,
pooled over the cases. Whether a share is reachable at a ratio is a question about tokens, not
about one compressor: the oracle knows which facts the probes check, writes only those, each as
one bare line, and takes the cheapest ones of each class.

Per case (``oracle_case``):

* what must be sent whatever the summary says: the instructions and the groups no compressor
  may fold (the newest group, the latest user input, pinned items, pending calls), the tool
  schemas and the summary message's wrapper — counted as the real request
  (``TokenCounter.count``);
* in the ``"digest"`` form, also what compactkit always keeps: the title, the goal and the
  user's rules whole (a rule the goal quotes said once), and the trimming note (what went, per
  section); each fact is a bullet as the digest renders a bare entry (`` `error line` ``,
  `` `path` ``, a decision's phrases), under its section's heading. The ``"entries"`` form
  keeps the same, but writes only the digest's own entries (``digest_items`` of what the
  compaction would fold), each in its barest form (``_forms.bare``): what the digest could
  reach, chosen knowing the probes. In the ``"bare"`` form nothing else is kept — no goal,
  title or note, the rules a class like the others — and a fact costs its words alone, one per
  line: a bound for any summary at all;
* a probe the request holds with no fact written (in the kept items, the goal, the rules) is
  free; an update probe whose old value that request presents as current must be written (the
  bench's stale count is 0); a pending call no text can satisfy.

``cheapest`` pools as the bench does: per class, the free probes, then the cheapest probes of
that class in any case until the share is reached, and the room of all cases summed. A probe
costs its *share*: of the lines that hold its words (its own; another probe's, an error line
holding a path; in the ``"entries"`` form any entry of the digest), the least tokens per probe
the line holds. Whatever lines a summary writes, each line's tokens are at least the shares of
the probes it holds, so ``need`` is a lower bound on what the facts take: when it is over
``room``, no summary of that form reaches the targets. ``within_each`` looks for actual
summaries: lines taken cheapest per still-needed probe first, while the case's whole request,
counted exactly, stays within its own target; the summaries are then scored with the bench's
scorer. Finding them shows the targets are reachable; not finding them (a greedy choice)
proves nothing.
"""

from __future__ import annotations

import heapq
import json
import math
from collections.abc import Mapping, Sequence
from dataclasses import dataclass, field
from typing import Literal

from compactkit.budget.tokens import TokenCounter
from compactkit.compressors import SummaryDocument, digest_items
from compactkit.compressors._forms import bare, barer
from compactkit.compressors._plan import Layout
from compactkit.compressors._refs import strip_refs
from compactkit.compressors._trim import pool_of
from compactkit.compressors._verify import rules_said_once
from compactkit.compressors.sections import SectionKey
from compactkit.evals import scoring
from compactkit.evals.schema import (
    ArtifactProbe,
    Case,
    ConstraintProbe,
    ContinuationProbe,
    DecisionProbe,
    Probe,
    RecallProbe,
    UpdateProbe,
    probe_class,
)
from compactkit.formats.transcript import parse_transcript
from compactkit.items import Item, MemorySnapshot, Tool

Form = Literal["digest", "entries", "bare"]
FORMS: tuple[Form, ...] = ("digest", "entries", "bare")
"""How the oracle writes: ``"digest"`` each probed fact as the digest renders a bare bullet, with
what compactkit always keeps; ``"entries"`` likewise, but only the digest's own entries, each
in its barest form (``_forms.bare``: a decision clipped to 80 characters, not the probe's
phrases); ``"bare"`` the facts' words alone."""

_SECTION: dict[str, SectionKey] = {
    "constraint": "constraints",
    "artifact_modified": "files_modified",
    "artifact_read": "files_read",
    "error": "errors",
    "identifier": "identifiers",
    "recall": "measurements",
}


@dataclass(frozen=True)
class OracleFact:
    """One probe as the oracle would write it."""

    case: str
    cls: str
    """Its retention class."""
    section: SectionKey | None
    """The section its line goes under (``None``: no line can satisfy it)."""
    line: str
    """What the summary writes for it: a bullet's entry, or the bare words."""
    cost: int | None
    """The tokens its line adds (``None``: no line can satisfy it)."""
    free: bool = False
    """The request holds it with no fact written."""
    share: float = 0.0
    """What it costs in the bound: of the lines that hold its words (its own, or another
    probe's), the least tokens per probe the line holds."""
    must: bool = False
    """It must be written: with no fact written its old value reads as current."""


@dataclass(frozen=True)
class OracleLine:
    """A line a summary may write, and the open probes (indices into the case's facts) whose
    words it holds."""

    section: SectionKey
    line: str
    cost: int
    holds: tuple[int, ...]


@dataclass(frozen=True)
class OracleCase:
    """One case as the oracle sees it: what must be sent, and every probe's line."""

    case: str
    probes: tuple[Probe, ...]
    form: Form
    items: tuple[Item, ...]
    """The items that must be sent."""
    tools: tuple[Tool, ...]
    base_doc: SummaryDocument
    """What the summary always holds in this form (``"digest"``: title, goal, rules)."""
    before: int
    """Tokens of the whole uncompacted request (a target is ``before // ratio``)."""
    facts: tuple[OracleFact, ...]
    base: int = 0
    """Tokens of the request with no fact written (``"digest"``: with the note)."""
    found: Mapping[str, int] = field(default_factory=dict)
    """Entries the digest finds per section (what its note counts as not listed)."""
    lines: tuple[OracleLine, ...] = ()
    """Every line that holds an open probe's words."""
    entry_costs: Mapping[str, tuple[int, ...]] = field(default_factory=dict)
    """``"entries"`` form: per scored class (``SCORED_POOLS``), what each of the digest's
    entries costs at its barest (``bare``, then ``barer``), as a bullet."""

    def room(self, ratio: int) -> int:
        """What the facts may take at ``ratio``."""
        return self.before // ratio - self.base

    def summary(self, written: Sequence[OracleFact | OracleLine]) -> str:
        """The summary that writes ``written`` (this case's lines)."""
        if self.form == "bare":
            return "\n".join(dict.fromkeys(f.line for f in written if f.section))
        sections: dict[str, list[str]] = {k: list(v) for k, v in self.base_doc.sections.items()}
        for fact in written:
            if fact.section is not None and fact.line not in sections.get(fact.section, ()):
                sections.setdefault(fact.section, []).append(fact.line)
        listed = {k: len(v) for k, v in sections.items()}
        omitted = {k: n - listed.get(k, 0) for k, n in self.found.items()}
        omitted = {k: n for k, n in omitted.items() if n > 0 and k not in ("goal", "constraints")}
        doc = SummaryDocument(
            sections={k: tuple(v) for k, v in sections.items() if v},  # type: ignore[misc]
            trimmed=sum(omitted.values()),
            omitted=omitted,
        )
        return doc.render()

    def request(self, written: Sequence[OracleFact | OracleLine]) -> list[Item]:
        """The request that sends what must be sent and the summary of ``written``."""
        summary = self.summary(written)
        snapshot = MemorySnapshot.of(list(self.items), summary=summary)
        return snapshot.render_items()

    def tokens(self, written: Sequence[OracleFact | OracleLine], counter: TokenCounter) -> int:
        """The exact tokens of ``request(written)``."""
        return counter.count(self.request(written), tools=self.tools).tokens


def oracle_case(case: Case, counter: TokenCounter, form: Form = "digest") -> OracleCase:
    """What must be sent for ``case`` and every probe's line (see the module docstring)."""
    transcript = parse_transcript(json.dumps(case.transcript), format=case.format, source=case.id)
    tools = tuple(transcript.tools)
    snapshot = MemorySnapshot.from_items(transcript.items)
    before = counter.count(snapshot.render_items(), tools=tools).tokens
    fixed = tuple(Layout.of(snapshot.items).fixed_items)
    kept = {id(i) for i in fixed}
    found = rules_said_once(digest_items([i for i in snapshot.items if id(i) not in kept]))
    base_doc = SummaryDocument()
    if form != "bare":
        rules = [e for e in found.entries("constraints") if not e.startswith("Later: ")]
        base_doc = SummaryDocument.of(goal=list(found.entries("goal")), constraints=rules)
    counts = {k: len(v) for k, v in found.sections.items()}
    oracle = OracleCase(case.id, tuple(case.probes), form, fixed, tools, base_doc, before, ())
    empty = oracle.request([])
    if form != "bare":  # (the request with the goal and rules, before the note is added)
        empty = MemorySnapshot.of(list(fixed), summary=base_doc.render()).render_items()
    scores = scoring.score_probes(case.probes, empty)
    bare_entries = _bare_entries(found, counter) if form == "entries" else []
    if form == "entries":
        lines = [_entry_line(p, bare_entries) for p in case.probes]
    else:
        lines = [_line(p, form) for p in case.probes]
    costs = [
        None if section is None else counter.count_text(_bullet(line, form))
        for section, line in lines
    ]
    open_ = [i for i, score in enumerate(scores) if not score.kept and costs[i] is not None]
    candidates = dict.fromkeys(line for i in open_ for _, line in [lines[i]])
    if form == "entries":  # any entry may be written, not only each probe's cheapest
        candidates.update(dict.fromkeys(line for _, line, _ in bare_entries))
    sections = {line: section for section, line in lines if section is not None}
    sections.update({line: key for key, line, _ in bare_entries})
    held = _held(case.probes, open_, candidates)
    found_lines = tuple(
        OracleLine(sections[text], text, counter.count_text(_bullet(text, form)), tuple(holds))
        for text, holds in held.items()
        if holds
    )
    shares: dict[int, float] = {}
    for one in found_lines:
        for i in one.holds:
            shares[i] = min(shares.get(i, one.cost / len(one.holds)), one.cost / len(one.holds))
    facts = [
        OracleFact(
            case.id,
            probe_class(probe),
            lines[i][0],
            lines[i][1],
            costs[i],
            free=score.kept,
            share=shares.get(i, float(costs[i] or 0)),
            must=score.stale,
        )
        for i, (probe, score) in enumerate(zip(case.probes, scores, strict=True))
    ]
    oracle = OracleCase(
        case.id, tuple(case.probes), form, fixed, tools, base_doc, before, tuple(facts), 0, counts
    )
    base = oracle.tokens([], counter)
    return OracleCase(
        case.id,
        tuple(case.probes),
        form,
        fixed,
        tools,
        base_doc,
        before,
        tuple(facts),
        base,
        counts,
        found_lines,
        _entry_costs(found, counter) if form == "entries" else {},
    )


SCORED_POOLS = (
    "errors",
    "files_modified",
    "files_read",
    "identifiers",
    "measurements",
    "decisions",
    "state",
    "next_steps",
    "values",
)
"""The trimming pools (``_trim.pool_of``) whose facts the bench scores; not the commands,
the superseded values or the later requests, which it does not ask for."""


def _entry_costs(found: SummaryDocument, counter: TokenCounter) -> dict[str, tuple[int, ...]]:
    """Per scored class, what each of the digest's entries costs as a bullet at its barest."""
    steps = [bare("next_steps", strip_refs(e)) for e in found.entries("next_steps")]
    states = found.entries("state")
    costs: dict[str, list[int]] = {}
    for key, entries in found.sections.items():
        for entry in entries:
            pool = pool_of(key, entry)
            if pool in SCORED_POOLS:
                line = barer(pool, bare(pool, strip_refs(entry)), next_steps=steps, state=states)
                costs.setdefault(pool, []).append(counter.count_text(_bullet(line, "entries")))
    return {pool: tuple(v) for pool, v in costs.items()}


@dataclass(frozen=True)
class EntryBound:
    """What keeping a share of every class's entries takes (``every_entry``)."""

    need: int
    room: int
    pools: dict[str, tuple[int, int]]
    """Per class: its entries over all cases, and the tokens of its cheapest share."""

    @property
    def fits(self) -> bool:
        return self.need <= self.room


def every_entry(cases: Sequence[OracleCase], ratio: int, share: float) -> EntryBound:
    """The fewest tokens that keep ``share`` of every scored class's entries, pooled over the
    cases: per class, its cheapest entries at their barest (``"entries"``-form cases). A
    summary that cannot know which entries will be asked for, when every entry of a class is
    as likely to be, keeps ``share`` of a class's facts only by keeping ``share`` of its
    entries; over ``room``, no such summary of the digest's entries does it for every class."""
    pools: dict[str, tuple[int, int]] = {}
    for pool in SCORED_POOLS:
        costs = sorted(c for o in cases for c in o.entry_costs.get(pool, ()))
        if costs:
            pools[pool] = (len(costs), sum(costs[: _needed(share, len(costs))]))
    need = sum(tokens for _n, tokens in pools.values())
    return EntryBound(need, sum(c.room(ratio) for c in cases), pools)


@dataclass(frozen=True)
class ClassNeed:
    """One class's part of the bound."""

    probes: int
    needed: int
    """Probes the share asks for (rounded up)."""
    free: int
    """Probes the request holds with no fact written."""
    written: int
    """Probes the cheapest choice writes (or must write)."""
    tokens: int
    """What they cost in the bound (their shares, rounded up)."""


@dataclass(frozen=True)
class OracleBound:
    """The cheapest lines reaching every class's share, over all cases (``cheapest``)."""

    need: int
    """What those lines take, in tokens: no summary of the form holds the facts in fewer."""
    room: int
    """What every case's facts may take, summed."""
    classes: dict[str, ClassNeed]
    chosen: tuple[OracleFact, ...]
    satisfiable: bool
    """Whether every class has enough probes a line (or nothing) can satisfy."""

    @property
    def fits(self) -> bool:
        """Whether the cheapest lines fit the room."""
        return self.satisfiable and self.need <= self.room


def cheapest(cases: Sequence[OracleCase], ratio: int, shares: Mapping[str, float]) -> OracleBound:
    """The fewest tokens any choice of lines needs to hold ``shares[cls]`` of every class's
    probes (pooled): the lines that must be written, then per class its cheapest probes, each
    at its ``share`` — the least tokens per held probe of a line that holds its words. Any
    choice of lines pays each line's tokens once, and those are at least the shares of the
    probes the line holds, so no choice pays less than this."""
    lacking, musts, totals, free = _lacking(cases, shares)
    chosen: list[OracleFact] = list(musts)
    classes = {}
    need = 0.0
    for cls, total in totals.items():
        mine = [f for f in musts if f.cls == cls]
        if cls not in shares and not mine:
            continue
        pool = sorted(
            (
                f
                for o in cases
                for f in o.facts
                if f.cls == cls and not (f.free or f.must) and f.cost is not None
            ),
            key=lambda f: (f.share, f.case, f.line),
        )
        take = pool[: max(0, lacking.get(cls, 0))]
        chosen += take
        cost = sum(f.cost or 0 for f in mine) + sum(f.share for f in take)
        need += cost
        needed = _needed(shares.get(cls, 0.0), total)
        classes[cls] = ClassNeed(total, needed, free[cls], len(mine) + len(take), math.ceil(cost))
    satisfiable = all(n <= 0 for n in _after(lacking, chosen, musts).values())
    room = sum(c.room(ratio) for c in cases)
    return OracleBound(math.ceil(need), room, classes, tuple(chosen), satisfiable)


def _after(
    lacking: Mapping[str, int], chosen: Sequence[OracleFact], musts: Sequence[OracleFact]
) -> dict[str, int]:
    """What each class still lacks once ``chosen`` (beyond ``musts``) is written."""
    left = dict(lacking)
    for fact in chosen[len(musts) :]:
        left[fact.cls] = left.get(fact.cls, 0) - 1
    return left


def _lacking(
    cases: Sequence[OracleCase], shares: Mapping[str, float]
) -> tuple[dict[str, int], list[OracleFact], dict[str, int], dict[str, int]]:
    """Per class: the probes still lacking once the free ones and the lines that must be
    written count; those lines; the probes; the free ones."""
    totals: dict[str, int] = {}
    free: dict[str, int] = {}
    musts = []
    for oracle in cases:
        for fact in oracle.facts:
            totals[fact.cls] = totals.get(fact.cls, 0) + 1
            free[fact.cls] = free.get(fact.cls, 0) + int(fact.free and not fact.must)
            if fact.must:
                musts.append(fact)
    lacking = {
        cls: _needed(shares[cls], n) - free[cls] - sum(1 for f in musts if f.cls == cls)
        for cls, n in totals.items()
        if cls in shares
    }
    return lacking, musts, totals, free


@dataclass(frozen=True)
class Witness:
    """Actual summaries, one per case, scored with the bench's scorer (``within_each``)."""

    tokens: int
    """What their facts take: each case's request minus its ``base``, summed."""
    over: int
    """Cases whose request is over their own target."""
    shares: dict[str, float]
    """The pooled share per class."""
    stale: int
    """Update probes whose old value reads as current."""
    met: bool
    """Every share reached, no case over its target, nothing stale."""
    summaries: tuple[str, ...] = ()


def within_each(
    cases: Sequence[OracleCase],
    ratio: int,
    shares: Mapping[str, float],
    counter: TokenCounter,
    first: Sequence[str] = (),
) -> Witness:
    """Summaries that keep every case within its own target: the lines that must be written,
    then, over all cases, the line with the fewest tokens per probe it holds that a class still
    lacks (lines holding a lacking probe of a class in ``first`` before any other), written
    when the case's request, counted whole, still fits its target; scored. (Greedy: finding
    summaries proves the shares reachable, not finding them proves nothing.)"""
    lacking, musts, _totals, _free = _lacking(cases, shares)
    written: dict[str, list[OracleFact | OracleLine]] = {o.case: [] for o in cases}
    for fact in musts:
        written[fact.case].append(fact)
    covered = {(f.case, f.line) for f in musts}
    done: set[tuple[str, int]] = set()  # (case, fact index) held by a written line
    by_case = {o.case: o for o in cases}

    def key(oracle: OracleCase, one: OracleLine) -> tuple[int, float] | None:
        needed = [
            oracle.facts[i].cls
            for i in one.holds
            if (oracle.case, i) not in done and lacking.get(oracle.facts[i].cls, 0) > 0
        ]
        if not needed:
            return None
        return (0 if any(c in first for c in needed) else 1, one.cost / len(needed))

    heap: list[tuple[tuple[int, float], str, str, int]] = []
    for oracle in cases:
        for n, one in enumerate(oracle.lines):
            now = key(oracle, one)
            if now is not None and (oracle.case, one.line) not in covered:
                heapq.heappush(heap, (now, oracle.case, one.line, n))
    while heap:
        was, case, _line, n = heapq.heappop(heap)
        oracle = by_case[case]
        one = oracle.lines[n]
        now = key(oracle, one)
        if now is None:
            continue
        if now > was:  # (it holds fewer probes still needed: later)
            heapq.heappush(heap, (now, case, one.line, n))
            continue
        trial = [*written[case], one]
        if oracle.tokens(trial, counter) > oracle.before // ratio:
            continue
        written[case] = trial
        for i in one.holds:
            if (case, i) not in done:
                done.add((case, i))
                cls = oracle.facts[i].cls
                lacking[cls] = lacking.get(cls, 0) - 1
    return score(cases, ratio, shares, written, counter)


def score(
    cases: Sequence[OracleCase],
    ratio: int,
    shares: Mapping[str, float],
    written: Mapping[str, Sequence[OracleFact | OracleLine]],
    counter: TokenCounter,
) -> Witness:
    """The summaries writing ``written[case]`` for each case, counted and scored."""
    kept: dict[str, list[int]] = {}
    stale = over = tokens = 0
    summaries = []
    for oracle in cases:
        mine = written.get(oracle.case, ())
        request = oracle.request(mine)
        total = counter.count(request, tools=oracle.tools).tokens
        tokens += total - oracle.base
        over += total > oracle.before // ratio
        summaries.append(oracle.summary(mine))
        for result in scoring.score_probes(oracle.probes, request):
            kept.setdefault(result.cls, []).append(int(result.kept))
            stale += result.stale
    got = {cls: sum(v) / len(v) for cls, v in kept.items()}
    reached = all(sum(kept[c]) >= _needed(s, len(kept[c])) for c, s in shares.items() if c in kept)
    return Witness(tokens, over, got, stale, reached and not over and not stale, tuple(summaries))


def _needed(share: float, probes: int) -> int:
    """Probes a share of ``probes`` asks for (a share is met at or above it)."""
    return math.ceil(share * probes - 1e-9)


def _order(fact: OracleFact) -> tuple[int, str, str]:
    return (fact.cost or 0, fact.case, fact.line)


def _bullet(line: str, form: Form) -> str:
    """A line as a document holds it: a bullet and its line break (``"digest"``), or the words
    and theirs. A line break ends the pre-token before it, so a document's lines cost their
    sum."""
    return f"{line}\n" if form == "bare" else f"- {line}\n"


def _line(probe: Probe, form: Form) -> tuple[SectionKey | None, str]:
    """The section and the line the oracle writes for ``probe``."""
    digest = form == "digest"
    if isinstance(probe, ConstraintProbe):
        return "constraints", probe.text
    if isinstance(probe, (DecisionProbe, ContinuationProbe)):
        section: SectionKey = "decisions"
        if isinstance(probe, ContinuationProbe):
            section = "state" if probe.aspect == "state" else "next_steps"
        return section, (" … " if digest else " ").join(probe.must_include)
    if isinstance(probe, UpdateProbe):
        if digest:
            return "values", f"`{probe.name}` = {probe.current} (current)"
        return "values", f"{probe.name} = {probe.current}"
    if isinstance(probe, (RecallProbe, ArtifactProbe)):
        words = probe.fact if isinstance(probe, RecallProbe) else probe.path
        quoted = digest and "`" not in words
        return _SECTION[probe_class(probe)], f"`{words}`" if quoted else words
    return None, ""  # a pending call: no line satisfies it


def _bare_entries(
    found: SummaryDocument, counter: TokenCounter
) -> list[tuple[SectionKey, str, int]]:
    """The digest's entries (but the goal and the rules, always kept) in their barest form,
    with the tokens each bullet costs, cheapest first."""
    out = []
    for key, entries in found.sections.items():
        if key == "goal":
            continue
        for entry in entries:
            if key == "constraints" and not entry.startswith("Later: "):
                continue  # (the rules are always kept)
            line = bare(pool_of(key, entry), strip_refs(entry))
            out.append((key, line, counter.count_text(_bullet(line, "entries"))))
    return sorted(out, key=lambda e: (e[2], e[1]))


def _entry_line(
    probe: Probe, entries: Sequence[tuple[SectionKey, str, int]]
) -> tuple[SectionKey | None, str]:
    """The cheapest bare digest entry that holds every word ``probe`` checks (``None``: the
    digest wrote none)."""
    words = _words(probe)
    if not words:
        return None, ""
    for key, line, _cost in entries:
        flat = scoring.normalize(line)
        if all(scoring.normalize(w) in flat for w in words):
            return key, line
    return None, ""


def _words(probe: Probe) -> list[str]:
    """What the scorer looks for of ``probe`` (an update: its name and current value)."""
    if isinstance(probe, ConstraintProbe):
        return [probe.text]
    if isinstance(probe, RecallProbe):
        return [probe.fact]
    if isinstance(probe, ArtifactProbe):
        return [probe.path]
    if isinstance(probe, (DecisionProbe, ContinuationProbe)):
        return list(probe.must_include)
    if isinstance(probe, UpdateProbe):
        return [probe.name, probe.current]
    return []


def _held(
    probes: Sequence[Probe], open_: Sequence[int], candidates: Mapping[str, None]
) -> dict[str, list[int]]:
    """Per candidate line, the open probes (by index) whose words it holds."""
    words = {i: [scoring.normalize(w) for w in _words(probes[i])] for i in open_}
    held: dict[str, list[int]] = {}
    for line in candidates:
        flat = scoring.normalize(line)
        held[line] = [i for i in open_ if words[i] and all(w in flat for w in words[i])]
    return held
