"""The governor's projection -> memory map (runtime/_owners.py) against its plain version."""

from __future__ import annotations

import gc
import weakref

from hypothesis import given, settings
from hypothesis import strategies as st

from compactkit.runtime._owners import PlainOwners, ProjectionOwners


class _Prompt:
    """Stands for a Projection: any object compared by identity."""


# A step: ("remember", owner) makes a new prompt for owner; ("again", i, owner) re-records an
# earlier prompt; ("ask", i) looks one up.
_steps = st.lists(
    st.one_of(
        st.tuples(st.just("remember"), st.integers(0, 5)),
        st.tuples(st.just("again"), st.integers(0, 300), st.integers(0, 5)),
        st.tuples(st.just("ask"), st.integers(0, 300)),
    ),
    max_size=120,
)


@settings(deadline=None, max_examples=150)
@given(steps=_steps, capacity=st.integers(1, 8))
def test_the_weak_map_answers_as_the_plain_list(
    steps: list[tuple[object, ...]], capacity: int
) -> None:
    fast: ProjectionOwners[int] = ProjectionOwners(capacity)
    plain: PlainOwners[int] = PlainOwners(capacity)
    prompts: list[_Prompt] = [_Prompt()]  # kept alive, so ids are never reused here
    for step in steps:
        if step[0] == "remember":
            prompts.append(_Prompt())
            for owners in (fast, plain):
                owners.remember(prompts[-1], step[1])  # type: ignore[arg-type]
        elif step[0] == "again":
            prompt = prompts[step[1] % len(prompts)]  # type: ignore[operator]
            for owners in (fast, plain):
                owners.remember(prompt, step[2])  # type: ignore[arg-type]
        else:
            prompt = prompts[step[1] % len(prompts)]  # type: ignore[operator]
            assert fast.owner_of(prompt) == plain.owner_of(prompt)
    for prompt in prompts:
        assert fast.owner_of(prompt) == plain.owner_of(prompt)


def test_a_remembered_prompt_is_not_kept_alive() -> None:
    owners: ProjectionOwners[str] = ProjectionOwners()
    prompt = _Prompt()
    owners.remember(prompt, "session")
    gone = weakref.ref(prompt)
    del prompt
    gc.collect()
    assert gone() is None
    assert owners.owner_of(_Prompt()) is None  # a new object at a reused id is not the owner's
