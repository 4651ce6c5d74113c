"""The plot of a synthetic session: opening, work episodes until the size is reached, ending.

Every fact class is planted at least once (when the size allows) before episodes are drawn at
random, so even a small case probes each class; bigger cases hold proportionally more facts.
"""

from __future__ import annotations

import math
import random
from collections import deque

from compactkit.evals.schema import (
    ConstraintProbe,
    ContinuationProbe,
    DecisionProbe,
    RecallProbe,
    UpdateProbe,
)
from compactkit.evals.synth import _text as text
from compactkit.evals.synth._builder import Builder
from compactkit.evals.synth._domain import Domain, Update, insert_after
from compactkit.evals.synth._styles import (
    Action,
    Create,
    Delete,
    Edit,
    Read,
    StyleName,
    style_tools,
)

__all__ = ["Plot"]

_FIRST = ("work", "update", "decision", "identifier", "create", "bulky", "dead_end", "work")
_LATER = ("late_constraint", "recall", "update", "work", "identifier", "delete")
_WEIGHTS = {
    "work": 5,
    "identifier": 2,
    "create": 2,
    "read": 2,
    "bulky": 1,
    "recall": 1,
    "decision": 1,
    "update": 1,
}
_MAX_UPDATES = 2  # values that change per session (each domain has two kinds)
_ENDING_RESERVE = 350


class Plot:
    """Writes one session of ``size`` tokens (approximately) into a ``Builder``."""

    def __init__(self, domain: Domain, style: StyleName, size: int, rng: random.Random) -> None:
        self.domain = domain
        self.size = size
        self.rng = rng
        self.scale = min(3.2, max(0.4, math.sqrt(size / 30_000)))
        self.b = Builder(style, rng, style_tools(style, domain.tools))
        self.files: dict[str, str] = {}
        self.read: set[str] = set()
        self.reference: set[str] = set()
        self.created: list[str] = []
        self.decisions = deque(rng.sample(domain.decisions, len(domain.decisions)))
        self.dead_ends = deque(rng.sample(domain.dead_ends, len(domain.dead_ends)))
        self.late = deque(rng.sample(domain.late_constraints, len(domain.late_constraints)))
        self.updates = 0
        self.open_updates: list[Update] = []
        self.bulky_done = False

    def write(self) -> Builder:
        """Write the whole session and return the builder holding it."""
        b, d, rng = self.b, self.domain, self.rng
        goal, constraints = d.opening(rng)  # first: it names the project the system prompt uses
        b.system(d.system())
        listing = "\n".join(f"- {c}" for c in constraints)
        b.user(f"{goal}\n\nRequirements:\n{listing}")
        for c in constraints:
            b.probe(ConstraintProbe(text=c))
        self.files = d.workspace(rng, self.scale)
        self._explore()
        plan = deque(_FIRST + _LATER)
        while b.tokens < self.size - _ENDING_RESERVE:
            kind = plan.popleft() if plan else self._draw()
            getattr(self, f"_{kind}")()
        for update in self.open_updates:  # every value set must also change
            self._change(update)
        self._end()
        for probe in b.artifact_probes():
            b.probe(probe)
        return b

    def _draw(self) -> str:
        kinds = list(_WEIGHTS)
        return self.rng.choices(kinds, weights=[_WEIGHTS[k] for k in kinds])[0]

    def _room(self) -> int:
        return max(0, self.size - _ENDING_RESERVE - self.b.tokens)

    def _explore(self) -> None:
        paths = self.rng.sample(sorted(self.files), min(3, len(self.files)))
        self.b.act(
            [Read(p, self.files[p]) for p in paths],
            say="Let me look at the relevant files first.",
        )
        self.read.update(paths)
        self.reference.update(paths)

    def _read(self) -> None:
        unread = sorted(set(self.files) - self.read)
        if not unread:
            return self._work()
        path = self.rng.choice(unread)
        self.b.act([Read(path, self.files[path])], say=f"Reading {path}.")
        self.read.add(path)
        self.reference.add(path)
        return None

    def _edit(self, path: str) -> None:
        added = (
            f"{self.rng.choice(text.WORDS)}_{self.rng.choice(text.WORDS)} = {self.rng.randint(1, 99)}"
            if path.endswith(".py")
            else text.prose(self.rng, 1)
        )
        old, new = insert_after(self.rng, self.files[path], added)
        self.b.act([Edit(path, old, new)], say=f"Updating {path}.")
        self.files[path] = self.files[path].replace(old, new, 1)

    def _work(self) -> None:
        b, d, rng = self.b, self.domain, self.rng
        editable = sorted(p for p in self.files if not p.startswith("data/raw/"))
        # Files read for reference mostly stay read-only, as in real sessions.
        preferred = [p for p in editable if p not in self.reference] or editable
        path = rng.choice(preferred if rng.random() < 0.9 else editable)
        if path not in self.read:
            b.act([Read(path, self.files[path])], say=f"Reading {path} before changing it.")
            self.read.add(path)
        self._edit(path)
        failing, error = d.failing_run(rng, path)
        b.act([failing], say="Checking the change.")
        b.probe(RecallProbe(fact=error, kind="error"))
        self._edit(path)
        actions: list[Action] = [d.passing_run(rng, self.scale)]
        other = sorted(set(self.files) - {path})
        if rng.random() < 0.4 and other:  # a read alongside the run: parallel calls
            extra = rng.choice(other)
            actions.append(Read(extra, self.files[extra]))
            self.read.add(extra)
        b.act(actions, say="That should fix it; running the checks again.")

    def _create(self) -> None:
        path, content = self.domain.new_file(self.rng, self.scale)
        self.b.act([Create(path, content)], say=f"Creating {path}.")
        self.files[path] = content
        self.created.append(path)

    def _delete(self) -> None:
        if not self.created:
            return self._create()
        path = self.created.pop()
        self.b.act([Delete(path)], say=f"{path} is no longer needed; removing it.")
        del self.files[path]
        return None

    def _bulky(self) -> None:
        share = (
            self.rng.uniform(0.06, 0.16) if not self.bulky_done else self.rng.uniform(0.02, 0.06)
        )
        tokens = min(self._room(), int(self.size * share))
        lines = max(5, tokens // 28)
        twin = random.Random()
        twin.setstate(self.rng.getstate())  # the same draws: the same kind of output, to scale by
        probe = self.domain.bulky_run(twin, lines)
        lines = max(5, int(lines * tokens / max(1, self.b.count(probe.output))))
        self.b.act([self.domain.bulky_run(self.rng, lines)], say="Let me look at the raw output.")
        self.bulky_done = True

    def _identifier(self) -> None:
        run, ident, say = self.domain.identifier_run(self.rng)
        self.b.act([run], say=say)
        self.b.probe(RecallProbe(fact=ident, kind="identifier"))

    def _recall(self) -> None:
        run, fact = self.domain.recall_run(self.rng)
        self.b.act([run], say="Measuring.")
        self.b.probe(RecallProbe(fact=fact, kind="number"))

    def _decide(self, pool: deque[tuple[str, tuple[str, ...]]], dead_end: bool) -> None:
        if not pool:
            return self._work()
        sentence, phrases = pool.popleft()
        self.b.assistant(sentence)
        self.b.probe(DecisionProbe(decision=sentence, must_include=phrases, dead_end=dead_end))
        return None

    def _decision(self) -> None:
        self._decide(self.decisions, False)

    def _dead_end(self) -> None:
        self._decide(self.dead_ends, True)

    def _late_constraint(self) -> None:
        if not self.late:
            return self._work()
        constraint = self.late.popleft()
        self.b.user(constraint)
        self.b.assistant("Understood, I will follow that from now on.")
        self.b.probe(ConstraintProbe(text=constraint))
        return None

    def _update(self) -> None:
        if self.open_updates:  # the value set earlier changes now
            return self._change(self.open_updates.pop(0))
        if self.updates >= _MAX_UPDATES:
            return self._work()
        update = self.domain.update(self.rng, self.updates)
        self.updates += 1
        self.b.user(update.first)
        if update.config is not None:
            path, old_line, _ = update.config
            if path in self.files:
                first = self.files[path].splitlines()[0]
                self.b.act(
                    [Edit(path, first, f"{first}\n{old_line}")], say=f"Setting it in {path}."
                )
                self.files[path] = self.files[path].replace(first, f"{first}\n{old_line}", 1)
            else:
                content = f'"""Settings for this session."""\n\n{old_line}\n'
                self.b.act([Create(path, content)], say=f"Putting it in {path}.")
                self.files[path] = content
        else:
            self.b.assistant("Noted.")
        self.open_updates.append(update)
        return None

    def _change(self, update: Update) -> None:
        self.b.user(update.change)
        if update.config is not None:
            path, old_line, new_line = update.config
            self.b.act([Edit(path, old_line, new_line)], say=f"Changing it in {path}.")
            self.files[path] = self.files[path].replace(old_line, new_line, 1)
        else:
            self.b.assistant(f"Got it — {update.name} is now {update.new}.")
        self.b.probe(
            UpdateProbe(
                name=update.name,
                aliases=update.aliases,
                current=update.new,
                superseded=(update.old,),
            )
        )

    def _end(self) -> None:
        b, end = self.b, self.domain.ending(self.rng, self.files)
        b.assistant(f"{end.state} {end.next_step}")
        b.probe(ContinuationProbe(aspect="state", text=end.state, must_include=end.state_phrases))
        b.probe(
            ContinuationProbe(aspect="next_step", text=end.next_step, must_include=end.next_phrases)
        )
        b.user(end.final_user)
        if end.pending is not None and b.style != "react":
            b.pending(end.pending, say="Running it now.")
