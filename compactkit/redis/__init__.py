"""Redis: a session's memory and its checkpoints on a Redis server (the worked example of a
custom backend held to the conformance kit).

Needs the official client (``pip install 'compactkit[redis]'``). May import every layer below
it (items … sessions); nothing below imports it.
"""

from compactkit.redis.memory import RedisMemory
from compactkit.redis.store import RedisSessionStore

__all__ = ["RedisMemory", "RedisSessionStore"]
