"""Seeded text makers: identifiers, names, code, logs, tables — the bulk of a trajectory.

Everything takes a ``random.Random`` so a seed decides every byte. Identifiers are random enough
never to occur by chance elsewhere in a transcript, so a planted one is found only where it was
planted (or copied).
"""

from __future__ import annotations

import random
import string

__all__ = [
    "WORDS",
    "code_module",
    "csv_table",
    "hexid",
    "json_records",
    "log_lines",
    "person",
    "prose",
    "ticket",
    "uuid",
]

WORDS = (
    "cache client config context cursor daemon delta event export fetch filter flush gateway "
    "handler index ingest job ledger limit loader merge metric model node parser payload pool "
    "queue reader record region report request retry route sample schema session shard signal "
    "snapshot source stage stream table task tenant token trace upload vector worker window"
).split()

_FIRST = (
    "Zoë",
    "Łukasz",
    "Søren",
    "Ana María",
    "Björn",
    "Chloé",
    "Dmitri",
    "Émile",
    "Fatima",
    "Giulia",
    "Hiroshi",
    "Ines",
    "Jürgen",
    "Kateřina",
    "Leïla",
    "Mateus",
    "Nguyễn",
    "Oskar",
    "Priya",
    "Renée",
    "Şebnem",
    "Tomás",
    "Ursula",
    "Wei",
    "陈静",
    "佐藤",
)
_LAST = (
    "Šťastná",
    "Øvergaard",
    "Müller",
    "García-López",
    "Nakamura",
    "O'Connor",
    "Dubois",
    "Kowalczyk",
    "Ibáñez",
    "Van der Berg",
    "Thắng",
    "Çelik",
    "Andersson",
    "Petrović",
)


def hexid(rng: random.Random, length: int = 7) -> str:
    """A lowercase hex string (a short commit sha by default)."""
    return "".join(rng.choice("0123456789abcdef") for _ in range(length))


def uuid(rng: random.Random) -> str:
    """A random version-4-looking UUID."""
    h = hexid(rng, 32)
    return f"{h[:8]}-{h[8:12]}-4{h[13:16]}-{rng.choice('89ab')}{h[17:20]}-{h[20:]}"


def ticket(rng: random.Random, prefix: str) -> str:
    """A ticket key such as ``PAY-4821``."""
    return f"{prefix}-{rng.randint(1000, 9899)}"


def token(rng: random.Random, length: int = 10) -> str:
    """A mixed-case alphanumeric token (request ids, API ids)."""
    return "".join(rng.choice(string.ascii_letters + string.digits) for _ in range(length))


def person(rng: random.Random) -> str:
    """A person's name, often with non-ASCII letters."""
    return f"{rng.choice(_FIRST)} {rng.choice(_LAST)}"


def prose(rng: random.Random, sentences: int) -> str:
    """Neutral filler sentences (no facts a probe would ask about)."""
    out = []
    for _ in range(sentences):
        words = [rng.choice(WORDS) for _ in range(rng.randint(6, 14))]
        out.append(" ".join(words).capitalize() + ".")
    return " ".join(out)


def _ident(rng: random.Random) -> str:
    return f"{rng.choice(WORDS)}_{rng.choice(WORDS)}"


def code_module(rng: random.Random, functions: int, *, header: str = "") -> str:
    """A plausible Python module: imports, a constant, functions with docstrings and bodies."""
    lines = [f'"""{header or prose(rng, 1)}"""', "", "from __future__ import annotations", ""]
    lines += [f"import {m}" for m in rng.sample(["json", "logging", "os", "re", "time"], 3)]
    lines += ["", f"_{rng.choice(WORDS).upper()}_LIMIT = {rng.randint(2, 512)}", ""]
    for _ in range(functions):
        name, arg, other = _ident(rng), rng.choice(WORDS), rng.choice(WORDS)
        lines += [
            "",
            f"def {name}({arg}: dict[str, object], {other}: int = {rng.randint(0, 9)}) -> list[str]:",
            f'    """{prose(rng, 1)}"""',
            "    out: list[str] = []",
            f"    for key, value in sorted({arg}.items()):",
            f"        if len(out) >= {other}:",
            "            break",
            f'        out.append(f"{{key}}={{value!r}}")  # {rng.choice(WORDS)} {rng.choice(WORDS)}',
            f"    logging.getLogger(__name__).debug({name!r} + ' %d', len(out))",
            "    return out",
        ]
    return "\n".join(lines) + "\n"


def log_lines(rng: random.Random, count: int, *, service: str = "worker") -> str:
    """Timestamped INFO/DEBUG log lines (bulky, no errors)."""
    out = []
    second = rng.randint(0, 3000)
    for _ in range(count):
        second += rng.randint(0, 3)
        level = rng.choice(("INFO", "INFO", "DEBUG", "DEBUG", "DEBUG"))
        stamp = f"2026-11-{rng.randint(2, 27):02d}T{second // 3600 % 24:02d}:{second // 60 % 60:02d}:{second % 60:02d}Z"
        words = " ".join(rng.choice(WORDS) for _ in range(rng.randint(4, 9)))
        out.append(
            f"{stamp} {level:<5} {service}[{rng.randint(100, 999)}] {words} n={rng.randint(0, 9999)}"
        )
    return "\n".join(out)


def csv_table(rng: random.Random, rows: int, columns: list[str]) -> str:
    """A CSV table with a header row; cells are numbers, words and names."""
    out = [",".join(columns)]
    for i in range(rows):
        cells = []
        for col in columns:
            if col.endswith("_id") or col == "id":
                cells.append(str(100000 + i * 7 + rng.randint(0, 6)))
            elif col in ("name", "customer"):
                cells.append(f'"{person(rng)}"')
            elif col == "region":
                cells.append(rng.choice(("emea", "apac", "na", "latam")))
            elif col == "segment":
                cells.append(rng.choice(("smb", "mid", "ent", "internal")))
            elif col in ("status", "channel"):
                cells.append(rng.choice(("active", "paused", "web", "partner")))
            elif col in ("seats", "customers", "churned", "tenure_days"):
                top = {"churned": 1, "seats": 80, "customers": 9000, "tenure_days": 2000}[col]
                cells.append(str(rng.randint(0, top)))
            elif col == "rate":
                cells.append(f"{rng.uniform(0, 12):.1f}")
            else:
                cells.append(f"{rng.uniform(0, 2000):.2f}")
        out.append(",".join(cells))
    return "\n".join(out)


def json_records(rng: random.Random, count: int) -> str:
    """Pretty-printed JSON records (an API listing)."""
    records = []
    for i in range(count):
        records.append(
            "  {\n"
            f'    "id": {1000 + i},\n'
            f'    "{rng.choice(WORDS)}": "{rng.choice(WORDS)} {rng.choice(WORDS)}",\n'
            f'    "{rng.choice(WORDS)}_count": {rng.randint(0, 500)},\n'
            f'    "owner": "{person(rng)}",\n'
            f'    "active": {rng.choice(("true", "false"))}\n'
            "  }"
        )
    return "[\n" + ",\n".join(records) + "\n]"
