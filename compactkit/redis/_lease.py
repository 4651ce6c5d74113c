"""Session leases in Redis: ``SET NX PX``-style acquisition, fencing tokens, fenced saves.

Keys of one session (next to ``RedisMemory``'s, same prefix and hash tag):

* ``lease`` — a hash ``token``/``holder``/``since`` with a ``PX`` expiry: the run holding the
  session. Redis expires it by its own clock, so a dead holder's lease ends ``ttl`` after its
  last fenced write wherever the workers run;
* ``fence`` — the fencing counter: ``INCR`` on every acquisition, never reset, so a later lease
  always has a larger token than any earlier one;
* ``revision`` — the saved state's revision (``SessionState.revision``), bumped by every save;
* ``journal`` — ``RedisSessionStore``'s patches on top of the saved base state (``state``),
  after the id of that base (``compactkit.sessions.journal``).

Each step is one Lua script, atomic on the server: taking the lease (free, expired or already
ours) and bumping the token; giving it back only while the token is still ours; and a save that
checks the token (or, without a lease, that no live run holds the session) and the revision
before it writes anything — a whole state, or a patch appended to the journal when the base and
revision it extends are still the stored ones (else it answers ``rebase`` and writes nothing),
and, for a run's last save, gives the lease back in the same script once the state is written.
``RedisMemory`` checks the same token inside its own transactions, and takes and gives back its
compaction lease (``compactkit.memory.lease``) by ``TAKE_COMPACTION`` and ``RELEASE_COMPACTION``.
"""

from __future__ import annotations

from datetime import datetime, timezone
from typing import Any

from compactkit.errors import ConcurrencyError, LeaseLostError, SessionBusyError
from compactkit.sessions.lease import SessionLease

__all__ = [
    "ACQUIRE",
    "RELEASE",
    "RELEASE_COMPACTION",
    "SAVE",
    "TAKE_COMPACTION",
    "busy_error",
    "lease_keys",
    "lease_scope",
    "lost_error",
    "save_outcome",
]

ACQUIRE = """
local current = redis.call('HMGET', KEYS[1], 'holder', 'since')
if current[1] and current[1] ~= ARGV[1] then
  return {0, current[1], current[2]}
end
local token = redis.call('INCR', KEYS[2])
redis.call('DEL', KEYS[1])
redis.call('HSET', KEYS[1], 'token', token, 'holder', ARGV[1], 'since', ARGV[2])
redis.call('PEXPIRE', KEYS[1], ARGV[3])
return {1, token, redis.call('GET', KEYS[3]) or '0'}
"""

RELEASE = """
if redis.call('HGET', KEYS[1], 'token') == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""

# KEYS: state, index, lease, revision, journal. ARGV: lease token ('' = no lease), lease ttl ms
# ('' = give the lease back once saved: a run's last save), expected revision ('' = any), state
# JSON or patch, state ttl ms ('' = none), index score, session id, 'whole' or 'patch', base id
# (whole: the new base's; patch: the one it extends), the stored revision the patch extends
# (patch only).
# The journal list starts with the id of the base its patches extend; a whole save replaces it.
# Saved, it answers the new revision (an integer: the cheapest reply to read); refused, a list.
SAVE = """
local lease = redis.call('HMGET', KEYS[3], 'token', 'holder', 'since')
if ARGV[1] ~= '' then
  if lease[1] ~= ARGV[1] then return {'lost', lease[2] or ''} end
  if ARGV[2] ~= '' then redis.call('PEXPIRE', KEYS[3], ARGV[2]) end
elseif lease[2] then
  return {'busy', lease[2], lease[3] or ''}
end
local revision = tonumber(redis.call('GET', KEYS[4]) or '0')
if ARGV[3] ~= '' and tonumber(ARGV[3]) ~= revision then return {'stale', tostring(revision)} end
if ARGV[8] == 'patch' then
  if tonumber(ARGV[10]) ~= revision or redis.call('LINDEX', KEYS[5], 0) ~= ARGV[9] then
    return {'rebase'}
  end
  redis.call('RPUSH', KEYS[5], ARGV[4])
  if ARGV[5] ~= '' then redis.call('PEXPIRE', KEYS[1], ARGV[5]) end
else
  redis.call('DEL', KEYS[5])
  redis.call('RPUSH', KEYS[5], ARGV[9])
  if ARGV[5] == '' then
    redis.call('SET', KEYS[1], ARGV[4])
  else
    redis.call('SET', KEYS[1], ARGV[4], 'PX', ARGV[5])
  end
end
if ARGV[5] == '' then
  redis.call('SET', KEYS[4], revision + 1)
else
  redis.call('SET', KEYS[4], revision + 1, 'PX', ARGV[5])
  redis.call('PEXPIRE', KEYS[5], ARGV[5])
end
redis.call('ZADD', KEYS[2], ARGV[6], ARGV[7])
if ARGV[1] ~= '' and ARGV[2] == '' then redis.call('DEL', KEYS[3]) end
return revision + 1
"""


# The compaction lease in one step on the server: take it when free or already ours (and renew
# it), else report the holder. The server's clock expires it (PX), so no client clock matters.
TAKE_COMPACTION = """
local current = redis.call('GET', KEYS[1])
if (not current) or current == ARGV[1] then
  redis.call('SET', KEYS[1], ARGV[1], 'PX', ARGV[2])
  return ARGV[1]
end
return current
"""
RELEASE_COMPACTION = """
if redis.call('GET', KEYS[1]) == ARGV[1] then return redis.call('DEL', KEYS[1]) end
return 0
"""


def lease_keys(tag: str) -> tuple[str, str, str]:
    """The ``lease``, ``fence`` and ``revision`` keys of the session whose key tag is ``tag``."""
    return f"{tag}:lease", f"{tag}:fence", f"{tag}:revision"


def lease_scope(client: Any, prefix: str) -> str:
    """Where a lease lives: the server, database and key prefix (a ``RedisMemory`` is fenced
    by a store's lease only when both say the same)."""
    kwargs = client.connection_pool.connection_kwargs
    where = kwargs.get("path") or f"{kwargs.get('host', 'localhost')}:{kwargs.get('port', 6379)}"
    return f"redis:{where}/{kwargs.get('db', 0)}#{prefix}"


def _text(raw: Any) -> str:
    return raw.decode() if isinstance(raw, bytes) else str(raw)


def _since(raw: Any) -> datetime | None:
    try:
        return datetime.fromisoformat(_text(raw)) if raw else None
    except ValueError:
        return None


def busy_error(session_id: str, holder: Any, since: Any, waited: float | None) -> SessionBusyError:
    """The error for a session whose lease another run holds."""
    when = _since(since)
    at = f" since {when:%Y-%m-%d %H:%M:%S} UTC" if when else ""
    if waited is None:
        what = "a save outside that run was refused (save from the run, or wait for it to end)"
    else:
        what = f"waited {waited:g} s; retry later, or pass a longer lease_timeout"
    return SessionBusyError(
        f"session {session_id!r} is running elsewhere: {_text(holder)!r} has held its lease"
        f"{at} ({what})",
        session_id=session_id,
        holder=_text(holder),
        since=when,
    )


def lost_error(lease: SessionLease, holder: Any) -> LeaseLostError:
    """The error for a write made under ``lease`` after it expired or was taken over."""
    now = repr(_text(holder)) if holder else "nobody"
    return LeaseLostError(
        f"the lease of session {lease.session_id!r} taken by {lease.holder!r} (token "
        f"{lease.token}) was taken over or expired (now held by {now}): this run stalled past "
        "its ttl; this write was not applied — resume the session to continue"
    )


def save_outcome(reply: list[Any], session: Any) -> int:
    """The new revision after ``SAVE``; the typed error when it refused."""
    if isinstance(reply, int):
        return reply
    status = _text(reply[0])
    session_id = session.session_id
    if status == "lost":
        raise lost_error(session.lease, reply[1])
    if status == "busy":
        raise busy_error(session_id, reply[1], reply[2], None)
    raise ConcurrencyError(
        f"session {session_id!r} was saved by another run (revision {_text(reply[1])}) since "
        f"this object loaded it (revision {session.revision}); nothing was saved — resume it "
        "again to continue from the newer state"
    )


def now_utc() -> datetime:
    return datetime.now(timezone.utc)
