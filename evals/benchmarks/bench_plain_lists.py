"""Benchmark: governing a plain message list in a loop, stateless and stateful (issue 35).

A deterministic coding-agent session (bench_projector's: user requests, tool loops with
parallel calls, small to huge tool outputs, answers), as OpenAI Chat Completions dicts, grows to
1,000 and 10,000 messages; before every model call the loop governs the whole list and keeps
``turn.history`` (``messages = [*turn.history, *new]``, as the README's loop does). Measured in
the same run:

1. **Per call**: the stateless ``compact_messages(messages, model=...)`` and the stateful
   ``MessageCompactor`` over the whole session, against one raw tokenization pass of the session
   (every message's text encoded once). Targets: stateless <= 1.5x stateful; each flat (mean of
   the last tenth of the calls / the first tenth <= 1.2); the whole session <= 3x the raw pass.
   Times are the thread's CPU time (other processes on a busy machine do not distort them).
   compactkit's encoding is loaded before the loops (a process loads it once, at its first
   count: the cold call below holds that load), as the raw pass's is; so are the modules its
   first compaction imports (a small unrelated conversation is compacted first: start-up holds
   that load).
2. **Cold call**: one ``compact_messages`` on a 10,000-message list in a fresh process, against
   LangChain ``trim_messages`` with its approximate counter, also in a fresh process (the call
   alone is timed, not the imports or building the list; LangChain's first call on two messages
   is not timed, as it imports most of ``langchain_core``; compactkit's loading of its encoding
   is; median over fresh processes). Three comparisons, each printed with its label and ratio
   (target: <= 2x): (a) both get the same dicts: LangChain's conversion to its messages is part
   of its call, as compactkit's reading of them is; (b) ``trim_messages`` on LangChain messages
   built before the call (as a LangGraph state holds them); (c) compactkit's LangChain entry
   point, ``CompactkitMiddleware``'s model call, on those same prebuilt messages: by default its
   first call on a long thread reads the thread whole and compacts it (the summary lists the
   files, errors and decisions of all of it); (d) with ``cold_start="quick"`` it reads only the
   newest turns a compaction keeps and digests the user's words before them
   (``integrations/_langchain_cold.py``; a thinner first summary). The peer sends no summary.
   Times are the process's CPU time, every thread (compactkit starts loading its tokenizer in a
   background thread at the start of the cold read: the calling thread's CPU time would not
   see it), with the wall clock beside them (what a caller waits; lower than the CPU time only
   with a core to spare, noisy on a busy machine) and the calling thread's CPU time in the
   JSON. Beside them, like for like: compactkit with the same approximate count
   (``EstimateCounter(4)``) against the approximate ``trim_messages``, and compactkit's exact
   count against ``trim_messages`` with a tiktoken counter (its encoding loaded in the call);
   the load of compactkit's encoding alone, the floor of any exact count in a fresh
   process; and the floor of an exact cold call: that load plus one exact count of the text of
   the end compactkit reads (sent whole, as a masked output's placeholder stating its exact
   size, or measured to prove the cut), against ``trim_messages`` on ready messages. compactkit reads only the end of the list a prompt can reach
   (``integrations/_cold.py``); the rest gets a shape check.
3. **Start-up**: ``import compactkit`` and ``from compactkit.integrations import
   compact_messages`` over the bare interpreter (target <= 120 ms for the first; the same aim
   for the second, beyond the issue's targets: pydantic and the item models alone take ~130 ms
   here), the latter plus a first
   ``compact_messages`` on a short list (what a CLI hook, a serverless function or a script pays
   in a new process), and ``compactkit count`` on a small file against a plain tiktoken script
   doing the same count (target <= 1.5x); CPU time of fresh processes (user + system), median
   and range, the kinds interleaved. The processes find their modules' bytecode compiled, as an
   installed package has it (pip compiles it; a prefix of their own, written by a first run of
   each, so that ``PYTHONDONTWRITEBYTECODE`` in the environment does not turn every import into
   a compilation); caches (rank files, profile tables) warm, as after a first use.
4. **Memory**: a 50,000-message session governed to the end by ``MessageCompactor`` (the list
   kept whole, the way a loop that never compacts holds it), against the raw dicts alone
   (tracemalloc, in a fresh process each). Target <= 1.5x.

Run: ``python evals/benchmarks/bench_plain_lists.py`` (``--tiny`` for CI's smoke run).
"""

from __future__ import annotations

import argparse
import gc
import json
import os
import resource
import shutil
import statistics
import subprocess
import sys
import tempfile
import time
from collections.abc import Callable
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from bench_projector import session

from compactkit.budget._encodings import text_counts
from compactkit.budget.tokens import get_encoding
from compactkit.items import FunctionCall, FunctionCallOutput, Message

MODEL = "gpt-4o"  # o200k_base, 127k usable input tokens
clock = time.thread_time
HERE = Path(__file__).resolve().parent

# -- the session as chat messages -----------------------------------------------------------


def chat_session(total: int) -> list[tuple[dict[str, Any], bool]]:
    """``total`` chat messages, each with whether a model call comes right after it."""
    out: list[tuple[dict[str, Any], bool]] = []
    calls: list[dict[str, Any]] = []
    for item, model_call in session():
        if isinstance(item, FunctionCall):
            calls.append(
                {
                    "id": item.call_id,
                    "type": "function",
                    "function": {"name": item.name, "arguments": item.arguments},
                }
            )
            continue
        if calls:
            out.append(({"role": "assistant", "content": None, "tool_calls": calls}, False))
            calls = []
        if isinstance(item, FunctionCallOutput):
            message = {"role": "tool", "tool_call_id": item.call_id, "content": item.output}
        else:
            assert isinstance(item, Message)
            message = {"role": item.role, "content": item.text}
        out.append((message, model_call))
        if len(out) >= total:
            break
    return out[:total]


def _encode(messages: list[dict[str, Any]]) -> None:
    encode = get_encoding("o200k_base").encode_ordinary
    for message in messages:
        if message.get("content"):
            encode(message["content"])
        for call in message.get("tool_calls") or ():
            encode(call["function"]["name"])
            encode(call["function"]["arguments"])


def raw_pass(messages: list[dict[str, Any]]) -> float:
    """Seconds to encode every message's text once (tiktoken's ``encode_ordinary``)."""
    start = clock()
    _encode(messages)
    return clock() - start


def cold() -> None:
    """As in a new process: no text counted yet (the process-wide counts cleared), and no
    garbage of an earlier loop left to collect."""
    text_counts("o200k_base").clear()
    gc.collect()


# -- 1. per call --------------------------------------------------------------------------------


@dataclass(frozen=True)
class Loop:
    total: float
    calls: int
    first: float  # mean seconds per call over the first tenth of the calls
    last: float  # ... and over the last tenth
    raw_first: float  # the same means for the raw pass over each call's new messages: the
    raw_last: float  # growth any exact counter inherits from the workload
    # Where a tenth's time goes: the calls that compacted (how many, and their share of the
    # tenth's time) and the mean of the calls that did not, first tenth and last.
    compactions: tuple[int, int]
    compaction_share: tuple[float, float]
    plain: tuple[float, float]
    # The mean seconds per call of each tenth: a cost that grows with the history rises
    # through them; a warm-up (no fold before the history first reaches the budget) shows
    # as a first tenth below a flat rest.
    tenths: tuple[float, ...]

    @property
    def flatness(self) -> float:
        return self.last / self.first

    @property
    def raw_flatness(self) -> float:
        return self.raw_last / self.raw_first

    @property
    def plain_flatness(self) -> float:
        """``flatness`` of the calls that did not compact."""
        return self.plain[1] / self.plain[0]


def run_loop(pairs: list[tuple[dict[str, Any], bool]], govern: Callable[[list[Any]], Any]) -> Loop:
    """Govern the list before every model call; ``govern`` returns the ``CompactedMessages``
    (its ``history`` is kept, its ``compacted`` says whether the call compacted)."""
    messages: list[Any] = []
    new: list[Any] = []
    times: list[float] = []
    compacted: list[bool] = []
    raw: list[float] = []
    for message, model_call in pairs:
        new.append(message)
        if model_call:
            messages = [*messages, *new]
            start = clock()
            turn = govern(messages)
            times.append(clock() - start)
            messages = turn.history
            compacted.append(turn.compacted)
            raw.append(raw_pass(new))
            new = []
    tenth = max(1, len(times) // 10)
    mean = statistics.mean
    ends = [slice(None, tenth), slice(-tenth, None)]
    splits = [(times[end], compacted[end]) for end in ends]
    counts = [sum(flags) for _, flags in splits]
    shares = [sum(t for t, c in zip(ts, flags, strict=True) if c) / sum(ts) for ts, flags in splits]
    plain = [
        mean([t for t, c in zip(ts, flags, strict=True) if not c] or ts) for ts, flags in splits
    ]
    return Loop(
        sum(times),
        len(times),
        mean(times[:tenth]),
        mean(times[-tenth:]),
        mean(raw[:tenth]),
        mean(raw[-tenth:]),
        (counts[0], counts[1]),
        (shares[0], shares[1]),
        (plain[0], plain[1]),
        tuple(mean(times[i * tenth : (i + 1) * tenth]) for i in range(len(times) // tenth)),
    )


def warm_up(compactor: Callable[..., Any], stateless: Callable[..., Any]) -> None:
    """Load what a process loads once, at its first compaction (the ladder's rungs, the digest,
    their patterns), by governing a small conversation that shares no text with the benchmark's
    session (nothing it leaves in a process-wide cache is found by the loops), with a budget
    small enough that it is masked and digested; and one stateless call."""
    governed = compactor(MODEL, budget=3_000)
    messages: list[Any] = [{"role": "system", "content": "Warm-up: load the compaction path."}]
    for turn in range(40):
        call_id = f"warm_{turn}"
        messages += [
            {"role": "user", "content": f"Warm-up request {turn}: list the files of pkg{turn}."},
            {
                "role": "assistant",
                "content": None,
                "tool_calls": [
                    {
                        "id": call_id,
                        "type": "function",
                        "function": {"name": "warm_ls", "arguments": f'{{"dir": "pkg{turn}"}}'},
                    }
                ],
            },
            {
                "role": "tool",
                "tool_call_id": call_id,
                "content": "\n".join(f"pkg{turn}/mod_{i}.py  {i * 37} bytes" for i in range(60)),
            },
            {"role": "assistant", "content": f"pkg{turn} holds 60 modules."},
        ]
        messages = governed(messages).history
    assert "compactkit.compressors.digest" in sys.modules, "the warm-up did not compact"
    stateless([{"role": "user", "content": "Warm-up: one stateless call."}], model=MODEL)


def per_call(sizes: list[int], runs: int) -> list[dict[str, Any]]:
    from compactkit.budget import counter_for
    from compactkit.integrations import MessageCompactor, compact_messages

    # compactkit's encoding is loaded once per process, at its first count (the cold call's
    # figures hold that load): loaded here, so that the first loop's first tenth does not pay it
    # and the second's does not skip it (the raw pass has its own encoding loaded, likewise).
    counter_for(MODEL).count_text("x")
    # So are the modules a compaction runs (compact_messages loads them with its first one: the
    # start-up figures hold that): without this the first loop's first compaction imports them
    # inside its timed call, and its first tenth is slower than its steady state.
    warm_up(MessageCompactor, compact_messages)
    rows = []
    for size in sizes:
        pairs = chat_session(size)
        raw = min(raw_pass([m for m, _ in pairs]) for _ in range(3))
        for run in range(runs):
            cold()
            compactor = MessageCompactor(MODEL)
            stateful = run_loop(pairs, compactor)
            # A new conversation for the stateless loop: new dicts, so no compactor it caches
            # from the stateful loop (or an earlier run) serves it.
            fresh = [(dict(m), call) for m, call in pairs]
            cold()
            stateless = run_loop(fresh, lambda ms: compact_messages(ms, model=MODEL))
            rows.append(
                {
                    "messages": size,
                    "run": run + 1,
                    "raw_s": raw,
                    "stateful_s": stateful.total,
                    "stateless_s": stateless.total,
                    "calls": stateful.calls,
                    "stateless_x_stateful": stateless.total / stateful.total,
                    "stateful_x_raw": stateful.total / raw,
                    "stateless_x_raw": stateless.total / raw,
                    "stateful_flatness": stateful.flatness,
                    "stateless_flatness": stateless.flatness,
                    "raw_flatness": stateful.raw_flatness,
                    # why the stateful loop's tenths differ (see ``Loop``)
                    "compactions_first_last": list(stateful.compactions),
                    "compaction_share_first_last": [round(x, 3) for x in stateful.compaction_share],
                    "stateful_flatness_without_compactions": stateful.plain_flatness,
                    "stateful_tenths_ms": [round(t * 1e3, 3) for t in stateful.tenths],
                    # the last tenth against the second: growth with the history, without
                    # the first tenth's warm-up (before the first fold)
                    "stateful_last_x_second_tenth": stateful.tenths[-1] / stateful.tenths[1],
                }
            )
    return rows


# -- 2. the cold call ---------------------------------------------------------------------------

_COLD = """
import json, sys, time
sys.path.insert(0, {here!r})
from bench_plain_lists import chat_session
messages = [m for m, _ in chat_session({size})]
kind = {kind!r}
def clocks():
    return time.process_time(), time.perf_counter(), time.thread_time()
if kind == "encoding load":  # what an exact count pays once per process, before any text
    from compactkit.budget import counter_for
    counter = counter_for({model!r})
    start = clocks()
    counter.count_text("x")
elif kind == "exact floor":
    # What any exact cold call reading this end pays, nothing else: the encoding's load and one
    # exact count of the text of every message compactkit's cold read keeps (sent whole, sent
    # as a masked output's placeholder stating its exact size, or measured to prove the cut).
    from compactkit.budget import counter_for
    counter = counter_for({model!r})
    texts = []
    for message in messages[{first}:]:
        texts.append(message.get("content") or "")
        for call in message.get("tool_calls") or ():
            texts += [call["function"]["name"], call["function"]["arguments"]]
    start = clocks()
    for text in texts:
        counter.count_text(text)
elif kind.startswith("compactkit langchain middleware"):
    # compactkit's LangChain entry point: CompactkitMiddleware's model call on the LangChain
    # messages a LangGraph state holds, built before the call (as for "messages ready"); a
    # new middleware, so its mirror of the thread is empty: the cold first call.
    from langchain_core.messages import AIMessage, convert_to_messages
    from langchain.agents.middleware.types import ModelRequest, ModelResponse
    from compactkit.integrations.langchain import CompactkitMiddleware
    ready = convert_to_messages(messages)
    system = ready[0] if ready and ready[0].type == "system" else None
    ready = ready[1:] if system is not None else ready
    quick = kind.startswith("compactkit langchain middleware, quick start")
    middleware = CompactkitMiddleware({model!r}, cold_start="quick" if quick else "full")
    request = ModelRequest(model=None, messages=ready, system_message=system, tool_choice=None,
                           tools=[], response_format=None, state={{"messages": ready}},
                           runtime=None)
    def handler(request):
        return ModelResponse(result=[AIMessage("ok")])
    start = clocks()
    middleware.wrap_model_call(request, handler)
elif kind.startswith("compactkit"):
    from compactkit.integrations import compact_messages
    options = {{}}
    if kind == "compactkit, encoding loaded":
        from compactkit.budget import counter_for
        counter_for({model!r}).count_text("x")  # a counter reads its rank file at its first count
    elif kind == "compactkit, estimate counter":
        from compactkit.budget import EstimateCounter, budget_for
        from compactkit.governance import ContextProjector
        budget = budget_for({model!r}).usable_input
        options["projector"] = ContextProjector(EstimateCounter(4.0), budget=budget)
    start = clocks()
    compact_messages(messages, model={model!r}, compaction=False, **options)
else:
    from langchain_core.messages import convert_to_messages
    from langchain_core.messages.utils import count_tokens_approximately, trim_messages
    from compactkit.budget import budget_for
    budget = budget_for({model!r}).usable_input
    # trim_messages imports most of langchain_core on its first call: a call on two messages
    # first, so only its work on the list is timed (compactkit's loading of its encoding is).
    trim_messages(convert_to_messages(messages[:2]), max_tokens=budget,
                  token_counter=count_tokens_approximately, strategy="last",
                  include_system=True, start_on="human")
    ready = convert_to_messages(messages) if kind == "trim_messages, messages ready" else None
    start = clocks()
    if kind == "trim_messages, tiktoken counter":
        import tiktoken
        encode = tiktoken.get_encoding("o200k_base").encode_ordinary  # loaded in the call, too
        def count(batch):
            total = 3
            for message in batch:
                total += 4 + len(encode(message.text))
                for call in getattr(message, "tool_calls", None) or []:
                    total += len(encode(call["name"])) + len(encode(str(call["args"])))
            return total
        counter = count
    else:
        counter = count_tokens_approximately
    # From the same dicts compact_messages gets: converting them is part of the call (but for
    # "messages ready": LangChain messages built before the call, as a LangGraph state holds them).
    lc = ready if ready is not None else convert_to_messages(messages)
    trim_messages(lc, max_tokens=budget, token_counter=counter,
                  strategy="last", include_system=True, start_on="human")
print(json.dumps([now - then for now, then in zip(clocks(), start)]))
"""


def fresh_process(code: str, env: dict[str, str] | None = None) -> Any:
    done = subprocess.run(
        [sys.executable, "-c", code],
        capture_output=True,
        text=True,
        check=True,
        env={**_env(), **(env or {})},
    )
    return json.loads(done.stdout.strip().splitlines()[-1])


def _env() -> dict[str, str]:
    env = dict(os.environ)
    root = str(HERE.parent.parent)
    env["PYTHONPATH"] = os.pathsep.join(filter(None, [root, env.get("PYTHONPATH")]))
    return env


COLD_KINDS = (
    "compactkit",
    "compactkit, encoding loaded",
    "compactkit, estimate counter",
    "compactkit langchain middleware, messages ready",
    "compactkit langchain middleware, quick start, messages ready",
    "trim_messages",
    "trim_messages, messages ready",
    "trim_messages, tiktoken counter",
    "encoding load",
    "exact floor",
)
"""What the cold call runs, each in fresh processes: compactkit's exact count (with the rank
file loaded in the call, and loaded before it), compactkit with the same approximate count as
LangChain's (``EstimateCounter(4)``: like for like with the approximate ``trim_messages``),
compactkit's LangChain entry point (``CompactkitMiddleware``'s model call, by default and with
``cold_start="quick"``) on LangChain messages built before the call, and ``trim_messages`` with its approximate counter (from the dicts, and
from LangChain messages built before the call, as a LangGraph state holds them) and with the
tiktoken counter a careful user writes (its encoding loaded in the call: like for like with
compactkit's exact count); and the floor of an exact cold call, the encoding's load and one
exact count of the text of the end compactkit reads (``cold_read_start``)."""


def cold_read_start(size: int) -> int:
    """Where compactkit's cold read of the ``size``-message session starts keeping messages
    (``integrations/_cold.py``): the messages from there on are the ones it counts exactly."""
    from compactkit.governance import ContextProjector
    from compactkit.integrations._cold import read_cold

    messages = [m for m, _ in chat_session(size)]
    projector = ContextProjector.for_model(MODEL)
    assert projector.budget is not None
    read = read_cold(messages, projector, projector.budget)
    if read is None:
        return 0  # read whole: every message is counted
    lead = read.lead_items  # (a leading system message is one item)
    return len(messages) - (len(read.messages) - lead)


CLOCKS = ("cpu", "wall", "thread")
"""Each fresh process reports the call's process CPU time (every thread: compactkit loads its
tokenizer in a background thread), its wall-clock time (what a caller waits, on a machine with
a core to spare) and the calling thread's CPU time."""

COMPARISONS = (
    ("same dicts", "compactkit", "trim_messages"),
    ("LangChain messages built before the call", "compactkit", "trim_messages, messages ready"),
    (
        "compactkit's LangChain entry on messages built before the call",
        "compactkit langchain middleware, messages ready",
        "trim_messages, messages ready",
    ),
    (
        'the same, cold_start="quick" (a thinner first summary)',
        "compactkit langchain middleware, quick start, messages ready",
        "trim_messages, messages ready",
    ),
)
"""The cold call's comparisons with ``trim_messages`` (approximate counter): the label, compactkit's
kind and the peer's (target: <= 2x)."""


def cold_call(size: int, runs: int) -> dict[str, Any]:
    samples: dict[str, list[list[float]]] = {kind: [] for kind in COLD_KINDS}
    first = cold_read_start(size)
    for _ in range(runs):
        for kind in samples:  # interleaved, so that a busy moment hits all of them
            code = _COLD.format(here=str(HERE), size=size, kind=kind, model=MODEL, first=first)
            env = tiktoken_cache_env() if kind == "trim_messages, tiktoken counter" else None
            samples[kind].append(fresh_process(code, env))
    by_clock = {
        clock: {kind: [sample[i] for sample in values] for kind, values in samples.items()}
        for i, clock in enumerate(CLOCKS)
    }
    median = {kind: statistics.median(values) for kind, values in by_clock["cpu"].items()}
    wall = {kind: statistics.median(values) for kind, values in by_clock["wall"].items()}
    approximate, exact = median["trim_messages"], median["trim_messages, tiktoken counter"]
    ready = median["trim_messages, messages ready"]
    return {
        "messages": size,
        "clock": "process CPU time (all threads); *_wall_s: wall clock",
        "compactkit_s": median["compactkit"],
        "compactkit_encoding_loaded_s": median["compactkit, encoding loaded"],
        "compactkit_estimate_s": median["compactkit, estimate counter"],
        "compactkit_middleware_ready_s": median["compactkit langchain middleware, messages ready"],
        "compactkit_middleware_quick_ready_s": median[
            "compactkit langchain middleware, quick start, messages ready"
        ],
        "trim_messages_s": approximate,
        "trim_messages_tiktoken_s": exact,
        "trim_messages_ready_s": ready,
        "ratio_vs_messages_ready": median["compactkit"] / ready,
        "ratio": median["compactkit"] / approximate,
        "ratio_encoding_loaded": median["compactkit, encoding loaded"] / approximate,
        "ratio_estimate_vs_approximate": median["compactkit, estimate counter"] / approximate,
        "ratio_exact_vs_exact": median["compactkit"] / exact,
        "ratio_middleware_vs_messages_ready": median[
            "compactkit langchain middleware, messages ready"
        ]
        / ready,
        "encoding_load_s": median["encoding load"],
        "encoding_load_vs_messages_ready": median["encoding load"] / ready,
        "ratio_estimate_vs_messages_ready": median["compactkit, estimate counter"] / ready,
        "exact_floor_s": median["exact floor"],
        "exact_floor_vs_messages_ready": median["exact floor"] / ready,
        "exact_floor_messages": size - first,
        "comparisons": [
            {
                "label": label,
                "compactkit": mine,
                "peer": peer,
                "ratio": median[mine] / median[peer],
                "ratio_wall": wall[mine] / wall[peer],
                "ratios_per_run": [
                    a / b for a, b in zip(by_clock["cpu"][mine], by_clock["cpu"][peer], strict=True)
                ],
            }
            for label, mine, peer in COMPARISONS
        ],
        "wall_s": wall,
        "runs": runs,
        "times_ms": {
            kind: [round(t * 1e3, 1) for t in values] for kind, values in by_clock["cpu"].items()
        },
        "wall_ms": {
            kind: [round(t * 1e3, 1) for t in values] for kind, values in by_clock["wall"].items()
        },
        "thread_ms": {
            kind: [round(t * 1e3, 1) for t in values] for kind, values in by_clock["thread"].items()
        },
    }


_TIKTOKEN_CACHE: list[Path] = []


def tiktoken_cache_env() -> dict[str, str]:
    """The environment of a process whose ``tiktoken.get_encoding`` finds o200k_base in its
    cache (a user's warm cache, offline), made once per run."""
    if not _TIKTOKEN_CACHE:
        _TIKTOKEN_CACHE.append(Path(tempfile.mkdtemp(prefix="bench-tiktoken-")))
        tiktoken_cache(_TIKTOKEN_CACHE[0])
    return {"TIKTOKEN_CACHE_DIR": str(_TIKTOKEN_CACHE[0])}


# -- 3. start-up --------------------------------------------------------------------------------

_TIKTOKEN_COUNT = """
import json, sys, tiktoken
encoding = tiktoken.get_encoding("o200k_base")
messages = json.load(open(sys.argv[1]))
total = 3
for message in messages:
    total += 3 + len(encoding.encode(message["content"] or ""))
print(total)
"""


def tiktoken_cache(folder: Path) -> dict[str, str]:
    """A tiktoken cache holding o200k_base (as a user's warm cache does, offline): the
    environment for the plain script."""
    import gzip
    import hashlib

    from compactkit.budget._encodings import _bundled_rank_file

    url = "https://openaipublic.blob.core.windows.net/encodings/o200k_base.tiktoken"
    key = hashlib.sha1(url.encode()).hexdigest()  # tiktoken.load's cache key
    Path(folder, key).write_bytes(gzip.decompress(_bundled_rank_file("o200k_base").read_bytes()))
    return {"TIKTOKEN_CACHE_DIR": str(folder)}


def cpu(argv: list[str], env: dict[str, str] | None = None) -> float:
    """CPU seconds (user + system) of a fresh process running ``argv``: unlike its wall time,
    not stretched by other processes on a busy machine."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, capture_output=True, env={**_env(), **(env or {})})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


_FIRST_CALL = """
import json, sys
messages = json.load(open(sys.argv[1]))
from compactkit.integrations import compact_messages
compact_messages(messages, model=sys.argv[2])
"""

START_UP_KINDS = (
    "bare",
    "import compactkit",
    "import compact_messages",
    "first call",
    "compactkit count",
    "tiktoken script",
)
"""What start-up runs, each in fresh processes: the bare interpreter, ``import compactkit``,
``from compactkit.integrations import compact_messages``, that import and a first call on a
6-message list (under the budget: no compaction), the count command on a 40-message file and a
plain tiktoken script counting the same file."""


def start_up(runs: int) -> dict[str, Any]:
    with tempfile.TemporaryDirectory() as folder:
        path = Path(folder, "small.json")
        path.write_text(json.dumps([m for m, _ in chat_session(40)]))
        short = Path(folder, "short.json")
        short.write_text(json.dumps([m for m, _ in chat_session(6)]))
        script = Path(folder, "count.py")
        script.write_text(_TIKTOKEN_COUNT)
        first_call = Path(folder, "first_call.py")
        first_call.write_text(_FIRST_CALL)
        # Bytecode compiled once, as an installed package has it (see the module docstring).
        compiled = {
            "PYTHONPYCACHEPREFIX": str(Path(folder, "pycache")),
            "PYTHONDONTWRITEBYTECODE": "",
        }
        python = sys.executable
        argv = {
            "bare": [python, "-c", "pass"],
            "import compactkit": [python, "-c", "import compactkit"],
            "import compact_messages": [
                python,
                "-c",
                "from compactkit.integrations import compact_messages",
            ],
            "first call": [python, str(first_call), str(short), MODEL],
            "compactkit count": [python, "-m", "compactkit", "count", str(path), "--model", MODEL],
            "tiktoken script": [python, str(script), str(path)],
        }
        env = {**compiled, **tiktoken_cache(Path(folder))}
        for kind in START_UP_KINDS:  # writes the bytecode, and may write the verified caches
            cpu(argv[kind], env)
        samples: dict[str, list[float]] = {kind: [] for kind in START_UP_KINDS}
        for _ in range(runs):
            for kind in START_UP_KINDS:  # interleaved, so that a busy moment hits all of them
                samples[kind].append(cpu(argv[kind], env))
    median = {kind: statistics.median(values) for kind, values in samples.items()}
    bare = median["bare"]
    return {
        "runs": runs,
        "bytecode": "compiled",
        "times_ms": {kind: [t * 1e3 for t in values] for kind, values in samples.items()},
        "bare_s": bare,
        "import_s": median["import compactkit"],
        "import_over_bare_ms": (median["import compactkit"] - bare) * 1e3,
        "compact_messages_import_over_bare_ms": (median["import compact_messages"] - bare) * 1e3,
        "first_call_over_bare_ms": (median["first call"] - bare) * 1e3,
        "first_call_alone_ms": (median["first call"] - median["import compact_messages"]) * 1e3,
        "count_s": median["compactkit count"],
        "tiktoken_script_s": median["tiktoken script"],
        "count_ratio": median["compactkit count"] / median["tiktoken script"],
    }


# -- 4. memory ----------------------------------------------------------------------------------

_MEMORY = """
import gc, json, sys, tracemalloc
sys.path.insert(0, {here!r})
from {module} import {session}
pairs = {session}({size})
import compactkit.integrations  # loaded before tracing: modules are not the session's memory
from compactkit.integrations import MessageCompactor
from compactkit.budget._encodings import text_counts
from compactkit.budget.tokens import get_encoding
get_encoding("o200k_base")
gc.collect()
tracemalloc.start()
raw = [json.loads(json.dumps(m)) for m, _ in pairs]  # the dicts as a loop holds them
gc.collect()
raw_bytes = tracemalloc.get_traced_memory()[0]
raw_objects = len(gc.get_objects())
if {kind!r} == "compactkit":
    compactor = MessageCompactor({model!r}, compaction=False)
    messages = []
    for message, (_, call) in zip(raw, pairs):
        messages.append(message)
        if call:
            compactor(messages)
    del messages
gc.collect()
print(json.dumps([raw_bytes, tracemalloc.get_traced_memory()[0], len(gc.get_objects())]))
"""


def memory(size: int, session: str = "bench_plain_lists.chat_session") -> dict[str, Any]:
    """``session(size)``'s messages governed to the end, against the raw dicts (``session``:
    ``module.function`` of a benchmark here, returning ``(message, model call)`` pairs)."""
    module, function = session.rsplit(".", 1)
    where = {"here": str(HERE), "size": size, "model": MODEL, "module": module, "session": function}
    raw_bytes, total_bytes, objects = fresh_process(_MEMORY.format(kind="compactkit", **where))
    raw_only = fresh_process(_MEMORY.format(kind="raw", **where))
    return {
        "messages": size,
        "raw_mib": raw_bytes / 2**20,
        "governed_mib": total_bytes / 2**20,
        "ratio": total_bytes / raw_bytes,
        "gc_objects": objects,
        "raw_gc_objects": raw_only[2],
    }


# -- report -------------------------------------------------------------------------------------


def _ms(results: dict[str, Any], kind: str) -> str:
    values = sorted(results["times_ms"][kind])
    return f"{statistics.median(values):.1f} ms ({values[0]:.1f}-{values[-1]:.1f})"


def _over_bare(s: dict[str, Any]) -> dict[str, str]:
    """Each start-up kind's range over the bare interpreter's median, as text."""
    bare = statistics.median(s["times_ms"]["bare"])
    return {
        kind: f"{min(values) - bare:.0f}-{max(values) - bare:.0f}"
        for kind, values in s["times_ms"].items()
    }


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__)
    parser.add_argument("--tiny", action="store_true", help="CI smoke run (a few seconds)")
    parser.add_argument("--runs", type=int, default=None, help="repetitions (default 3)")
    parser.add_argument("--only", choices=["per-call", "cold", "startup", "memory"], default=None)
    parser.add_argument("--json", action="store_true", help="print the results as JSON")
    parser.add_argument(
        "--sizes", type=int, nargs="+", default=None, help="per-call list sizes (1000 10000)"
    )
    args = parser.parse_args()
    runs = args.runs or (1 if args.tiny else 3)
    results: dict[str, Any] = {}
    if args.only in (None, "per-call"):
        sizes = args.sizes or ([300] if args.tiny else [1_000, 10_000])
        results["per_call"] = per_call(sizes, runs)
    if args.only in (None, "cold"):
        results["cold"] = cold_call(1_000 if args.tiny else 10_000, runs)
    if args.only in (None, "startup"):
        results["startup"] = start_up(runs if args.tiny else 5 * runs)
    if args.only in (None, "memory"):
        results["memory"] = memory(1_000 if args.tiny else 50_000)
    if args.json:
        print(json.dumps(results, indent=2))
        return
    report(results)


def report(results: dict[str, Any]) -> None:
    if "per_call" in results:
        print(f"1. per call, {MODEL}, whole session governed before every model call")
        print(
            f"{'messages':>8} {'run':>3} {'calls':>6} {'raw s':>7} {'stateful s':>10} "
            f"{'stateless s':>11} {'less/ful':>8} {'ful/raw':>7} {'less/raw':>8} "
            f"{'ful l/f':>7} {'less l/f':>8} {'raw l/f':>7}"
        )
        for r in results["per_call"]:
            print(
                f"{r['messages']:>8,} {r['run']:>3} {r['calls']:>6,} {r['raw_s']:>7.3f} "
                f"{r['stateful_s']:>10.3f} {r['stateless_s']:>11.3f} "
                f"{r['stateless_x_stateful']:>8.2f} {r['stateful_x_raw']:>7.2f} "
                f"{r['stateless_x_raw']:>8.2f} {r['stateful_flatness']:>7.2f} "
                f"{r['stateless_flatness']:>8.2f} {r['raw_flatness']:>7.2f}"
            )
        print(
            "   targets: less/ful <= 1.5, l/f (mean of the last tenth of the calls / the first"
            " tenth) <= 1.2 (raw l/f: the raw pass's own, over each call's new messages),"
            " x raw <= 3"
        )
        for r in results["per_call"]:
            first, last = r["compactions_first_last"]
            share_first, share_last = r["compaction_share_first_last"]
            print(
                f"   {r['messages']:,} run {r['run']}, stateful: {first} compactions in the "
                f"first tenth ({share_first:.0%} of its time), {last} in the last "
                f"({share_last:.0%}); l/f of the calls that did not compact "
                f"{r['stateful_flatness_without_compactions']:.2f}"
            )
            tenths = ", ".join(f"{t:.3f}" for t in r["stateful_tenths_ms"])
            print(
                f"      ms per call by tenth: {tenths}; last / second tenth "
                f"{r['stateful_last_x_second_tenth']:.2f} (not the target: what the first "
                "tenth's warm-up leaves out)"
            )
    if "cold" in results:
        c = results["cold"]
        wall = c["wall_s"]
        print(
            f"2. cold call, fresh process, {c['messages']:,} messages (process CPU time, every "
            f"thread; wall clock beside it), medians of {c['runs']} fresh processes each:"
        )
        for row in c["comparisons"]:
            mine, peer = row["compactkit"], row["peer"]
            per_run = ", ".join(f"{r:.2f}" for r in row["ratios_per_run"])
            print(
                f"   {row['label']}: {mine} {_ms(c, mine)} vs {peer} "
                f"{_ms(c, peer)}: {row['ratio']:.2f}x (runs {per_run}; wall "
                f"{wall[mine] * 1e3:.1f} vs {wall[peer] * 1e3:.1f} ms: {row['ratio_wall']:.2f}x)"
                " (target <= 2)"
            )
        print(
            f"   beside them: compactkit with the encoding loaded before the call "
            f"{c['compactkit_encoding_loaded_s'] * 1e3:.1f} ms ({c['ratio_encoding_loaded']:.2f}x "
            f"trim_messages from the dicts); with the approximate count (EstimateCounter(4)) "
            f"{c['compactkit_estimate_s'] * 1e3:.1f} ms ({c['ratio_estimate_vs_approximate']:.2f}x"
            f"); exact vs trim_messages with a tiktoken counter "
            f"{c['trim_messages_tiktoken_s'] * 1e3:.1f} ms ({c['ratio_exact_vs_exact']:.2f}x); "
            f"the encoding's load alone {c['encoding_load_s'] * 1e3:.1f} ms "
            f"({c['encoding_load_vs_messages_ready']:.2f}x trim_messages on ready messages)"
        )
        print(
            f"   against trim_messages on ready messages: compactkit with the approximate count "
            f"{c['ratio_estimate_vs_messages_ready']:.2f}x; the floor of an exact cold call (the "
            f"encoding's load + one exact count of the {c['exact_floor_messages']:,} messages "
            f"it reads) {c['exact_floor_s'] * 1e3:.1f} ms: "
            f"{c['exact_floor_vs_messages_ready']:.2f}x"
        )
    if "startup" in results:
        s = results["startup"]
        over = _over_bare(s)
        print(
            f"3. start-up, CPU of fresh processes (user + system), median (range) of {s['runs']}, "
            f"bytecode compiled: the bare interpreter {_ms(s, 'bare')}"
        )
        print(
            f"   import compactkit {s['import_over_bare_ms']:.0f} ms over the bare interpreter "
            f"({over['import compactkit']}) (target <= 120)"
        )
        print(
            "   from compactkit.integrations import compact_messages "
            f"{s['compact_messages_import_over_bare_ms']:.0f} ms over the bare interpreter "
            f"({over['import compact_messages']}) (aim <= 120, not an issue target: pydantic and "
            "the item models alone take ~130)"
        )
        print(
            f"   that and a first compact_messages on 6 messages {s['first_call_over_bare_ms']:.0f}"
            f" ms over the bare interpreter ({over['first call']}): the call itself "
            f"{s['first_call_alone_ms']:.0f} ms"
        )
        print(
            f"   compactkit count {_ms(s, 'compactkit count')} vs a tiktoken script "
            f"{_ms(s, 'tiktoken script')}: {s['count_ratio']:.2f}x (target <= 1.5)"
        )
    if "memory" in results:
        m = results["memory"]
        print(
            f"4. memory, {m['messages']:,} messages governed to the end: {m['governed_mib']:.1f}"
            f" MiB vs {m['raw_mib']:.1f} MiB of raw dicts: {m['ratio']:.2f}x (target <= 1.5); "
            f"gc objects {m['gc_objects']:,} vs {m['raw_gc_objects']:,}"
        )


if __name__ == "__main__":
    try:
        main()
    finally:  # the tiktoken cache the start-up runs made, if they ran
        for folder in _TIKTOKEN_CACHE:
            shutil.rmtree(folder, ignore_errors=True)
