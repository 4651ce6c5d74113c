"""``Layout.of`` finds the groups holding pinned items by bisecting their positions: the same
protection as looking at every group's items."""

from __future__ import annotations

from compressors.test_compressors import PROPERTY, histories
from hypothesis import given

from compactkit.compressors._plan import Layout
from compactkit.items import Message
from compactkit.items.snapshot import MemorySnapshot


def _protected_plainly(layout: Layout) -> list[str | None]:
    """What ``Layout.of`` protects, each group's items looked at (the plain version)."""
    items, groups = layout.items, layout.groups
    latest_user = next(
        (
            i
            for i in range(len(items) - 1, layout.lead - 1, -1)
            if isinstance(items[i], Message) and items[i].role == "user"  # type: ignore[union-attr]
        ),
        None,
    )
    out: list[str | None] = []
    for group in groups:
        if latest_user is not None and group.start <= latest_user < group.stop:
            out.append("latest user input")
        elif group.pending and group is groups[-1]:
            out.append("pending calls")
        elif any(item.pinned for item in group.slice(items)):
            out.append("pinned items")
        elif group is groups[-1] and group.kind != "orphan":
            out.append("newest group")
        else:
            out.append(None)
    return out


@PROPERTY
@given(histories())
def test_pinned_groups_by_bisection_are_the_groups_holding_a_pin(
    snapshot: MemorySnapshot,
) -> None:
    layout = Layout.of(snapshot.items)
    assert list(layout.protected) == _protected_plainly(layout)
