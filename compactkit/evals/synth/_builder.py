"""The trajectory builder: appends items in a style, counts tokens, records the ground truth."""

from __future__ import annotations

import random
from collections.abc import Sequence

from compactkit.budget import TiktokenCounter
from compactkit.evals.schema import ArtifactProbe, Probe, ToolStateProbe
from compactkit.evals.synth import _text as text
from compactkit.evals.synth._styles import (
    Action,
    Create,
    Delete,
    Edit,
    Read,
    StyleName,
    arguments_json,
    render,
)
from compactkit.items import FunctionCall, FunctionCallOutput, Item, Message, Tool

__all__ = ["Builder"]

_STRENGTH = {"read": 0, "modified": 1, "created": 2, "deleted": 3}


class Builder:
    """Appends a conversation in one agent style and keeps its labelled facts.

    Args:
        style: The agent style the actions are written in.
        rng: The seeded random source (the only one).
        tools: The tool schemas offered (they count toward the size).
    """

    def __init__(self, style: StyleName, rng: random.Random, tools: Sequence[Tool]) -> None:
        self.style = style
        self.rng = rng
        self.tools = list(tools)
        self.items: list[Item] = []
        self.probes: list[Probe] = []
        self._counter = TiktokenCounter("o200k_base")
        self.tokens = self._counter.count_overhead(self.tools)
        self.touched: dict[str, tuple[str, str]] = {}  # path -> (action, how)

    def _add(self, item: Item) -> None:
        self.items.append(item)
        self.tokens += self._counter.count_item(item)

    def count(self, value: str) -> int:
        """Tokens of ``value`` (to size bulky outputs)."""
        return self._counter.count_text(value)

    def system(self, content: str) -> None:
        """A system message."""
        self._add(Message(role="system", content=content))

    def user(self, content: str) -> None:
        """A user message."""
        self._add(Message(role="user", content=content))

    def assistant(self, content: str) -> None:
        """An assistant message with no calls."""
        self._add(Message(role="assistant", content=content))

    def probe(self, probe: Probe) -> None:
        """Record a labelled fact."""
        self.probes.append(probe)

    def act(self, actions: Sequence[Action], say: str | None = None) -> None:
        """One assistant turn doing ``actions`` (in parallel where the style can), with outputs.

        ``say`` is the assistant's preamble (the ``Thought:`` in ReAct).
        """
        rendered = [render(self.style, a, self.rng) for a in actions]
        for action in actions:
            self._touch(action)
        if self.style == "react":
            for i, (_, args, output) in enumerate(rendered):
                thought = say if i == 0 and say else "Continuing with the next step."
                self.assistant(f"Thought: {thought}\nAction: bash\nAction Input: {args['command']}")
                self.user(f"Observation: {output or '(no output)'}")
            return
        if say:
            self._add(Message(role="assistant", content=say))
        ids = [self._call_id() for _ in rendered]
        for call_id, (name, args, _) in zip(ids, rendered, strict=True):
            self._add(FunctionCall(call_id=call_id, name=name, arguments=arguments_json(args)))
        for call_id, (name, _, output) in zip(ids, rendered, strict=True):
            self._add(FunctionCallOutput(call_id=call_id, output=output, name=name))

    def pending(self, action: Action, say: str) -> None:
        """End on a call that has no output yet (a ``tool_state`` probe; not in ReAct)."""
        name, args, _ = render(self.style, action, self.rng)
        call_id = self._call_id()
        self._add(Message(role="assistant", content=say))
        self._add(FunctionCall(call_id=call_id, name=name, arguments=arguments_json(args)))
        self.probe(ToolStateProbe(call_id=call_id, name=name))

    def artifact_probes(self) -> list[ArtifactProbe]:
        """One probe per file touched, with the strongest thing done to it."""
        return [
            ArtifactProbe(path=path, action=action, how=how)
            for path, (action, how) in self.touched.items()
        ]

    def _call_id(self) -> str:
        return f"call_{text.token(self.rng, 24)}"

    def _touch(self, action: Action) -> None:
        if isinstance(action, Read):
            entry = ("read", "read")
        elif isinstance(action, Create):
            entry = ("created", "created")
        elif isinstance(action, Edit):
            entry = ("modified", "edited")
        elif isinstance(action, Delete):
            entry = ("deleted", "deleted")
        else:
            return
        path = action.path
        old = self.touched.get(path)
        if old is None or _STRENGTH[entry[0]] > _STRENGTH[old[0]]:
            how = entry[1] if old is None else f"{old[1]}, then {entry[1]}"
            self.touched[path] = (entry[0], how)
        elif entry[0] != "read":
            self.touched[path] = (old[0], f"{old[1]}, then {entry[1]}")
