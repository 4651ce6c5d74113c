"""Session-store lease rules (``compactkit.sessions.lease``), for stores declaring ``leases``:
a held lease makes others wait and names its holder, tokens grow, a save under a lost lease or
outside a running run is refused and changes nothing."""

from __future__ import annotations

from typing import Any

from compactkit.errors import LeaseLostError, SessionBusyError
from compactkit.sessions.lease import LeasingStore
from compactkit.testing.conformance._kit import ConformanceFailure, expect, raises, same
from compactkit.testing.conformance._stores import StoreKit, rule, session
from compactkit.testing.conformance._support import texts


def _leasing(kit: StoreKit) -> Any:
    store = kit.new()
    if not isinstance(store, LeasingStore):
        raise ConformanceFailure(
            f"{type(store).__name__} declares leases but has no acquire(session_id, *, holder, "
            "timeout, ttl) / release(lease)"
        )
    return store


@rule(
    "a-held-lease-makes-others-wait",
    "While one holder has a session's lease, acquire() by another waits its timeout and raises "
    "SessionBusyError naming the session and the holder; other sessions are not held.",
    "leases",
)
def _a_held_lease_makes_others_wait(kit: StoreKit) -> None:
    store = _leasing(kit)
    lease = store.acquire("leased", holder="worker-a")
    try:
        store.release(store.acquire("leased", holder="worker-b", timeout=0.05))
    except SessionBusyError as busy:
        same(
            (getattr(busy, "session_id", None), getattr(busy, "holder", None)),
            ("leased", "worker-a"),
            "the SessionBusyError's session_id and holder",
        )
    else:
        raise ConformanceFailure(
            "acquire('leased', holder='worker-b', timeout=0.05) while worker-a holds it should "
            "raise SessionBusyError, but it returned a lease"
        )
    other = store.acquire("another", holder="worker-b")
    store.release(other)
    store.release(lease)


@rule(
    "every-acquisition-gets-a-larger-token",
    "Each acquire() of a session returns a larger fencing token than any before it, after a "
    "release too.",
    "leases",
)
def _every_acquisition_gets_a_larger_token(kit: StoreKit) -> None:
    store = _leasing(kit)
    tokens = []
    for holder in ("worker-a", "worker-b", "worker-a"):
        lease = store.acquire("tokens", holder=holder)
        tokens.append(lease.token)
        store.release(lease)
    expect(tokens == sorted(set(tokens)), f"tokens of three acquisitions in turn: {tokens}")


@rule(
    "a-save-under-a-lost-lease-is-refused",
    "A save made under a lease that was given up and taken by another raises LeaseLostError "
    "and leaves the saved state as it was.",
    "leases",
)
def _a_save_under_a_lost_lease_is_refused(kit: StoreKit) -> None:
    store = _leasing(kit)
    store.save(session("fenced", "kept"))
    stale = session("fenced", "kept", "late")
    stale.lease = store.acquire("fenced", holder="worker-a")
    store.release(stale.lease)
    other = store.acquire("fenced", holder="worker-b")
    with raises(LeaseLostError, doing="save() under a lease another holder took since"):
        store.save(stale)
    same(texts(store.load("fenced").memory.items), ["kept"], "the saved state after it")
    store.release(other)


@rule(
    "a-save-outside-a-run-is-refused-while-one-holds-it",
    "While a run holds a session's lease, a save without that lease raises SessionBusyError "
    "and changes nothing; once released, the save goes through.",
    "leases",
)
def _a_save_outside_a_run_is_refused(kit: StoreKit) -> None:
    store = _leasing(kit)
    store.save(session("busy", "kept"))
    lease = store.acquire("busy", holder="worker-a")
    with raises(SessionBusyError, doing="save() without the lease while worker-a holds it"):
        store.save(session("busy", "outsider"))
    same(texts(store.load("busy").memory.items), ["kept"], "the saved state after it")
    store.release(lease)
    store.save(session("busy", "later"))
    same(texts(store.load("busy").memory.items), ["later"], "the saved state after release")
