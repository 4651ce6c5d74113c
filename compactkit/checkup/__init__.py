"""``doctor``: the "why did my agent forget?" checklist, run on what a session stored.

Each check reads the stored rows (or a live memory) and gives a verdict, the evidence (item
references such as ``#12-18``) and the fix:

- ``tool_pairs``: tool calls without outputs, outputs without calls or call ids;
- ``summary``: present where history was folded, handed out first as its own message, in the
  configured role, never written back into memory as an item;
- ``folding``: items dropped instead of folded (neither active nor archived);
- ``facts``: the user's rules and the files changed in a folded span are in the summary;
- ``drift``: compactions that gained nothing, that fire every turn, a summary larger than its
  source;
- ``isolation``: two sessions sharing stored items (one memory object served both), a session
  id reused for another conversation.

``compactkit doctor URL [SESSION]`` prints the same report (docs/doctor.md).
"""

from __future__ import annotations

from collections.abc import Sequence
from dataclasses import dataclass

from compactkit.budget.profiles import budget_for
from compactkit.checkup._checks import (
    SESSION_CHECKS,
    Check,
    check_drift,
    check_reuse,
    check_summary,
    isolation_checks,
    refs,
)
from compactkit.checkup._sources import StoredSession, read_sessions
from compactkit.checkup.timeline import timeline_html

__all__ = [
    "Check",
    "Diagnosis",
    "SessionDiagnosis",
    "StoredSession",
    "diagnose",
    "doctor",
    "read_sessions",
    "refs",
    "timeline_html",
]


@dataclass(frozen=True)
class SessionDiagnosis:
    """Every check's verdict on one session."""

    session_id: str
    checks: tuple[Check, ...]

    @property
    def healthy(self) -> bool:
        """Whether every check passed."""
        return all(check.ok for check in self.checks)

    @property
    def findings(self) -> tuple[Check, ...]:
        """The checks that found something."""
        return tuple(check for check in self.checks if not check.ok)

    def to_json(self) -> dict[str, object]:
        """The JSON form ``compactkit doctor --json`` prints for one session."""
        return {"session": self.session_id, "checks": [c.to_json() for c in self.checks]}


@dataclass(frozen=True)
class Diagnosis:
    """``doctor``'s report: one ``SessionDiagnosis`` per session checked."""

    sessions: tuple[SessionDiagnosis, ...]

    @property
    def healthy(self) -> bool:
        """Whether every session passed every check."""
        return all(session.healthy for session in self.sessions)

    def __getitem__(self, session_id: str) -> SessionDiagnosis:
        for session in self.sessions:
            if session.session_id == session_id:
                return session
        raise KeyError(session_id)

    def to_json(self) -> dict[str, object]:
        """``{"sessions": [{"session", "checks": [...]}]}``, as ``compactkit doctor --json``."""
        return {"sessions": [s.to_json() for s in self.sessions]}


def doctor(
    target: object,
    session_id: str | None = None,
    *,
    summary_role: str | None = None,
    table_prefix: str = "compactkit_",
    model: str | None = None,
) -> Diagnosis:
    """Run the debugging checklist on stored sessions.

    Args:
        target: A memory (any ``AgentMemory``; ``SQLMemory`` adds its compaction records), a
            ``SessionStore``, a database URL, a SQLite file's path or a ``FileSessionStore``
            directory.
        session_id: Check only this session (default: every session ``target`` holds).
        summary_role: The role the summary should speak with, checked on a live memory.
        table_prefix: The SQL tables' prefix, when ``target`` is a database.
        model: The session's model: compactions that left the context over its usable input
            budget are reported (``drift``).

    Returns:
        A ``Diagnosis``; ``diagnosis.healthy`` is what a CI check asserts.

    Raises:
        ConfigError: ``target`` cannot be read, or holds no session ``session_id``.
    """
    sessions = read_sessions(target, session_id, table_prefix=table_prefix)
    budget = budget_for(model).usable_input if model is not None else None
    return diagnose(sessions, summary_role=summary_role, budget=budget)


def diagnose(
    sessions: Sequence[StoredSession],
    *,
    summary_role: str | None = None,
    budget: int | None = None,
) -> Diagnosis:
    """The checklist over sessions already read (``doctor`` without the reading); ``budget``
    is the model's usable input, for the ``drift`` check."""
    shared = isolation_checks(sessions)
    out = []
    for session in sessions:
        checks = [
            check_summary(session, summary_role)
            if check is check_summary
            else check_drift(session, budget)
            if check is check_drift
            else check(session)
            for check in SESSION_CHECKS
        ]
        reuse = check_reuse(session)
        checks.append(shared.get(session.session_id, reuse) if reuse.ok else reuse)
        out.append(SessionDiagnosis(session.session_id, tuple(checks)))
    return Diagnosis(tuple(out))
