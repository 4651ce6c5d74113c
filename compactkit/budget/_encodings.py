"""Tokenizers, offline: tiktoken encodings from bundled rank files, and the process-wide count
of each text per encoding.

Encodings load from the rank files bundled in the ``bpe-openai`` package (byte-identical to
OpenAI's, checked against the published sha256), never from the network.

Counting uses ``bpe-openai``'s own Rust tokenizer when it is installed and answers a set of
probe texts with tiktoken's counts: the same counts (property-tested against tiktoken), built in
about a third of the time tiktoken takes to build its encoder, and about twice as fast per
character. ``COMPACTKIT_TOKENIZER=tiktoken`` (``TOKENIZER_ENV``) counts with tiktoken instead.

``text_counts(name)`` is shared by every counter of one encoding in the process and keyed by the
text itself, so a history that arrives as new objects with old content (a fresh projector, a
stateless ``compact_messages`` call, a CLI run, items read back from a database) is counted from
memory instead of encoded again.
"""

from __future__ import annotations

import base64
import contextlib
import gzip
import hashlib
import importlib.machinery
import importlib.util
import marshal
import os
import re
import sys
import threading
from collections.abc import Callable
from functools import cache
from pathlib import Path
from types import ModuleType
from typing import TYPE_CHECKING

from compactkit.errors import EncodingUnavailableError

if TYPE_CHECKING:
    import tiktoken

__all__ = [
    "CACHE_ENV",
    "LINE_ADDITIVE",
    "TOKENIZER_ENV",
    "TextCounts",
    "get_encoding",
    "line_pieces",
    "text_counts",
    "token_count",
]

# The published sha256 of OpenAI's rank files (tiktoken_ext.openai_public).
_RANK_SHA256 = {
    "cl100k_base": "223921b76ee99bde995b7ff738513eef100fb51d18c93597a113bcffe865b2a7",
    "o200k_base": "446a9538cb6c348e3516120d7c08b09f57c36495e2acfffe59a5bf8b0cfb1a2d",
}
_ENDOFTEXT, _FIM_PREFIX, _FIM_MIDDLE, _FIM_SUFFIX, _ENDOFPROMPT = (
    "<|endoftext|>",
    "<|fim_prefix|>",
    "<|fim_middle|>",
    "<|fim_suffix|>",
    "<|endofprompt|>",
)
# Split patterns and special tokens as tiktoken defines them for each encoding.
_ENCODING_SPECS: dict[str, tuple[str, dict[str, int]]] = {
    "cl100k_base": (
        r"""'(?i:[sdmt]|ll|ve|re)|[^\r\n\p{L}\p{N}]?+\p{L}++|\p{N}{1,3}+| ?[^\s\p{L}\p{N}]++[\r\n]*+|\s++$|\s*[\r\n]|\s+(?!\S)|\s""",
        {
            _ENDOFTEXT: 100257,
            _FIM_PREFIX: 100258,
            _FIM_MIDDLE: 100259,
            _FIM_SUFFIX: 100260,
            _ENDOFPROMPT: 100276,
        },
    ),
    "o200k_base": (
        "|".join(
            [
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]*[\p{Ll}\p{Lm}\p{Lo}\p{M}]+(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""[^\r\n\p{L}\p{N}]?[\p{Lu}\p{Lt}\p{Lm}\p{Lo}\p{M}]+[\p{Ll}\p{Lm}\p{Lo}\p{M}]*(?i:'s|'t|'re|'ve|'m|'ll|'d)?""",
                r"""\p{N}{1,3}""",
                r""" ?[^\s\p{L}\p{N}]+[\r\n/]*""",
                r"""\s*[\r\n]+""",
                r"""\s+(?!\S)""",
                r"""\s+""",
            ]
        ),
        {_ENDOFTEXT: 199999, _ENDOFPROMPT: 200018},
    ),
}


@cache
def get_encoding(name: str) -> tiktoken.Encoding:
    """Load a tiktoken encoding from the bundled rank files, without network.

    The first process checks the bundled file against OpenAI's published sha256 and writes the
    ranks it read to the disk cache (``CACHE_ENV``); later processes load them from there
    (``_cached_ranks``), skipping the gunzip, the hash of the uncompressed file and the parse.

    Raises:
        EncodingUnavailableError: the encoding is unknown or its rank file is not installed.
    """
    pattern, special = _spec(name)
    cache_file = _cache_file(name)
    ranks = _cached_ranks(cache_file) if cache_file is not None else None
    if ranks is None:
        ranks = _verified_ranks(name)
        if cache_file is not None:
            _write_cache(cache_file, ranks)
    import tiktoken  # (here: a process that counts with the Rust tokenizer never imports it)

    return tiktoken.Encoding(name, pat_str=pattern, mergeable_ranks=ranks, special_tokens=special)


def _spec(name: str) -> tuple[str, dict[str, int]]:
    spec = _ENCODING_SPECS.get(name)
    if spec is None:
        raise EncodingUnavailableError(
            f"no bundled rank file for encoding {name!r}; known: {sorted(_ENCODING_SPECS)}. "
            "Use a model profile with encoding=None to count with an estimate instead"
        )
    return spec


def _verified_ranks(name: str) -> dict[bytes, int]:
    """The ranks of the bundled rank file, checked against OpenAI's published sha256."""
    try:
        raw = _bundled_rank_file(name).read_bytes()
    except OSError as exc:
        raise EncodingUnavailableError(
            f"the rank file for {name!r} is not installed; run: pip install bpe-openai "
            "(it bundles OpenAI's cl100k_base and o200k_base files)"
        ) from exc
    data = gzip.decompress(raw)
    if hashlib.sha256(data).hexdigest() != _RANK_SHA256[name]:
        raise EncodingUnavailableError(
            f"the bundled rank file for {name!r} does not match OpenAI's published sha256; "
            "reinstall bpe-openai"
        )
    return {
        base64.b64decode(token): int(rank)
        for token, rank in (line.split() for line in data.splitlines() if line)
    }


CACHE_ENV = "COMPACTKIT_CACHE_DIR"
"""Where verified rank files are cached (default: ``$XDG_CACHE_HOME/compactkit`` or
``~/.cache/compactkit``); ``off`` disables the cache."""
_CACHE_FORMAT = b"compactkit-ranks-1"


def _cache_file(name: str) -> Path | None:
    folder = cache_folder()
    if folder is None:
        return None
    # The published hash in the name: a cache written for other ranks is never read.
    return Path(folder, f"{name}-{_RANK_SHA256[name][:16]}.ranks")


def cache_folder() -> str | None:
    """The folder of compactkit's caches on disk (``CACHE_ENV``), or ``None`` when it is
    ``off``."""
    folder = os.environ.get(CACHE_ENV)
    if folder == "off":
        return None
    if not folder:
        base = os.environ.get("XDG_CACHE_HOME") or os.path.join(os.path.expanduser("~"), ".cache")
        folder = os.path.join(base, "compactkit")
    return folder


def _cached_ranks(path: Path) -> dict[bytes, int] | None:
    """The ranks cached at ``path``, or ``None`` when absent, unreadable or not intact.

    The file holds a format line, the sha256 of the payload, and the payload (the ranks,
    ``marshal``-ed: loading it is about a third of the parse it replaces). The payload is
    unmarshalled only when its hash matches, so a truncated or corrupted file (a crash while
    writing, a full disk) is ignored and rewritten. Like tiktoken's own cache, it trusts the
    user's cache folder: whoever can write there could also change the installed packages.
    """
    payload = read_cached(path, _CACHE_FORMAT)
    if payload is None:
        return None
    try:
        ranks = marshal.loads(payload)
    except (EOFError, ValueError, TypeError):
        return None
    return ranks if type(ranks) is dict else None


def _write_cache(path: Path, ranks: dict[bytes, int]) -> None:
    write_cached(path, _CACHE_FORMAT, marshal.dumps(ranks))


def read_cached(path: Path, header: bytes) -> bytes | None:
    """The payload of the cache file ``path`` (written by ``write_cached`` with ``header``),
    or ``None`` when it is absent, unreadable, of another format or not intact (its sha256
    does not match)."""
    try:
        data = path.read_bytes()
    except OSError:
        return None
    found, _, rest = data.partition(b"\n")
    digest, _, payload = rest.partition(b"\n")
    if found != header or hashlib.sha256(payload).hexdigest().encode() != digest:
        return None
    return payload


def write_cached(path: Path, header: bytes, payload: bytes) -> None:
    """Write a cache file atomically (a temporary file renamed over it): ``header``, the
    payload's sha256, the payload. A folder that cannot be written (read-only home, sandbox)
    only means the next process does the work again."""
    digest = hashlib.sha256(payload).hexdigest().encode()
    temporary = path.with_name(f"{path.name}.{os.getpid()}.{threading.get_ident()}.tmp")
    try:
        path.parent.mkdir(parents=True, exist_ok=True)
        temporary.write_bytes(b"\n".join((header, digest, payload)))
        os.replace(temporary, path)
    except OSError:
        with contextlib.suppress(OSError):
            temporary.unlink()


def _bundled_rank_file(name: str) -> Path:
    # Locate bpe-openai's data without importing it (its import has side effects and warnings).
    spec = importlib.util.find_spec("bpe_openai")
    if spec is None or spec.origin is None:
        raise FileNotFoundError(f"bpe_openai/data/{name}.tiktoken.gz")
    return Path(spec.origin).parent / "data" / f"{name}.tiktoken.gz"


class TextCounts:
    """``count(text)`` (a text's tokens) remembered by text, up to ``limit`` characters of keys
    in all.

    A hit costs a dict lookup (hashing a new string once, about 1 ns per character, against
    about 50 ns per character to encode it). Reads take no lock; inserts do. When the keys
    outgrow ``limit``, the oldest eighth of the characters is dropped in one pass that builds a
    new dict (evicting one key per insert would scan the holes earlier deletions left at the
    front of the dict: O(entries) per insert once the cache is full).
    """

    def __init__(self, count: Callable[[str], int], limit: int = 32_000_000) -> None:
        self._count = count
        self._limit = limit
        self._counts: dict[str, int] = {}
        self._chars = 0
        self._lock = threading.Lock()

    def __call__(self, text: str) -> int:
        """Tokens of ``text``."""
        tokens = self._counts.get(text)
        if tokens is None:
            tokens = self._count(text)
            self._remember(text, tokens)
        return tokens

    def by_pieces(self, text: str, pieces: Callable[[str], list[str]]) -> int:
        """Tokens of ``text`` as the sum of its ``pieces(text)`` (the caller knows the sum is
        exact), each piece remembered, and the total under the whole text: a text that shares
        most pieces with one counted before encodes only its new ones, and counting it again
        is one look-up."""
        tokens = self._counts.get(text)
        if tokens is None:
            tokens = sum(map(self, pieces(text)))
            self._remember(text, tokens)
        return tokens

    def remember(self, text: str, tokens: int) -> None:
        """Take ``tokens`` as ``text``'s count: the caller counted it exactly another way (what
        ``count(text)`` returns, which it must be)."""
        self._remember(text, tokens)

    def clear(self) -> None:
        """Forget every count (benchmarks measure a cold process with it)."""
        with self._lock:
            self._counts.clear()
            self._chars = 0

    def _remember(self, text: str, tokens: int) -> None:
        size = len(text)
        if size > self._limit:
            return
        with self._lock:
            if text in self._counts:
                return
            if self._chars + size > self._limit:
                self._evict(self._chars + size - self._limit + self._limit // 8)
            self._counts[text] = tokens
            self._chars += size

    def _evict(self, chars: int) -> None:
        """Drop the oldest keys holding at least ``chars`` characters (the lock is held)."""
        kept = iter(self._counts.items())
        dropped = 0
        for key, _ in kept:
            dropped += len(key)
            if dropped >= chars:
                break
        self._counts = dict(kept)  # readers keep reading the old dict until this swap
        self._chars -= dropped


LINE_ADDITIVE = frozenset({"o200k_base", "cl100k_base"})
"""Encodings whose split pattern never lets a piece run past a line break into a line that
starts with a character other than whitespace or "/": a text's tokens are then the sum of its
pieces' when it is cut before such lines (``line_pieces``; property-tested)."""
# A line break followed by such a line (searched for from each line break: a look-behind at every
# character, as ``re.split`` on the zero-width cut would try, is about twice as slow).
_LINE_START = re.compile(r"\n(?=[^\s/])")


def line_pieces(text: str) -> list[str]:
    """``text`` cut before every line that starts with a character other than whitespace or
    "/": with a ``LINE_ADDITIVE`` encoding and no ``\r`` in ``text``, its tokens are the sum of
    the pieces' tokens."""
    cuts = [match.end() for match in _LINE_START.finditer(text)]
    if not cuts:
        return [text]
    return [text[start:stop] for start, stop in zip([0, *cuts], [*cuts, len(text)], strict=True)]


_counts_lock = threading.Lock()
_counts: dict[str, TextCounts] = {}


def text_counts(name: str) -> TextCounts:
    """The process-wide text counts of encoding ``name``; the encoding loads with the first
    text counted (``_LoadOnFirstCount``), so building a counter reads no file.

    Raises:
        EncodingUnavailableError: the encoding is unknown (at once), or its rank file is not
            installed (at the first count).
    """
    found = _counts.get(name)
    if found is None:
        _spec(name)
        with _counts_lock:
            found = _counts.setdefault(name, TextCounts(_LoadOnFirstCount(name)))
    return found


TOKENIZER_ENV = "COMPACTKIT_TOKENIZER"
"""``tiktoken`` counts with tiktoken's encoder; unset (or anything else), with ``bpe-openai``'s
Rust tokenizer where it loads and passes its probes, else with tiktoken."""

# Texts and their tiktoken counts, per encoding: contractions, digits, whitespace runs, line
# breaks, CJK, Hangul, combining marks, emoji with modifiers, special-token strings as plain text.
# A tokenizer that answers any of them differently is not used (tests keep them true to tiktoken).
_PROBE_TEXTS = (
    "Hello, world! It's 2026; we'll see.",
    "  indented\n\n\tcode = 12345678 + x_y\r\n",
    "日本語のテキストと한국어 and émojis 😀👍🏽",
    "<|endoftext|><|endofprompt|>'S'LL 's",
    "    \n   trailing   ",
)
_PROBE_COUNTS = {
    "o200k_base": (12, 14, 17, 18, 4),
    "cl100k_base": (14, 14, 24, 18, 4),
}
_bindings_lock = threading.Lock()


def rust_count(name: str) -> Callable[[str], int] | None:
    """``bpe-openai``'s Rust count for encoding ``name``, or ``None`` when it is not installed,
    does not know the encoding, fails a probe, or ``TOKENIZER_ENV`` asks for tiktoken.

    Text that is not valid UTF-8 (lone surrogates) is repaired first the way tiktoken's
    ``encode_ordinary`` repairs it, so the counts stay tiktoken's.
    """
    if os.environ.get(TOKENIZER_ENV, "").strip().lower() == "tiktoken":
        return None
    bindings = _rust_bindings()
    if bindings is None:
        return None
    try:
        count = bindings.tokenizer_for_encoding(name).count
        answers = tuple(count(text) for text in _PROBE_TEXTS)
    except Exception:  # an unknown encoding, or a build that fails: tiktoken counts instead
        return None
    if answers != _PROBE_COUNTS.get(name):
        return None

    def counted(text: str) -> int:
        try:
            return count(text)  # type: ignore[no-any-return]
        except UnicodeEncodeError:
            return count(text.encode("utf-16", "surrogatepass").decode("utf-16", "replace"))  # type: ignore[no-any-return]

    return counted


def _rust_bindings() -> ModuleType | None:
    """``bpe_openai._bindings``, loaded by itself: the package's ``__init__`` builds tiktoken
    compatibility tables at import (about 0.4 s) that counting does not need. The module is
    registered under its own name, so a later ``import bpe_openai`` reuses it (an extension
    module can be initialised once per process)."""
    with _bindings_lock:
        loaded = sys.modules.get("bpe_openai._bindings")
        if loaded is not None:
            return loaded
        try:
            spec = importlib.util.find_spec("bpe_openai")
            folder = spec.submodule_search_locations if spec is not None else None
            if not folder:
                return None
            for suffix in importlib.machinery.EXTENSION_SUFFIXES:
                path = Path(next(iter(folder)), f"_bindings{suffix}")
                if path.exists():
                    break
            else:
                return None
            found = importlib.util.spec_from_file_location("bpe_openai._bindings", path)
            if found is None or found.loader is None:
                return None
            module = importlib.util.module_from_spec(found)
            sys.modules["bpe_openai._bindings"] = module
            try:
                found.loader.exec_module(module)
            except BaseException:
                del sys.modules["bpe_openai._bindings"]
                raise
        except (ImportError, OSError, ValueError):
            return None
        return module


class _LoadOnFirstCount:
    """An encoding's ``token_count``, loaded when the first text is counted.

    A counter is often built inside a running event loop (a LangChain middleware, a pydantic-ai
    capability created in an async handler), where reading the rank file would block the loop;
    the integrations count in a worker thread, so the first count is where the file is read.
    Cost model: one attribute read per count that misses ``TextCounts``' cache (a miss encodes
    the text: about 50 ns per character), the load itself once per process and encoding.
    """

    def __init__(self, name: str) -> None:
        self._name = name
        self._count: Callable[[str], int] | None = None
        self._lock = threading.Lock()

    def __call__(self, text: str) -> int:
        count = self._count
        if count is None:
            with self._lock:  # two first counts in two threads load the encoding once
                if self._count is None:
                    self._count = rust_count(self._name) or token_count(get_encoding(self._name))
                count = self._count
        return count(text)


def token_count(encoding: tiktoken.Encoding) -> Callable[[str], int]:
    """``len(encoding.encode_ordinary(text))``, without building the list of tokens.

    tiktoken's encoder writes the tokens to a buffer (what ``encode_to_numpy`` wraps) before
    copying them into a Python list of ints; counting the buffer skips that copy (about a tenth
    of the encoding time). The same tokens: an empty set of allowed special tokens encodes
    special-token strings as plain text, as ``encode_ordinary`` does, and text that is not valid
    UTF-8 (lone surrogates) is repaired the way ``encode_ordinary`` repairs it. Where this
    tiktoken has no such buffer, the list's length.
    """
    ordinary = encoding.encode_ordinary
    to_buffer = getattr(getattr(encoding, "_core_bpe", None), "encode_to_tiktoken_buffer", None)
    if to_buffer is None:
        return lambda text: len(ordinary(text))
    plain: frozenset[str] = frozenset()

    def count(text: str) -> int:
        try:
            return memoryview(to_buffer(text, plain)).nbytes // 4
        except UnicodeEncodeError:  # lone surrogates: encode_ordinary's own repair
            return len(ordinary(text))

    return count
