"""Build ``compactkit/data/examples/coding_session.json``: a realistic long coding-agent session.

The session: a coding agent adds retries with exponential backoff to the HTTP transport of a
small Python library ("weatherly"). It has everything compaction has to survive — a system
prompt, a user goal with explicit constraints, files read and edited (a virtual file system
keeps every read consistent with the edits before it), pytest runs with real-looking failures
and tracebacks, a mypy error, an abandoned approach with its reason, a config value that
changes twice, commit shas, URLs, a later user correction — and ends on a pending user request.

Deterministic: no clock, no randomness; call ids are derived from a counter. Run it from the
repository root::

    python evals/transcripts/make_coding_session.py            # writes the bundled file
    python evals/transcripts/make_coding_session.py --check    # fails if the file is stale
"""

from __future__ import annotations

import argparse
import difflib
import hashlib
import json
import re
import sys
import textwrap
from pathlib import Path
from typing import Any

OUT = Path(__file__).resolve().parents[2] / "compactkit/data/examples/coding_session.json"

SYSTEM = """\
You are Forge, an autonomous software engineering agent working in a developer's repository.

You can read and write files and run shell commands through the tools provided. Work in small,
verifiable steps: read before you edit, run the tests after every change, and explain what you
are about to do in one or two sentences before each tool call. Prefer minimal diffs that match
the surrounding code style. Never invent file contents: if you need to know what a file
contains, read it. When a command fails, read the error carefully before trying a fix, and do
not repeat the same failing command without changing something.

Repository root: /home/dev/weatherly. Python 3.11, virtualenv already active.
When you are done with a task, summarise what changed and what is left."""

TOOLS = [
    {
        "type": "function",
        "function": {
            "name": "read_file",
            "description": "Read a text file from the repository.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the repo root"},
                    "start_line": {"type": "integer", "description": "First line (1-based)"},
                    "end_line": {"type": "integer", "description": "Last line (inclusive)"},
                },
                "required": ["path"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "write_file",
            "description": "Create or overwrite a file with the given content.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the repo root"},
                    "content": {"type": "string", "description": "The complete new content"},
                },
                "required": ["path", "content"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "edit_file",
            "description": "Replace one exact occurrence of old_str with new_str in a file.",
            "parameters": {
                "type": "object",
                "properties": {
                    "path": {"type": "string", "description": "Path relative to the repo root"},
                    "old_str": {"type": "string", "description": "Exact text to replace"},
                    "new_str": {"type": "string", "description": "Replacement text"},
                },
                "required": ["path", "old_str", "new_str"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "run_shell",
            "description": "Run a shell command in the repository root and return its output.",
            "parameters": {
                "type": "object",
                "properties": {"command": {"type": "string", "description": "The command"}},
                "required": ["command"],
            },
        },
    },
    {
        "type": "function",
        "function": {
            "name": "list_dir",
            "description": "List the files under a directory.",
            "parameters": {
                "type": "object",
                "properties": {"path": {"type": "string", "description": "Directory"}},
                "required": ["path"],
            },
        },
    },
]


def dedent(text: str) -> str:
    return textwrap.dedent(text).lstrip("\n")


# -- the repository, as it is when the session starts -----------------------------------------

FILES: dict[str, str] = {}

FILES["README.md"] = dedent("""
    # weatherly

    A small, typed Python client for the Weatherly forecast API
    (https://docs.weatherly.dev/api/v2).

    ```python
    from weatherly import WeatherClient

    client = WeatherClient.from_config("config/weatherly.toml")
    print(client.current("Oslo").temperature_c)
    ```

    ## Development

        pip install -e ".[dev]"
        pytest -q
        mypy weatherly
        ruff check .

    Releases are cut from `main` by CI; feature work happens on `feat/*` branches and lands
    through pull requests. See CONTRIBUTING.md.
""")

FILES["pyproject.toml"] = dedent("""
    [project]
    name = "weatherly"
    version = "1.4.2"
    requires-python = ">=3.10"
    dependencies = ["httpx>=0.27,<0.28"]

    [project.optional-dependencies]
    dev = ["pytest>=8", "respx>=0.21", "mypy>=1.10", "ruff>=0.5", "pytest-cov>=5"]

    [tool.pytest.ini_options]
    addopts = "-q"
    testpaths = ["tests"]

    [tool.mypy]
    strict = true
    files = ["weatherly"]

    [tool.ruff]
    line-length = 100
""")

FILES["config/weatherly.toml"] = dedent("""
    # Weatherly client configuration. Values here are defaults; environment variables
    # WEATHERLY_<SECTION>_<KEY> override them.

    [api]
    base_url = "https://api.weatherly.dev/v2"
    timeout = 10.0
    api_key_env = "WEATHERLY_API_KEY"

    [cache]
    enabled = true
    ttl_seconds = 300
    max_entries = 512
""")

FILES["weatherly/errors.py"] = dedent('''
    """Exceptions raised by the weatherly client."""

    from __future__ import annotations


    class WeatherlyError(Exception):
        """Base class for every weatherly error."""


    class ConfigError(WeatherlyError):
        """The configuration file or environment is invalid."""


    class ApiError(WeatherlyError):
        """The API answered with an error status or could not be reached."""

        def __init__(self, message: str, *, status: int | None = None) -> None:
            super().__init__(message)
            self.status = status


    class RateLimited(ApiError):
        """HTTP 429: the caller must wait before retrying."""

        def __init__(self, retry_after: float | None) -> None:
            super().__init__(f"rate limited; retry after {retry_after}s", status=429)
            self.retry_after = retry_after
''')

FILES["weatherly/config.py"] = dedent('''
    """Loading settings from config/weatherly.toml and the environment."""

    from __future__ import annotations

    import os
    import tomllib
    from dataclasses import dataclass, field
    from pathlib import Path
    from typing import Any

    from weatherly.errors import ConfigError


    @dataclass(frozen=True)
    class CacheSettings:
        enabled: bool = True
        ttl_seconds: int = 300
        max_entries: int = 512


    @dataclass(frozen=True)
    class Settings:
        base_url: str
        timeout: float
        api_key: str
        cache: CacheSettings = field(default_factory=CacheSettings)


    def load_settings(path: str | os.PathLike[str]) -> Settings:
        """Read the TOML file at ``path`` and apply environment overrides."""
        try:
            data = tomllib.loads(Path(path).read_text(encoding="utf-8"))
        except (OSError, tomllib.TOMLDecodeError) as exc:
            raise ConfigError(f"cannot read {path}: {exc}") from exc
        api = _section(data, "api")
        key_env = str(api.get("api_key_env", "WEATHERLY_API_KEY"))
        api_key = os.environ.get(key_env)
        if not api_key:
            raise ConfigError(f"set {key_env} to your Weatherly API key")
        return Settings(
            base_url=_override("api", "base_url", api.get("base_url")),
            timeout=float(_override("api", "timeout", api.get("timeout", 10.0))),
            api_key=api_key,
            cache=CacheSettings(**_section(data, "cache")),
        )


    def _section(data: dict[str, Any], name: str) -> dict[str, Any]:
        value = data.get(name, {})
        if not isinstance(value, dict):
            raise ConfigError(f"[{name}] must be a table")
        return value


    def _override(section: str, key: str, default: Any) -> Any:
        return os.environ.get(f"WEATHERLY_{section.upper()}_{key.upper()}", default)
''')

FILES["weatherly/http.py"] = dedent('''
    """Low-level HTTP transport for the Weatherly API."""

    from __future__ import annotations

    import logging
    from collections.abc import Mapping
    from dataclasses import dataclass
    from typing import Any

    import httpx

    from weatherly.config import Settings
    from weatherly.errors import ApiError, RateLimited

    log = logging.getLogger(__name__)

    DEFAULT_BASE_URL = "https://api.weatherly.dev/v2"
    USER_AGENT = "weatherly-python/1.4.2"


    @dataclass(frozen=True)
    class Response:
        status: int
        data: Any
        headers: Mapping[str, str]


    class HttpTransport:
        """Sends requests and maps error statuses to exceptions."""

        def __init__(self, settings: Settings, client: httpx.Client | None = None) -> None:
            self._settings = settings
            self._client = client or httpx.Client(
                base_url=settings.base_url or DEFAULT_BASE_URL,
                timeout=settings.timeout,
                headers={
                    "User-Agent": USER_AGENT,
                    "Authorization": f"Bearer {settings.api_key}",
                },
            )

        def request(
            self,
            method: str,
            path: str,
            *,
            params: Mapping[str, Any] | None = None,
            json: Any = None,
        ) -> Response:
            log.debug("%s %s params=%s", method, path, params)
            try:
                raw = self._client.request(method, path, params=params, json=json)
            except httpx.TransportError as exc:
                raise ApiError(f"transport error calling {path}: {exc}") from exc
            return self._handle(raw)

        def _handle(self, raw: httpx.Response) -> Response:
            if raw.status_code == 429:
                raise RateLimited(retry_after=_retry_after(raw))
            if raw.status_code >= 400:
                raise ApiError(
                    f"{raw.status_code} from {raw.request.url}: {raw.text[:200]}",
                    status=raw.status_code,
                )
            return Response(raw.status_code, raw.json(), dict(raw.headers))

        def close(self) -> None:
            self._client.close()


    def _retry_after(raw: httpx.Response) -> float | None:
        value = raw.headers.get("Retry-After")
        if value is None:
            return None
        try:
            return float(value)
        except ValueError:
            return None
''')

FILES["weatherly/client.py"] = dedent('''
    """The public client: typed methods over the Weatherly API."""

    from __future__ import annotations

    import os
    from dataclasses import dataclass
    from datetime import date
    from typing import Any

    from weatherly.cache import TTLCache
    from weatherly.config import Settings, load_settings
    from weatherly.http import HttpTransport


    @dataclass(frozen=True)
    class Current:
        city: str
        temperature_c: float
        humidity: int
        wind_kph: float
        condition: str


    @dataclass(frozen=True)
    class ForecastDay:
        day: date
        min_c: float
        max_c: float
        precipitation_mm: float
        condition: str


    @dataclass(frozen=True)
    class Alert:
        id: str
        region: str
        severity: str
        headline: str


    class WeatherClient:
        """Typed access to the Weatherly API (GET endpoints are cached)."""

        def __init__(self, settings: Settings, transport: HttpTransport | None = None) -> None:
            self._settings = settings
            self._transport = transport or HttpTransport(settings)
            self._cache: TTLCache[Any] = TTLCache(
                ttl=settings.cache.ttl_seconds, max_entries=settings.cache.max_entries
            )

        @classmethod
        def from_config(cls, path: str | os.PathLike[str]) -> WeatherClient:
            return cls(load_settings(path))

        def current(self, city: str) -> Current:
            data = self._get("/current", {"city": city})
            return Current(
                city=data["city"],
                temperature_c=float(data["temp_c"]),
                humidity=int(data["humidity"]),
                wind_kph=float(data["wind_kph"]),
                condition=data["condition"],
            )

        def forecast(self, city: str, days: int = 3) -> list[ForecastDay]:
            if not 1 <= days <= 14:
                raise ValueError(f"days must be between 1 and 14, got {days}")
            data = self._get("/forecast", {"city": city, "days": days})
            return [
                ForecastDay(
                    day=date.fromisoformat(d["date"]),
                    min_c=float(d["min_c"]),
                    max_c=float(d["max_c"]),
                    precipitation_mm=float(d["precip_mm"]),
                    condition=d["condition"],
                )
                for d in data["days"]
            ]

        def alerts(self, region: str) -> list[Alert]:
            data = self._get("/alerts", {"region": region})
            return [Alert(a["id"], a["region"], a["severity"], a["headline"]) for a in data]

        def submit_observation(self, station_id: str, temperature_c: float) -> str:
            """POST a station observation; returns the observation id."""
            response = self._transport.request(
                "POST",
                "/observations",
                json={"station_id": station_id, "temp_c": temperature_c},
            )
            return str(response.data["id"])

        def _get(self, path: str, params: dict[str, Any]) -> Any:
            key = (path, tuple(sorted(params.items())))
            if self._settings.cache.enabled:
                cached = self._cache.get(key)
                if cached is not None:
                    return cached
            data = self._transport.request("GET", path, params=params).data
            if self._settings.cache.enabled:
                self._cache.put(key, data)
            return data

        def close(self) -> None:
            self._transport.close()
''')

FILES["weatherly/cache.py"] = dedent('''
    """A tiny TTL cache for GET responses."""

    from __future__ import annotations

    import time
    from collections import OrderedDict
    from collections.abc import Hashable
    from typing import Generic, TypeVar

    T = TypeVar("T")


    class TTLCache(Generic[T]):
        def __init__(self, ttl: float, max_entries: int = 512) -> None:
            self._ttl = ttl
            self._max = max_entries
            self._data: OrderedDict[Hashable, tuple[float, T]] = OrderedDict()

        def get(self, key: Hashable) -> T | None:
            entry = self._data.get(key)
            if entry is None:
                return None
            stored, value = entry
            if time.monotonic() - stored > self._ttl:
                del self._data[key]
                return None
            self._data.move_to_end(key)
            return value

        def put(self, key: Hashable, value: T) -> None:
            self._data[key] = (time.monotonic(), value)
            self._data.move_to_end(key)
            while len(self._data) > self._max:
                self._data.popitem(last=False)
''')

FILES["weatherly/__init__.py"] = dedent('''
    """weatherly: a typed client for the Weatherly forecast API."""

    import logging

    from weatherly.client import Alert, Current, ForecastDay, WeatherClient
    from weatherly.errors import ApiError, ConfigError, RateLimited, WeatherlyError

    __all__ = [
        "Alert",
        "ApiError",
        "ConfigError",
        "Current",
        "ForecastDay",
        "RateLimited",
        "WeatherClient",
        "WeatherlyError",
    ]
    __version__ = "1.4.2"

    # Applications configure logging; the library stays quiet unless asked.
    logging.getLogger("weatherly").propagate = False
''')

FILES["tests/conftest.py"] = dedent("""
    from __future__ import annotations

    import time
    from collections.abc import Callable, Iterator

    import httpx
    import pytest

    from weatherly.config import CacheSettings, Settings
    from weatherly.http import HttpTransport

    Handler = Callable[[httpx.Request], httpx.Response]


    def _no_sleep(secs: float) -> None:
        pytest.fail(f"test slept for real ({secs:.2f}s): inject a fake sleep")


    @pytest.fixture(autouse=True)
    def no_real_sleep(monkeypatch: pytest.MonkeyPatch) -> None:
        monkeypatch.setattr(time, "sleep", _no_sleep)


    @pytest.fixture
    def settings() -> Settings:
        return Settings(
            base_url="https://api.weatherly.dev/v2",
            timeout=5.0,
            api_key="test-key",
            cache=CacheSettings(enabled=False),
        )


    @pytest.fixture
    def make_transport(settings: Settings) -> Iterator[Callable[[Handler], HttpTransport]]:
        made: list[HttpTransport] = []

        def make(handler: Handler) -> HttpTransport:
            client = httpx.Client(
                base_url=settings.base_url, transport=httpx.MockTransport(handler)
            )
            transport = HttpTransport(settings, client=client)
            made.append(transport)
            return transport

        yield make
        for transport in made:
            transport.close()
""")

FILES["tests/test_config.py"] = dedent("""
    from __future__ import annotations

    import pytest

    from weatherly.config import load_settings
    from weatherly.errors import ConfigError


    def write(tmp_path, text):
        path = tmp_path / "weatherly.toml"
        path.write_text(text)
        return path


    def test_defaults(tmp_path, monkeypatch):
        monkeypatch.setenv("WEATHERLY_API_KEY", "k")
        settings = load_settings(write(tmp_path, "[api]\\nbase_url = 'https://x'\\n"))
        assert settings.timeout == 10.0


    def test_missing_key(tmp_path, monkeypatch):
        monkeypatch.delenv("WEATHERLY_API_KEY", raising=False)
        with pytest.raises(ConfigError, match="WEATHERLY_API_KEY"):
            load_settings(write(tmp_path, "[api]\\n"))


    def test_env_override(tmp_path, monkeypatch):
        monkeypatch.setenv("WEATHERLY_API_KEY", "k")
        monkeypatch.setenv("WEATHERLY_API_TIMEOUT", "30")
        assert load_settings(write(tmp_path, "[api]\\n")).timeout == 30.0


    def test_bad_table(tmp_path, monkeypatch):
        monkeypatch.setenv("WEATHERLY_API_KEY", "k")
        with pytest.raises(ConfigError):
            load_settings(write(tmp_path, "cache = 3\\n"))
""")

FILES["tests/test_http.py"] = dedent("""
    from __future__ import annotations

    import httpx
    import pytest

    from weatherly.errors import ApiError, RateLimited


    def test_ok_returns_json(make_transport):
        transport = make_transport(lambda request: httpx.Response(200, json={"ok": True}))
        assert transport.request("GET", "/current").data == {"ok": True}


    def test_error_status_raises_api_error(make_transport):
        transport = make_transport(lambda request: httpx.Response(500, text="boom"))
        with pytest.raises(ApiError) as info:
            transport.request("GET", "/current")
        assert info.value.status == 500


    def test_429_raises_rate_limited_with_retry_after(make_transport):
        transport = make_transport(
            lambda request: httpx.Response(429, headers={"Retry-After": "7"})
        )
        with pytest.raises(RateLimited) as info:
            transport.request("GET", "/current")
        assert info.value.retry_after == 7.0


    def test_transport_error_is_wrapped(make_transport):
        def handler(request):
            raise httpx.ConnectError("connection refused", request=request)

        transport = make_transport(handler)
        with pytest.raises(ApiError, match="transport error"):
            transport.request("GET", "/current")


    def test_user_agent_and_auth_headers(make_transport, settings):
        seen = {}

        def handler(request):
            seen.update(request.headers)
            return httpx.Response(200, json={})

        make_transport(handler).request("GET", "/current")
        assert seen["authorization"] == "Bearer test-key"


    def test_params_are_sent(make_transport):
        def handler(request):
            assert request.url.params["city"] == "Oslo"
            return httpx.Response(200, json={})

        make_transport(handler).request("GET", "/current", params={"city": "Oslo"})
""")

FILES["CONTRIBUTING.md"] = dedent("""
    # Contributing to weatherly

    Thanks for helping! A few rules keep the client small and predictable.

    ## Branches and commits

    - `main` is protected: every change lands through a pull request from a `feat/*`,
      `fix/*` or `docs/*` branch. CI must be green before review.
    - Reference the issue in the commit subject, e.g. `Fix cache eviction order (#41)`.
    - Keep commits focused; squash fixups before asking for review.

    ## Code

    - Python 3.10+ (see `requires-python`), fully typed, `mypy --strict` clean.
    - `ruff check .` and `ruff format --check .` must pass.
    - The public API is what `weatherly/__init__.py` exports. Changing a public signature
      needs a deprecation period of one minor release.
    - Runtime dependencies: httpx only. Adding one needs a maintainer's approval in the
      issue first.
    - Tests never touch the network and never sleep: use `httpx.MockTransport` and inject
      clocks/sleeps. `tests/conftest.py` fails any test that calls `time.sleep`.

    ## Releasing (maintainers)

    1. Update `CHANGELOG.md` and the version in `pyproject.toml` and `weatherly/__init__.py`.
    2. Tag `vX.Y.Z` on `main`; CI publishes to PyPI.
""")

FILES["tests/test_client.py"] = dedent("""
    from __future__ import annotations

    from datetime import date

    import httpx
    import pytest

    from weatherly.client import WeatherClient
    from weatherly.config import CacheSettings, Settings


    CURRENT = {"city": "Oslo", "temp_c": 3.5, "humidity": 81, "wind_kph": 14.0, "condition": "Sleet"}
    FORECAST = {
        "days": [
            {"date": "2026-11-02", "min_c": -1, "max_c": 4, "precip_mm": 2.5, "condition": "Rain"},
            {"date": "2026-11-03", "min_c": -3, "max_c": 1, "precip_mm": 0.0, "condition": "Clear"},
        ]
    }


    @pytest.fixture
    def client_with(settings, make_transport):
        def make(handler, cache=False):
            s = Settings(
                base_url=settings.base_url,
                timeout=settings.timeout,
                api_key=settings.api_key,
                cache=CacheSettings(enabled=cache),
            )
            return WeatherClient(s, transport=make_transport(handler))

        return make


    def test_current_parses_fields(client_with):
        client = client_with(lambda r: httpx.Response(200, json=CURRENT))
        current = client.current("Oslo")
        assert current.temperature_c == 3.5
        assert current.condition == "Sleet"


    def test_current_sends_city(client_with):
        seen = []

        def handler(request):
            seen.append(request.url.params["city"])
            return httpx.Response(200, json=CURRENT)

        client_with(handler).current("Bergen")
        assert seen == ["Bergen"]


    def test_forecast_parses_days(client_with):
        client = client_with(lambda r: httpx.Response(200, json=FORECAST))
        days = client.forecast("Oslo", days=2)
        assert [d.day for d in days] == [date(2026, 11, 2), date(2026, 11, 3)]
        assert days[0].precipitation_mm == 2.5


    @pytest.mark.parametrize("days", [0, 15, -1])
    def test_forecast_rejects_bad_days(client_with, days):
        client = client_with(lambda r: httpx.Response(200, json=FORECAST))
        with pytest.raises(ValueError, match="between 1 and 14"):
            client.forecast("Oslo", days=days)


    def test_forecast_accepts_14_days(client_with):
        client = client_with(lambda r: httpx.Response(200, json={"days": []}))
        assert client.forecast("Oslo", days=14) == []


    def test_alerts(client_with):
        alert = {"id": "al_77f3", "region": "NO-03", "severity": "yellow", "headline": "Ice"}
        client = client_with(lambda r: httpx.Response(200, json=[alert]))
        assert client.alerts("NO-03")[0].headline == "Ice"


    def test_submit_observation_posts_json(client_with):
        bodies = []

        def handler(request):
            bodies.append(request.content)
            return httpx.Response(201, json={"id": "obs_1029"})

        assert client_with(handler).submit_observation("SN18700", 2.5) == "obs_1029"
        assert bodies == [b'{"station_id":"SN18700","temp_c":2.5}']


    def test_get_is_cached(client_with):
        calls = []

        def handler(request):
            calls.append(request)
            return httpx.Response(200, json=CURRENT)

        client = client_with(handler, cache=True)
        client.current("Oslo")
        client.current("Oslo")
        assert len(calls) == 1
""")

FILES["docs/configuration.md"] = dedent("""
    # Configuration

    weatherly reads `config/weatherly.toml` (or the path you pass to
    `WeatherClient.from_config`). Every key can be overridden with an environment variable
    named `WEATHERLY_<SECTION>_<KEY>`, for example `WEATHERLY_API_TIMEOUT=30`.

    ## [api]

    | key | default | meaning |
    |---|---|---|
    | `base_url` | `https://api.weatherly.dev/v2` | API root |
    | `timeout` | `10.0` | seconds per request |
    | `api_key_env` | `WEATHERLY_API_KEY` | environment variable holding the key |

    ## [cache]

    | key | default | meaning |
    |---|---|---|
    | `enabled` | `true` | cache GET responses |
    | `ttl_seconds` | `300` | how long a cached response is reused |
    | `max_entries` | `512` | least recently used entries are evicted beyond this |
""")

FILES["CHANGELOG.md"] = dedent("""
    # Changelog

    ## 1.4.2 — 2026-10-02
    - Fix: `forecast()` rejected `days=14` although the API accepts it (#58).

    ## 1.4.1 — 2026-09-11
    - Fix: cache keys ignored parameter order.

    ## 1.4.0 — 2026-08-20
    - Add `alerts(region)`.
    - Add `submit_observation()` (POST /observations).
""")


# -- the session ------------------------------------------------------------------------------


class Session:
    """Accumulates chat messages; tool calls run against a virtual file system."""

    def __init__(self) -> None:
        self.messages: list[dict[str, Any]] = [{"role": "system", "content": SYSTEM}]
        self.files = dict(FILES)
        self.committed = dict(FILES)  # the tree at the last commit (for `git diff`)
        self._calls = 0

    def user(self, text: str) -> None:
        self.messages.append({"role": "user", "content": dedent(text).strip()})

    def say(self, text: str) -> None:
        self.messages.append({"role": "assistant", "content": dedent(text).strip()})

    def act(self, text: str | None, *calls: tuple[str, dict[str, Any], str]) -> None:
        """One assistant turn: optional text, tool calls, then one tool message per call."""
        tool_calls = []
        outputs = []
        for name, args, output in calls:
            self._calls += 1
            digest = hashlib.sha256(f"weatherly-session-{self._calls}".encode()).hexdigest()
            call_id = f"call_{digest[:24]}"
            tool_calls.append(
                {
                    "id": call_id,
                    "type": "function",
                    "function": {"name": name, "arguments": json.dumps(args)},
                }
            )
            outputs.append({"role": "tool", "tool_call_id": call_id, "content": output})
        message: dict[str, Any] = {
            "role": "assistant",
            "content": dedent(text).strip() if text else None,
        }
        message["tool_calls"] = tool_calls
        self.messages.append(message)
        self.messages.extend(outputs)

    # tools ------------------------------------------------------------------------------

    def read(self, path: str, start: int | None = None, end: int | None = None) -> tuple:
        args: dict[str, Any] = {"path": path}
        text = self.files[path]
        if start is not None:
            args["start_line"], args["end_line"] = start, end
            lines = text.splitlines()[start - 1 : end]
            text = "\n".join(f"{n:>4}  {line}" for n, line in enumerate(lines, start))
        return ("read_file", args, text)

    def write(self, path: str, content: str) -> tuple:
        existed = path in self.files
        self.files[path] = content
        verb = "Overwrote" if existed else "Created"
        return (
            "write_file",
            {"path": path, "content": content},
            f"{verb} {path} ({len(content.splitlines())} lines)",
        )

    def edit(self, path: str, old: str, new: str, *, fail: str | None = None) -> tuple:
        args = {"path": path, "old_str": old, "new_str": new}
        if fail:
            return ("edit_file", args, fail)
        text = self.files[path]
        if text.count(old) != 1:
            raise AssertionError(f"generator bug: {old!r} occurs {text.count(old)} times in {path}")
        self.files[path] = text.replace(old, new)
        return (
            "edit_file",
            args,
            f"Edited {path}: replaced 1 occurrence ({len(old.splitlines())} -> {len(new.splitlines())} lines).",
        )

    @staticmethod
    def shell(command: str, output: str, code: int = 0) -> tuple:
        # The pytest header is interpolated unindented into indented literals: take it out
        # while dedenting, so the rest of the output loses its source indentation.
        marker = "@@PYTEST_HEADER@@"
        text = dedent(output.replace(PYTEST_HEADER, marker)).replace(marker, PYTEST_HEADER)
        return (
            "run_shell",
            {"command": command},
            f"{text.rstrip()}\n[exit code: {code}]",
        )

    def commit(self) -> None:
        """Record the working tree as committed (call after a shell call that commits)."""
        self.committed = dict(self.files)

    def diff(self, command: str, base: dict[str, str]) -> tuple:
        """A ``git diff``-style output of the working tree against ``base``."""
        chunks: list[str] = []
        for path in sorted(set(base) | set(self.files)):
            old, new = base.get(path, ""), self.files.get(path, "")
            if old == new:
                continue
            chunks.append(f"diff --git a/{path} b/{path}")
            chunks.extend(
                line.rstrip("\n")
                for line in difflib.unified_diff(
                    old.splitlines(keepends=True),
                    new.splitlines(keepends=True),
                    f"a/{path}" if path in base else "/dev/null",
                    f"b/{path}",
                )
            )
        return self.shell(command, "\n".join(chunks))

    def grep(self, pattern: str, *paths: str) -> tuple:
        """``grep -rn`` over the virtual file system (so results match the edits so far)."""
        regex = re.compile(pattern)
        hits = [
            f"{path}:{number}:{line}"
            for path in sorted(self.files)
            if any(path.startswith(p.rstrip("/")) for p in paths)
            for number, line in enumerate(self.files[path].splitlines(), 1)
            if regex.search(line)
        ]
        command = f"grep -rn '{pattern}' {' '.join(paths)}"
        return self.shell(command, "\n".join(hits), 0 if hits else 1)

    @staticmethod
    def ls(path: str, listing: str) -> tuple:
        return ("list_dir", {"path": path}, dedent(listing).rstrip())


PYTEST_HEADER = """\
============================= test session starts ==============================
platform linux -- Python 3.11.9, pytest-8.2.2, pluggy-1.5.0
rootdir: /home/dev/weatherly
configfile: pyproject.toml
plugins: respx-0.21.1, cov-5.0.0
"""


def pytest_ok(collected: int, lines: list[str], seconds: str) -> str:
    body = "\n".join(lines)
    return (
        f"{PYTEST_HEADER}collected {collected} items\n\n{body}\n\n"
        f"{'=' * 30} {collected} passed in {seconds}s {'=' * 30}"
    )


CACHE_TESTS = ["test_get_miss", "test_put_then_get", "test_expiry", "test_lru_eviction"]


def pytest_verbose(files: dict[str, str]) -> str:
    """``pytest -v`` output listing every test function in the virtual tree."""
    names: list[str] = [f"tests/test_cache.py::{name}" for name in CACHE_TESTS]
    for path in sorted(p for p in files if p.startswith("tests/test_")):
        params: list[str] = []
        for line in files[path].splitlines():
            mark = re.match(r'@pytest.mark.parametrize\("\w+", \[(.*)\]\)', line)
            if mark:
                params = [p.strip() for p in mark.group(1).split(",")]
            test = re.match(r"def (test_\w+)\(", line)
            if test:
                ids = [f"[{p}]" for p in params] or [""]
                names += [f"{path}::{test.group(1)}{i}" for i in ids]
                params = []
    width = 74
    lines = [
        f"{name} PASSED".ljust(width) + f"[{round(100 * n / len(names)):>3}%]"
        for n, name in enumerate(names, 1)
    ]
    return (
        f"{PYTEST_HEADER}collecting ... collected {len(names)} items\n\n"
        + "\n".join(lines)
        + f"\n\n{'=' * 30} {len(names)} passed in 1.08s {'=' * 30}"
    )


def build() -> dict[str, Any]:
    s = Session()
    s.user("""
        Our weatherly client falls over whenever the API has a hiccup — we've been getting
        bursts of 503s from api.weatherly.dev during their deploys (see
        https://github.com/weatherly-dev/weatherly/issues/64). Please add retries with
        exponential backoff to the HTTP transport in weatherly/http.py.

        Requirements:
        - Retry on 502, 503, 504 and on connection errors. Respect Retry-After on 429.
        - The retry settings must be configurable in config/weatherly.toml under a new [retry]
          table (max_attempts, base_delay, max_delay).
        - Don't change the public API of WeatherClient — existing callers must keep working.
        - No new runtime dependencies (no tenacity, no backoff). httpx is all we have.
        - Always run pytest, mypy and ruff before you commit.
        - Never commit to main: work on a branch called feat/retry-backoff.
    """)
    s.act(
        "I'll start by getting an overview of the repository layout.",
        s.ls(
            ".",
            """
            .github/workflows/ci.yml
            CHANGELOG.md
            CONTRIBUTING.md
            README.md
            config/weatherly.toml
            docs/configuration.md
            docs/index.md
            pyproject.toml
            tests/conftest.py
            tests/test_cache.py
            tests/test_client.py
            tests/test_config.py
            tests/test_http.py
            weatherly/__init__.py
            weatherly/cache.py
            weatherly/client.py
            weatherly/config.py
            weatherly/errors.py
            weatherly/http.py
        """,
        ),
    )
    s.act(
        "Let me read the transport, which is where the retries have to go, and the project setup.",
        s.read("weatherly/http.py"),
        s.read("pyproject.toml"),
    )
    s.act(
        "Now the configuration loader and the TOML file, since the retry settings have to live there.",
        s.read("weatherly/config.py"),
        s.read("config/weatherly.toml"),
    )
    s.act(
        "And the client, to see how the transport is used and what the public API looks like.",
        s.read("weatherly/client.py"),
    )
    s.act(
        "The contributing guide may have rules that apply here, and the client tests show how the transport is exercised.",
        s.read("CONTRIBUTING.md"),
        s.read("tests/test_client.py"),
    )
    s.act(
        "Reading the errors module and the existing transport tests and fixtures.",
        s.read("weatherly/errors.py"),
        s.read("tests/conftest.py"),
        s.read("tests/test_http.py"),
    )
    s.act(
        "Before changing anything I'll record a baseline: the full test suite, and the branch state.",
        s.shell(
            "git status --short --branch && git log --oneline -3",
            """
            ## main...origin/main
            9c1d3e7 Release 1.4.2
            5be02fa Fix forecast() days=14 validation (#58)
            e41a7d0 Cache: sort params in keys
        """,
        ),
    )
    s.act(
        None,
        s.shell(
            "pytest -q",
            pytest_ok(
                24,
                [
                    "tests/test_cache.py ....                                                 [ 16%]",
                    "tests/test_client.py ..........                                          [ 58%]",
                    "tests/test_config.py ....                                                [ 75%]",
                    "tests/test_http.py ......                                                [100%]",
                ],
                "0.91",
            ),
        ),
    )
    s.act(
        "Baseline is green (24 passed). Creating the feature branch as requested.",
        s.shell(
            "git checkout -b feat/retry-backoff", "Switched to a new branch 'feat/retry-backoff'"
        ),
    )
    s.say("""
        Plan:
        1. First try the cheapest option: httpx's built-in transport retries
           (`httpx.HTTPTransport(retries=N)`), which needs no new code for the backoff itself.
        2. Add a [retry] table to the config and a `RetrySettings` dataclass.
        3. Add tests for 503-then-success, exhausted retries, and Retry-After on 429.
    """)
    s.act(
        "Checking what httpx's transport retries actually cover before relying on them.",
        s.shell(
            'python -c "import httpx, inspect; print(httpx.__version__); print(inspect.signature(httpx.HTTPTransport.__init__))"',
            """
            0.27.2
            (self, verify: 'VerifyTypes' = True, cert: 'CertTypes | None' = None, http1: 'bool' = True, http2: 'bool' = False, limits: 'Limits' = Limits(max_connections=100, max_keepalive_connections=20, keepalive_expiry=5.0), trust_env: 'bool' = True, proxy: 'ProxyTypes | None' = None, uds: 'str | None' = None, local_address: 'str | None' = None, retries: 'int' = 0, socket_options: 'typing.Iterable[SocketOption] | None' = None) -> 'None'
        """,
        ),
    )
    s.act(
        "I'll wire `retries=3` into the transport the client builds and write a first test for the 503 case.",
        s.edit(
            "weatherly/http.py",
            "        self._client = client or httpx.Client(\n            base_url=settings.base_url or DEFAULT_BASE_URL,",
            "        self._client = client or httpx.Client(\n            transport=httpx.HTTPTransport(retries=3),\n            base_url=settings.base_url or DEFAULT_BASE_URL,",
        ),
        s.write(
            "tests/test_retry.py",
            dedent("""
            from __future__ import annotations

            import httpx

            from weatherly.http import HttpTransport


            def test_retries_503_then_succeeds(settings):
                calls = []

                def handler(request):
                    calls.append(request)
                    if len(calls) < 3:
                        return httpx.Response(503, text="Service Unavailable")
                    return httpx.Response(200, json={"city": "Oslo"})

                client = httpx.Client(
                    base_url=settings.base_url,
                    transport=httpx.MockTransport(handler),
                )
                transport = HttpTransport(settings, client=client)
                resp = transport.request("GET", "/current", params={"city": "Oslo"})
                assert resp.data == {"city": "Oslo"}
                assert len(calls) == 3
        """),
        ),
    )
    s.act(
        None,
        s.shell(
            "pytest -q tests/test_retry.py",
            f"""
            {PYTEST_HEADER}collected 1 item

            tests/test_retry.py F                                                    [100%]

            =================================== FAILURES ===================================
            ________________________ test_retries_503_then_succeeds ________________________

            settings = Settings(base_url='https://api.weatherly.dev/v2', timeout=5.0, api_key='test-key', cache=CacheSettings(enabled=False, ttl_seconds=300, max_entries=512))

                def test_retries_503_then_succeeds(settings):
                    calls = []

                    def handler(request):
                        calls.append(request)
                        if len(calls) < 3:
                            return httpx.Response(503, text="Service Unavailable")
                        return httpx.Response(200, json={{"city": "Oslo"}})

                    client = httpx.Client(
                        base_url=settings.base_url,
                        transport=httpx.MockTransport(handler),
                    )
                    transport = HttpTransport(settings, client=client)
            >       resp = transport.request("GET", "/current", params={{"city": "Oslo"}})

            tests/test_retry.py:21:
            _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
            weatherly/http.py:57: in request
                return self._handle(raw)
            _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

            self = <weatherly.http.HttpTransport object at 0x7f3c2a9e4d10>
            raw = <Response [503 Service Unavailable]>

                def _handle(self, raw: httpx.Response) -> Response:
                    if raw.status_code == 429:
                        raise RateLimited(retry_after=_retry_after(raw))
                    if raw.status_code >= 400:
            >           raise ApiError(
                            f"{{raw.status_code}} from {{raw.request.url}}: {{raw.text[:200]}}",
                            status=raw.status_code,
                        )
            E           weatherly.errors.ApiError: 503 from https://api.weatherly.dev/v2/current?city=Oslo: Service Unavailable

            weatherly/http.py:63: ApiError
            =========================== short test summary info ============================
            FAILED tests/test_retry.py::test_retries_503_then_succeeds - weatherly.errors.ApiError: 503 from https://api.weatherly.dev/v2/current?city=Oslo: Service Unavailable
            ============================== 1 failed in 0.19s ===============================
        """,
            1,
        ),
    )
    s.act(
        "The test injects its own client, so the transport change is bypassed there — but more importantly I need to know whether httpx's retries would handle a 503 at all. Checking the httpx docs.",
        s.shell(
            "curl -s https://www.python-httpx.org/advanced/transports/ | grep -i -A3 'retries'",
            """
            <p>The <code>retries</code> option on <code>httpx.HTTPTransport</code> allows you to
            retry on connection failures: <code>httpx.ConnectError</code> and
            <code>httpx.ConnectTimeout</code> only. It does not retry on responses with error
            status codes such as 503, and it does not apply any backoff between attempts.</p>
        """,
        ),
    )
    s.say("""
        That settles it: I'm abandoning the `httpx.HTTPTransport(retries=...)` approach. It only
        retries connection failures (ConnectError/ConnectTimeout), never 502/503/504 responses,
        has no backoff, and ignores Retry-After — so it cannot meet the requirements. I'll revert
        that line and write a small `RetryPolicy` of our own in a new module
        `weatherly/retry.py`, with exponential backoff plus full jitter, and call it from
        `HttpTransport.request`.
    """)
    s.act(
        "Reverting the transport change.",
        s.edit(
            "weatherly/http.py",
            "        self._client = client or httpx.Client(\n            transport=httpx.HTTPTransport(retries=3),\n            base_url=settings.base_url or DEFAULT_BASE_URL,",
            "        self._client = client or httpx.Client(\n            base_url=settings.base_url or DEFAULT_BASE_URL,",
        ),
    )
    s.act(
        "Adding the [retry] table to the config file with conservative defaults.",
        s.edit(
            "config/weatherly.toml",
            "[cache]\n",
            "[retry]\nmax_attempts = 3\nbase_delay = 0.5\nmax_delay = 60.0\nretry_statuses = [502, 503, 504]\n\n[cache]\n",
        ),
    )
    s.act(
        "Now the settings dataclass and the loader.",
        s.edit(
            "weatherly/config.py",
            "@dataclass(frozen=True)\nclass Settings:",
            "@dataclass(frozen=True)\nclass RetrySettings:\n    max_attempts: int = 3\n    base_delay: float = 0.5\n    max_delay: float = 60.0\n    retry_statuses: tuple[int, ...] = (502, 503, 504)\n\n\n@dataclass(frozen=True)\nclass Settings:",
        ),
        s.edit(
            "weatherly/config.py",
            "    cache: CacheSettings = field(default_factory=CacheSettings)\n",
            "    cache: CacheSettings = field(default_factory=CacheSettings)\n    retry: RetrySettings = field(default_factory=RetrySettings)\n",
        ),
    )
    s.act(
        "Quick check that the loader still works with the new table before going further.",
        s.shell(
            "WEATHERLY_API_KEY=dummy python -c \"from weatherly.config import load_settings; print(load_settings('config/weatherly.toml'))\"",
            """
            Settings(base_url='https://api.weatherly.dev/v2', timeout=10.0, api_key='dummy', cache=CacheSettings(enabled=True, ttl_seconds=300, max_entries=512), retry=RetrySettings(max_attempts=3, base_delay=0.5, max_delay=60.0, retry_statuses=(502, 503, 504)))
        """,
        ),
    )
    s.say("""
        The loader runs but it ignores the [retry] table: `load_settings` never reads it, so the
        defaults from the dataclass are used. I'll parse the table explicitly.
    """)
    s.act(
        None,
        s.edit(
            "weatherly/config.py",
            '        cache=CacheSettings(**_section(data, "cache")),\n    )',
            '        cache=CacheSettings(**_section(data, "cache")),\n        retry=RetrySettings(**_section(data, "retry")),\n    )',
        ),
    )
    s.act(
        None,
        s.shell(
            "WEATHERLY_API_KEY=dummy python -c \"from weatherly.config import load_settings; print(load_settings('config/weatherly.toml').retry)\"",
            """
            Traceback (most recent call last):
              File "<string>", line 1, in <module>
              File "/home/dev/weatherly/weatherly/config.py", line 44, in load_settings
                retry=RetrySettings(**_section(data, "retry")),
                      ^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^^
              File "<string>", line 6, in __init__
            TypeError: RetrySettings.__init__() got an unexpected keyword argument 'retry_statuses'
        """,
            1,
        ),
    )
    s.act(
        "I added `retry_statuses` to the dataclass in my head but the edit above defines it — let me look at the actual file to see why the keyword is rejected.",
        s.read("weatherly/config.py", 1, 40),
    )
    s.say("""
        The dataclass does have `retry_statuses`, so the TypeError comes from a stale import: the
        package is installed non-editable in this virtualenv, so python imported the old copy
        from site-packages. Reinstalling in editable mode.
    """)
    s.act(
        None,
        s.shell(
            "pip install -q -e '.[dev]' && WEATHERLY_API_KEY=dummy python -c \"from weatherly.config import load_settings; print(load_settings('config/weatherly.toml').retry)\"",
            """
            RetrySettings(max_attempts=3, base_delay=0.5, max_delay=60.0, retry_statuses=[502, 503, 504])
        """,
        ),
    )
    s.say("""
        Works now. TOML gives `retry_statuses` as a list, while the dataclass declares a tuple;
        I'll convert it in the loader so the settings stay hashable and immutable.
    """)
    s.act(
        None,
        s.edit(
            "weatherly/config.py",
            '        retry=RetrySettings(**_section(data, "retry")),',
            '        retry=_retry_settings(_section(data, "retry")),',
        ),
        s.edit(
            "weatherly/config.py",
            "def _section(data: dict[str, Any], name: str) -> dict[str, Any]:",
            'def _retry_settings(table: dict[str, Any]) -> RetrySettings:\n    if "retry_statuses" in table:\n        table = {**table, "retry_statuses": tuple(int(s) for s in table["retry_statuses"])}\n    if int(table.get("max_attempts", 1)) < 1:\n        raise ConfigError("[retry] max_attempts must be at least 1")\n    return RetrySettings(**table)\n\n\ndef _section(data: dict[str, Any], name: str) -> dict[str, Any]:',
        ),
    )
    retry_v1 = dedent('''
        """Retrying idempotent requests with exponential backoff and full jitter."""

        from __future__ import annotations

        import random
        import time
        from collections.abc import Callable
        from dataclasses import dataclass, field

        from weatherly.config import RetrySettings

        Sleep = Callable[[float], None]


        @dataclass
        class RetryPolicy:
            """Decides whether and how long to wait before the next attempt.

            Delay for attempt n (1-based) is uniform in [0, min(max_delay, base_delay * 2**(n-1))]
            ("full jitter", https://aws.amazon.com/blogs/architecture/exponential-backoff-and-jitter/).
            A Retry-After value from the server wins over the computed delay.
            """

            settings: RetrySettings
            sleep: Sleep | None = None  # None: time.sleep, looked up at call time
            rng: random.Random = field(default_factory=random.Random)

            def should_retry(self, attempt: int, status: int | None) -> bool:
                if attempt >= self.settings.max_attempts:
                    return False
                return status is None or status == 429 or status in self.settings.retry_statuses

            def delay(self, attempt: int, retry_after: float | None = None) -> float:
                if retry_after is not None:
                    return min(retry_after, self.settings.max_delay)
                ceiling = min(self.settings.max_delay, self.settings.base_delay * 2 ** (attempt - 1))
                return self.rng.uniform(0, ceiling)

            def wait(self, attempt: int, retry_after: float | None = None) -> None:
                (self.sleep or time.sleep)(self.delay(attempt, retry_after))
    ''')
    s.act(
        "Writing the retry policy module.",
        s.write("weatherly/retry.py", retry_v1),
    )
    s.act(
        "Now wiring it into `HttpTransport.request`: loop over attempts, retry on retryable statuses, connection errors and 429.",
        s.edit(
            "weatherly/http.py",
            "from weatherly.errors import ApiError, RateLimited\n",
            "from weatherly.errors import ApiError, RateLimited\nfrom weatherly.retry import RetryPolicy\n",
        ),
        s.edit(
            "weatherly/http.py",
            "    def __init__(self, settings: Settings, client: httpx.Client | None = None) -> None:\n        self._settings = settings\n",
            "    def __init__(\n        self,\n        settings: Settings,\n        client: httpx.Client | None = None,\n        retry: RetryPolicy | None = None,\n    ) -> None:\n        self._settings = settings\n        self._retry = retry or RetryPolicy(settings.retry)\n",
        ),
        s.edit(
            "weatherly/http.py",
            '        log.debug("%s %s params=%s", method, path, params)\n        try:\n            raw = self._client.request(method, path, params=params, json=json)\n        except httpx.TransportError as exc:\n            raise ApiError(f"transport error calling {path}: {exc}") from exc\n        return self._handle(raw)\n',
            '        attempt = 1\n        while True:\n            log.debug("%s %s params=%s attempt=%d", method, path, params, attempt)\n            try:\n                raw = self._client.request(method, path, params=params, json=json)\n            except httpx.TransportError as exc:\n                if not self._retry.should_retry(attempt, None):\n                    raise ApiError(f"transport error calling {path}: {exc}") from exc\n                self._retry.wait(attempt)\n                attempt += 1\n                continue\n            if self._retry.should_retry(attempt + 1, raw.status_code):\n                retry_after = _retry_after(raw) if raw.status_code == 429 else None\n                self._retry.wait(attempt, retry_after)\n                attempt += 1\n                continue\n            return self._handle(raw)\n',
        ),
    )
    s.act(
        "Rewriting the retry tests to inject a fake sleep (so the suite doesn't actually wait) and to cover the cases from the requirements.",
        s.write(
            "tests/test_retry.py",
            dedent("""
            from __future__ import annotations

            import random

            import httpx
            import pytest

            from weatherly.config import RetrySettings
            from weatherly.errors import ApiError
            from weatherly.http import HttpTransport
            from weatherly.retry import RetryPolicy


            @pytest.fixture
            def sleeps():
                return []


            @pytest.fixture
            def transport_with(settings, sleeps):
                def make(handler, **retry):
                    policy = RetryPolicy(
                        RetrySettings(**retry), sleep=sleeps.append, rng=random.Random(7)
                    )
                    client = httpx.Client(
                        base_url=settings.base_url, transport=httpx.MockTransport(handler)
                    )
                    return HttpTransport(settings, client=client, retry=policy)

                return make


            def flaky(statuses):
                calls = []

                def handler(request):
                    calls.append(request)
                    status = statuses[min(len(calls), len(statuses)) - 1]
                    if status == 200:
                        return httpx.Response(200, json={"ok": True})
                    return httpx.Response(status, text="nope")

                return handler, calls


            def test_retries_503_then_succeeds(transport_with, sleeps):
                handler, calls = flaky([503, 200])
                resp = transport_with(handler).request("GET", "/current")
                assert resp.data == {"ok": True}
                assert len(calls) == 2
                assert len(sleeps) == 1


            def test_gives_up_after_max_attempts(transport_with):
                handler, calls = flaky([503])
                with pytest.raises(ApiError) as info:
                    transport_with(handler, max_attempts=4).request("GET", "/current")
                assert info.value.status == 503
                assert len(calls) == 4


            def test_does_not_retry_404(transport_with):
                handler, calls = flaky([404])
                with pytest.raises(ApiError):
                    transport_with(handler).request("GET", "/current")
                assert len(calls) == 1


            def test_429_waits_retry_after(transport_with, sleeps):
                calls = []

                def handler(request):
                    calls.append(request)
                    if len(calls) == 1:
                        return httpx.Response(429, headers={"Retry-After": "7"})
                    return httpx.Response(200, json={})

                transport_with(handler).request("GET", "/current")
                assert sleeps == [7.0]


            def test_backoff_is_capped(transport_with, sleeps):
                handler, _ = flaky([503])
                with pytest.raises(ApiError):
                    transport_with(handler, max_attempts=10, base_delay=1.0, max_delay=4.0).request(
                        "GET", "/current"
                    )
                assert max(sleeps) <= 4.0
        """),
        ),
    )
    s.act(
        None,
        s.shell(
            "pytest -q",
            f"""
            {PYTEST_HEADER}collected 29 items

            tests/test_cache.py ....                                                 [ 13%]
            tests/test_client.py ..........                                          [ 48%]
            tests/test_config.py ....                                                [ 62%]
            tests/test_http.py ...F..                                                [ 82%]
            tests/test_retry.py .F...                                                [100%]

            =================================== FAILURES ===================================
            _______________________ test_transport_error_is_wrapped ________________________

            make_transport = <function make_transport.<locals>.make at 0x7f1b9c0e8ae0>

                def test_transport_error_is_wrapped(make_transport):
                    def handler(request):
                        raise httpx.ConnectError("connection refused", request=request)

                    transport = make_transport(handler)
                    with pytest.raises(ApiError, match="transport error"):
            >           transport.request("GET", "/current")

            tests/test_http.py:38:
            _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _
            weatherly/http.py:66: in request
                self._retry.wait(attempt)
            weatherly/retry.py:41: in wait
                (self.sleep or time.sleep)(self.delay(attempt, retry_after))
            _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _ _

            secs = 0.3716

                def _no_sleep(secs: float) -> None:
            >       pytest.fail(f"test slept for real ({{secs:.2f}}s): inject a fake sleep")
            E       Failed: test slept for real (0.37s): inject a fake sleep

            tests/conftest.py:16: Failed
            ________________________ test_gives_up_after_max_attempts ________________________

            transport_with = <function transport_with.<locals>.make at 0x7f1b9c0e9c60>

                def test_gives_up_after_max_attempts(transport_with):
                    handler, calls = flaky([503])
                    with pytest.raises(ApiError) as info:
                        transport_with(handler, max_attempts=4).request("GET", "/current")
                    assert info.value.status == 503
            >       assert len(calls) == 4
            E       assert 3 == 4
            E        +  where 3 = len([<Request('GET', 'https://api.weatherly.dev/v2/current')>, <Request('GET', 'https://api.weatherly.dev/v2/current')>, <Request('GET', 'https://api.weatherly.dev/v2/current')>])

            tests/test_retry.py:58: AssertionError
            =========================== short test summary info ============================
            FAILED tests/test_http.py::test_transport_error_is_wrapped - Failed: test slept for real (0.37s): inject a fake sleep
            FAILED tests/test_retry.py::test_gives_up_after_max_attempts - assert 3 == 4
            ========================= 2 failed, 27 passed in 1.38s =========================
        """,
            1,
        ),
    )
    s.say("""
        Two failures:
        1. `test_transport_error_is_wrapped`: the pre-existing test now goes through the retry
           loop, and the autouse `no_real_sleep` guard in tests/conftest.py refuses the real
           `time.sleep`. The old transport tests use the `settings` fixture, whose default
           `RetrySettings` allows 3 attempts.
        2. `test_gives_up_after_max_attempts`: 3 requests instead of 4.
    """)
    s.act(
        "Checking where sleeping happens, to be sure nothing else calls time.sleep.",
        s.grep("sleep", "tests/", "weatherly/"),
    )
    s.act(
        "Only the policy sleeps. For the 3-vs-4 mismatch, I'll check the policy on its own before touching the transport.",
        s.shell(
            'python -c "from weatherly.retry import RetryPolicy; from weatherly.config import RetrySettings as R; p=RetryPolicy(R(max_attempts=4)); print([p.should_retry(a, 503) for a in range(1,6)])"',
            """
            [True, True, True, False, False]
        """,
        ),
    )
    s.act(
        "The policy is right (attempts 1-3 may retry, the 4th is the last), so the bug is at the call site. Reading the loop.",
        s.read("weatherly/http.py", 48, 76),
    )
    s.say("""
        Found it: the status branch calls `should_retry(attempt + 1, raw.status_code)` — asking
        about the *next* attempt — while the transport-error branch passes `attempt`. Status
        retries therefore stop one attempt early (3 requests for max_attempts=4).

        Decision: rather than patch the `+ 1`, rewrite the loop as a `for` over
        `range(1, max_attempts + 1)` with a single place that decides to retry, and reduce the
        policy to `retryable(status)` + `wait()`, so the attempt bound lives in exactly one place.
        For the old transport tests, the `settings` fixture gets `RetrySettings(max_attempts=1)`
        so they keep their single-attempt behaviour.
    """)
    s.act(
        None,
        s.edit(
            "weatherly/http.py",
            '        attempt = 1\n        while True:\n            log.debug("%s %s params=%s attempt=%d", method, path, params, attempt)\n            try:\n                raw = self._client.request(method, path, params=params, json=json)\n            except httpx.TransportError as exc:\n                if not self._retry.should_retry(attempt, None):\n                    raise ApiError(f"transport error calling {path}: {exc}") from exc\n                self._retry.wait(attempt)\n                attempt += 1\n                continue\n            if self._retry.should_retry(attempt + 1, raw.status_code):\n                retry_after = _retry_after(raw) if raw.status_code == 429 else None\n                self._retry.wait(attempt, retry_after)\n                attempt += 1\n                continue\n            return self._handle(raw)\n',
            '        attempts = self._retry.settings.max_attempts\n        for attempt in range(1, attempts + 1):\n            log.debug("%s %s params=%s attempt=%d/%d", method, path, params, attempt, attempts)\n            try:\n                raw = self._client.request(method, path, params=params, json=json)\n            except httpx.TransportError as exc:\n                if attempt == attempts:\n                    raise ApiError(f"transport error calling {path}: {exc}") from exc\n                self._retry.wait(attempt)\n                continue\n            retry_after = _retry_after(raw) if raw.status_code == 429 else None\n            if attempt < attempts and self._retry.retryable(raw.status_code):\n                self._retry.wait(attempt, retry_after)\n                continue\n            return self._handle(raw)\n',
        ),
        s.edit(
            "weatherly/retry.py",
            "    def should_retry(self, attempt: int, status: int | None) -> bool:\n        if attempt >= self.settings.max_attempts:\n            return False\n        return status is None or status == 429 or status in self.settings.retry_statuses\n",
            "    def retryable(self, status: int) -> bool:\n        return status == 429 or status in self.settings.retry_statuses\n",
        ),
        s.edit(
            "tests/conftest.py",
            "        cache=CacheSettings(enabled=False),\n    )",
            "        cache=CacheSettings(enabled=False),\n        retry=RetrySettings(max_attempts=1),\n    )",
        ),
        s.edit(
            "tests/conftest.py",
            "from weatherly.config import CacheSettings, Settings\n",
            "from weatherly.config import CacheSettings, RetrySettings, Settings\n",
        ),
    )
    s.act(
        None,
        s.shell(
            "pytest -q",
            pytest_ok(
                29,
                [
                    "tests/test_cache.py ....                                                 [ 13%]",
                    "tests/test_client.py ..........                                          [ 48%]",
                    "tests/test_config.py ....                                                [ 62%]",
                    "tests/test_http.py ......                                                [ 82%]",
                    "tests/test_retry.py .....                                                [100%]",
                ],
                "0.97",
            ),
        ),
    )
    s.act(
        "All 29 pass. Now mypy and ruff, as required before committing.",
        s.shell(
            "mypy weatherly",
            """
            weatherly/http.py:48: error: Missing return statement  [return]
            Found 1 error in 1 file (checked 8 source files)
        """,
            1,
        ),
    )
    s.act(
        "mypy can't see that the last iteration always returns or raises. Making that explicit.",
        s.edit(
            "weatherly/http.py",
            "                self._retry.wait(attempt, retry_after)\n                continue\n            return self._handle(raw)\n",
            '                self._retry.wait(attempt, retry_after)\n                continue\n            return self._handle(raw)\n        raise AssertionError("unreachable: the last attempt returns or raises")\n',
        ),
    )
    s.act(
        None,
        s.shell(
            "mypy weatherly && ruff check . && ruff format --check .",
            """
            Success: no issues found in 8 source files
            All checks passed!
            Would reformat: weatherly/http.py
            1 file would be reformatted, 14 files already formatted
        """,
            1,
        ),
    )
    s.act(
        None,
        s.shell(
            "ruff format . && git diff --stat",
            """
            1 file reformatted, 14 files left unchanged
             config/weatherly.toml |  6 ++++++
             tests/conftest.py     |  3 ++-
             tests/test_retry.py   | 83 +++++++++++++++++++++++++++++++++++++++++++++++++++
             weatherly/config.py   | 22 +++++++++++++++++++-
             weatherly/http.py     | 28 ++++++++++++++++------
             weatherly/retry.py    | 42 +++++++++++++++++++++++++++++
             6 files changed, 175 insertions(+), 9 deletions(-)
        """,
        ),
    )
    s.act(
        "Reviewing the complete diff before committing.",
        s.diff("git diff", s.committed),
    )
    s.act(
        "Everything is green. Committing on the feature branch.",
        s.shell(
            "pytest -q && git add weatherly/retry.py weatherly/http.py weatherly/config.py config/weatherly.toml tests/test_retry.py tests/conftest.py && git commit -m 'Add RetryPolicy with exponential backoff and jitter (#64)'",
            f"""
            {PYTEST_HEADER}collected 29 items

            tests/test_cache.py ....                                                 [ 13%]
            tests/test_client.py ..........                                          [ 48%]
            tests/test_config.py ....                                                [ 62%]
            tests/test_http.py ......                                                [ 82%]
            tests/test_retry.py .....                                                [100%]

            ============================== 29 passed in 0.95s ==============================
            [feat/retry-backoff 4e8c2a1] Add RetryPolicy with exponential backoff and jitter (#64)
             6 files changed, 175 insertions(+), 9 deletions(-)
             create mode 100644 weatherly/retry.py
             create mode 100644 tests/test_retry.py
        """,
        ),
    )
    s.commit()
    s.say("""
        Committed as 4e8c2a1 on feat/retry-backoff:
        - `weatherly/retry.py`: `RetryPolicy` (exponential backoff, full jitter, Retry-After wins).
        - `weatherly/http.py`: `HttpTransport.request` retries 429/502/503/504 and connection
          errors up to `max_attempts`; new optional `retry=` argument (keyword, backwards compatible).
        - `weatherly/config.py` + `config/weatherly.toml`: new `[retry]` table
          (max_attempts = 3, base_delay = 0.5, max_delay = 60.0, retry_statuses).
        - Tests: 5 new retry tests; 29 passed; mypy and ruff clean.
    """)
    s.user("""
        Nice. Two changes: bump max_attempts to 5 — 3 isn't enough during their deploys — and
        cap the backoff at 30 seconds instead of 60, a minute is too long for our CLI users.
    """)
    s.act(
        "Updating both defaults, in the TOML file and in the dataclass so they agree.",
        s.edit(
            "config/weatherly.toml",
            "max_attempts = 3\nbase_delay = 0.5\nmax_delay = 60.0\n",
            "max_attempts = 5\nbase_delay = 0.5\nmax_delay = 30.0\n",
        ),
        s.edit(
            "weatherly/config.py",
            "    max_attempts: int = 3\n    base_delay: float = 0.5\n    max_delay: float = 60.0\n",
            "    max_attempts: int = 5\n    base_delay: float = 0.5\n    max_delay: float = 30.0\n",
        ),
    )
    s.act(
        None,
        s.shell(
            "pytest -q",
            pytest_ok(
                29,
                [
                    "tests/test_cache.py ....                                                 [ 13%]",
                    "tests/test_client.py ..........                                          [ 48%]",
                    "tests/test_config.py ....                                                [ 62%]",
                    "tests/test_http.py ......                                                [ 82%]",
                    "tests/test_retry.py .....                                                [100%]",
                ],
                "0.93",
            ),
        ),
    )
    s.act(
        "Adding config tests for the [retry] table. Reading the existing config tests first.",
        s.read("tests/test_config.py"),
    )
    s.act(
        None,
        s.edit(
            "tests/test_config.py",
            "def test_bad_table(tmp_path, monkeypatch):",
            'def test_retry_table(tmp_path, monkeypatch):\n    monkeypatch.setenv("WEATHERLY_API_KEY", "k")\n    text = "[retry]\\nmax_attempts = 2\\nretry_statuses = [503]\\n"\n    retry = load_settings(write(tmp_path, text)).retry\n    assert retry.max_attempts == 2\n    assert retry.retry_statuses == (503,)\n    assert retry.max_delay == 30.0\n\n\ndef test_retry_env_override(tmp_path, monkeypatch):\n    monkeypatch.setenv("WEATHERLY_API_KEY", "k")\n    monkeypatch.setenv("WEATHERLY_RETRY_MAX_ATTEMPTS", "7")\n    text = "[retry]\\nmax_attempts = 2\\n"\n    assert load_settings(write(tmp_path, text)).retry.max_attempts == 7\n\n\ndef test_bad_table(tmp_path, monkeypatch):',
        ),
    )
    s.act(
        None,
        s.shell(
            "pytest -q tests/test_config.py",
            f"""
            {PYTEST_HEADER}collected 6 items

            tests/test_config.py ....F.                                              [100%]

            =================================== FAILURES ===================================
            ___________________________ test_retry_env_override ____________________________

            tmp_path = PosixPath('/tmp/pytest-of-dev/pytest-112/test_retry_env_override0')
            monkeypatch = <_pytest.monkeypatch.MonkeyPatch object at 0x7f0a3c2d5e50>

                def test_retry_env_override(tmp_path, monkeypatch):
                    monkeypatch.setenv("WEATHERLY_API_KEY", "k")
                    monkeypatch.setenv("WEATHERLY_RETRY_MAX_ATTEMPTS", "7")
                    text = "[retry]\\nmax_attempts = 2\\n"
            >       assert load_settings(write(tmp_path, text)).retry.max_attempts == 7
            E       AssertionError: assert 2 == 7
            E        +  where 2 = RetrySettings(max_attempts=2, base_delay=0.5, max_delay=30.0, retry_statuses=(502, 503, 504)).max_attempts

            tests/test_config.py:46: AssertionError
            =========================== short test summary info ============================
            FAILED tests/test_config.py::test_retry_env_override - AssertionError: assert 2 == 7
            ========================= 1 failed, 5 passed in 0.12s ==========================
        """,
            1,
        ),
    )
    s.act(
        "Checking what the configuration docs promise about environment overrides.",
        s.read("docs/configuration.md"),
    )
    s.say("""
        docs/configuration.md promises that every key can be overridden with
        WEATHERLY_<SECTION>_<KEY>, but `_retry_settings` never calls `_override`, so the [retry]
        keys ignore the environment. Fixing it in the loader (with type conversion, since
        environment values are strings) rather than weakening the test.
    """)
    s.act(
        None,
        s.edit(
            "weatherly/config.py",
            "def _retry_settings(table: dict[str, Any]) -> RetrySettings:\n",
            'def _retry_settings(table: dict[str, Any]) -> RetrySettings:\n    table = dict(table)\n    for name, kind in (("max_attempts", int), ("base_delay", float), ("max_delay", float)):\n        value = _override("retry", name, table.get(name))\n        if value is not None:\n            table[name] = kind(value)\n',
        ),
    )
    s.act(
        None,
        s.shell(
            "pytest -q tests/test_config.py",
            f"""
            {PYTEST_HEADER}collected 6 items

            tests/test_config.py ......                                              [100%]

            ============================== 6 passed in 0.08s ===============================
        """,
        ),
    )
    s.user("""
        Wait — one correction before you go further: don't retry POST requests. submit_observation
        is not idempotent and a retried POST creates duplicate observations on their side. Only
        retry GET and HEAD. Also please reference issue #64 in the PR.
    """)
    s.act(
        "Good catch. I'll restrict retries to idempotent methods in the transport and add a test that a POST is sent exactly once. First, which client methods use which HTTP method.",
        s.read("weatherly/client.py"),
        s.read("weatherly/http.py", 44, 80),
    )
    s.act(
        None,
        s.edit(
            "weatherly/http.py",
            "        attempts = self._retry.settings.max_attempts\n",
            "        # Only idempotent methods are retried: a retried POST can duplicate side effects.\n        attempts = self._retry.settings.max_attempts if method.upper() in IDEMPOTENT else 1\n",
        ),
        s.edit(
            "weatherly/http.py",
            'USER_AGENT = "weatherly-python/1.4.2"\n',
            'USER_AGENT = "weatherly-python/1.4.2"\nIDEMPOTENT = frozenset({"GET", "HEAD"})\n',
        ),
        s.edit(
            "tests/test_retry.py",
            "def test_backoff_is_capped(transport_with, sleeps):",
            'def test_post_is_never_retried(transport_with, sleeps):\n    handler, calls = flaky([503, 200])\n    with pytest.raises(ApiError):\n        transport_with(handler).request("POST", "/observations", json={"temp_c": 3})\n    assert len(calls) == 1\n    assert sleeps == []\n\n\ndef test_backoff_is_capped(transport_with, sleeps):',
        ),
    )
    s.act(
        None,
        s.shell(
            "pytest -q && mypy weatherly && ruff check . && ruff format --check .",
            f"""
            {PYTEST_HEADER}collected 32 items

            tests/test_cache.py ....                                                 [ 12%]
            tests/test_client.py ..........                                          [ 43%]
            tests/test_config.py ......                                              [ 62%]
            tests/test_http.py ......                                                [ 81%]
            tests/test_retry.py ......                                               [100%]

            ============================== 32 passed in 1.02s ==============================
            Success: no issues found in 8 source files
            All checks passed!
            16 files already formatted
        """,
        ),
    )
    s.act(
        "All green (32 passed). Committing the correction and the new defaults.",
        s.shell(
            "git add -u tests/test_config.py && git commit -qam 'Retry only GET/HEAD; max_attempts 5, max_delay 30s (#64)' && git log --oneline -3",
            """
            b71d09f Retry only GET/HEAD; max_attempts 5, max_delay 30s (#64)
            4e8c2a1 Add RetryPolicy with exponential backoff and jitter (#64)
            9c1d3e7 Release 1.4.2
        """,
        ),
    )
    s.commit()
    s.act(
        "Before opening the PR, reviewing the whole branch against main as a reviewer would see it.",
        s.diff("git diff main...HEAD", FILES),
    )
    s.act(
        "Pushing the branch and opening the pull request that references issue #64.",
        s.shell(
            "git push -u origin feat/retry-backoff 2>&1 | tail -4 && gh pr create --base main --head feat/retry-backoff --title 'Retry idempotent requests with exponential backoff' --body 'Closes #64. Retries GET/HEAD on 429/502/503/504 and connection errors; configurable under [retry].'",
            """
            remote: Create a pull request for 'feat/retry-backoff' on GitHub by visiting:
            remote:      https://github.com/weatherly-dev/weatherly/pull/new/feat/retry-backoff
            To github.com:weatherly-dev/weatherly.git
             * [new branch]      feat/retry-backoff -> feat/retry-backoff
            https://github.com/weatherly-dev/weatherly/pull/87
        """,
        ),
    )
    s.act(
        "Checking CI on the pull request.",
        s.shell(
            "gh pr checks 87",
            """
            Some checks were not successful
            0 cancelled, 1 failing, 2 successful, 0 skipped, and 0 pending checks

            X  test (3.10)   https://github.com/weatherly-dev/weatherly/actions/runs/11873402211/job/33087215540   1m12s
            ✓  test (3.11)   https://github.com/weatherly-dev/weatherly/actions/runs/11873402211/job/33087215611   58s
            ✓  lint          https://github.com/weatherly-dev/weatherly/actions/runs/11873402211/job/33087215702   21s
        """,
        ),
    )
    s.act(
        None,
        s.shell(
            "gh run view 11873402211 --log-failed | tail -25",
            """
            test (3.10)  Run tests  ==================================== ERRORS ====================================
            test (3.10)  Run tests  ___________________ ERROR collecting tests/test_config.py ____________________
            test (3.10)  Run tests  ImportError while importing test module '/home/runner/work/weatherly/weatherly/tests/test_config.py'.
            test (3.10)  Run tests  Hint: make sure your test modules/packages have valid Python names.
            test (3.10)  Run tests  Traceback:
            test (3.10)  Run tests  /opt/hostedtoolcache/Python/3.10.14/x64/lib/python3.10/importlib/__init__.py:126: in import_module
            test (3.10)  Run tests      return _bootstrap._gcd_import(name[level:], package, level)
            test (3.10)  Run tests  tests/test_config.py:5: in <module>
            test (3.10)  Run tests      from weatherly.config import load_settings
            test (3.10)  Run tests  weatherly/config.py:6: in <module>
            test (3.10)  Run tests      import tomllib
            test (3.10)  Run tests  E   ModuleNotFoundError: No module named 'tomllib'
            test (3.10)  Run tests  =========================== short test summary info ============================
            test (3.10)  Run tests  ERROR tests/test_config.py
            test (3.10)  Run tests  !!!!!!!!!!!!!!!!!!!! Interrupted: 1 error during collection !!!!!!!!!!!!!!!!!!!!
            test (3.10)  Run tests  ============================== 1 error in 0.31s ===============================
            test (3.10)  Run tests  ##[error]Process completed with exit code 2.
        """,
            0,
        ),
    )
    s.say("""
        The 3.10 job fails on `import tomllib` (new in 3.11). That import predates this branch —
        main's CI only ran 3.11 until the matrix was widened last week in 5be02fa's parent — but
        the project declares `requires-python = ">=3.10"`, so it has to work. The constraint
        says no new *runtime* dependencies; `tomli` as a 3.10-only backport is exactly that, so I
        won't add it. Instead: on 3.10 fall back to `tomli` only if it is installed, and add it
        to the *dev* extras for CI. Let me ask rather than assume, since it touches the
        dependency rule.
    """)
    s.user("""
        Good that you asked. Don't add tomli anywhere. Drop 3.10: set requires-python to >=3.11
        and remove 3.10 from the CI matrix — we decided that for 1.5.0 anyway.
    """)
    s.act(
        "Understood: no tomli; requires-python >=3.11 and 3.10 out of the CI matrix. Reading the workflow.",
        s.shell(
            "cat .github/workflows/ci.yml",
            """
            name: CI
            on:
              push:
                branches: [main]
              pull_request:

            jobs:
              test:
                runs-on: ubuntu-latest
                strategy:
                  matrix:
                    python-version: ["3.10", "3.11"]
                steps:
                  - uses: actions/checkout@v4
                  - uses: actions/setup-python@v5
                    with:
                      python-version: ${{ matrix.python-version }}
                  - run: pip install -e ".[dev]"
                  - name: Run tests
                    run: pytest -q
              lint:
                runs-on: ubuntu-latest
                steps:
                  - uses: actions/checkout@v4
                  - uses: actions/setup-python@v5
                    with:
                      python-version: "3.11"
                  - run: pip install -e ".[dev]"
                  - run: ruff check . && ruff format --check . && mypy weatherly
        """,
        ),
    )
    s.act(
        None,
        s.shell(
            'sed -i \'s/python-version: \\["3.10", "3.11"\\]/python-version: ["3.11", "3.12"]/\' .github/workflows/ci.yml && grep -n \'python-version\' .github/workflows/ci.yml',
            """
            12:        python-version: ["3.11", "3.12"]
            17:          python-version: ${{ matrix.python-version }}
            26:          python-version: "3.11"
        """,
        ),
        s.edit("pyproject.toml", 'requires-python = ">=3.10"', 'requires-python = ">=3.11"'),
    )
    s.act(
        None,
        s.shell(
            "pytest -q && git commit -qam 'Require Python 3.11; CI matrix 3.11/3.12' && git push -q && git log --oneline -1",
            f"""
            {PYTEST_HEADER}collected 32 items

            tests/test_cache.py ....                                                 [ 12%]
            tests/test_client.py ..........                                          [ 43%]
            tests/test_config.py ......                                              [ 62%]
            tests/test_http.py ......                                                [ 81%]
            tests/test_retry.py ......                                               [100%]

            ============================== 32 passed in 0.99s ==============================
            d05f3b8 Require Python 3.11; CI matrix 3.11/3.12
        """,
        ),
    )
    s.commit()
    s.act(
        None,
        s.shell(
            "sleep 90; gh pr checks 87",
            """
            All checks were successful
            0 cancelled, 0 failing, 3 successful, 0 skipped, and 0 pending checks

            ✓  test (3.11)   https://github.com/weatherly-dev/weatherly/actions/runs/11873655907/job/33088002117   57s
            ✓  test (3.12)   https://github.com/weatherly-dev/weatherly/actions/runs/11873655907/job/33088002190   61s
            ✓  lint          https://github.com/weatherly-dev/weatherly/actions/runs/11873655907/job/33088002263   22s
        """,
        ),
    )
    s.say("""
        CI is green on PR #87 (https://github.com/weatherly-dev/weatherly/pull/87): tests on
        3.11 and 3.12 and lint all pass. Branch feat/retry-backoff now has three commits:
        4e8c2a1 (RetryPolicy), b71d09f (GET/HEAD only; max_attempts 5, max_delay 30s) and d05f3b8
        (Python 3.11+).
    """)
    s.user("""
        A reviewer (maria-k) left a comment on the PR: the jitter makes the tests
        nondeterministic if someone forgets to pass rng. Can you make the default RNG seeded
        in tests via the fixture, and also log a warning when we give up after the last attempt?
    """)
    s.act(
        "Reading the review comment thread to be sure I address exactly what was asked.",
        s.shell(
            "gh api repos/weatherly-dev/weatherly/pulls/87/comments --jq '.[] | {user: .user.login, path, line, body}'",
            """
            {"body":"If a test builds RetryPolicy(settings) without rng=, the jitter comes from an unseeded Random and delays differ run to run. Could the conftest settings fixture (or a fixture) provide a seeded policy by default? Also: please log at WARNING when all attempts are exhausted, with the attempt count and the last status — we had an incident where we couldn't tell retries were happening at all.","line":31,"path":"weatherly/retry.py","user":"maria-k"}
        """,
        ),
    )
    s.act(
        None,
        s.read("weatherly/retry.py"),
        s.read("weatherly/http.py", 44, 75),
    )
    s.act(
        "Adding a `retry_policy` fixture with a seeded RNG and a fake sleep, and making `make_transport` use it.",
        s.edit(
            "tests/conftest.py",
            "@pytest.fixture\ndef make_transport(settings: Settings) -> Iterator[Callable[[Handler], HttpTransport]]:",
            '@pytest.fixture\ndef retry_policy(settings: Settings) -> RetryPolicy:\n    """A policy that never sleeps for real and jitters deterministically."""\n    return RetryPolicy(settings.retry, sleep=lambda _secs: None, rng=random.Random(1234))\n\n\n@pytest.fixture\ndef make_transport(\n    settings: Settings, retry_policy: RetryPolicy\n) -> Iterator[Callable[[Handler], HttpTransport]]:',
        ),
        s.edit(
            "tests/conftest.py",
            "        transport = HttpTransport(settings, client=client)\n",
            "        transport = HttpTransport(settings, client=client, retry=retry_policy)\n",
        ),
        s.edit(
            "tests/conftest.py",
            "from weatherly.http import HttpTransport\n",
            "from weatherly.http import HttpTransport\nfrom weatherly.retry import RetryPolicy\n",
        ),
        s.edit(
            "tests/conftest.py",
            "import time\n",
            "import random\nimport time\n",
        ),
    )
    s.act(
        "Reading the current retry tests to place the new one next to the related cases.",
        s.read("tests/test_retry.py"),
    )
    s.act(
        "Now the warning when retries are exhausted, in the transport where the last status is known.",
        s.edit(
            "weatherly/http.py",
            "            if attempt < attempts and self._retry.retryable(raw.status_code):\n                self._retry.wait(attempt, retry_after)\n                continue\n            return self._handle(raw)\n",
            '            if attempt < attempts and self._retry.retryable(raw.status_code):\n                self._retry.wait(attempt, retry_after)\n                continue\n            if attempts > 1 and self._retry.retryable(raw.status_code):\n                log.warning(\n                    "giving up on %s %s after %d attempts; last status %d",\n                    method, path, attempts, raw.status_code,\n                )\n            return self._handle(raw)\n',
        ),
        s.edit(
            "tests/test_retry.py",
            "def test_does_not_retry_404(transport_with):",
            'def test_logs_warning_when_exhausted(transport_with, caplog):\n    handler, _ = flaky([503])\n    with pytest.raises(ApiError):\n        transport_with(handler, max_attempts=2).request("GET", "/current")\n    assert "giving up on GET /current after 2 attempts; last status 503" in caplog.text\n\n\ndef test_does_not_retry_404(transport_with):',
        ),
    )
    s.act(
        None,
        s.shell(
            "pytest -q",
            f"""
            {PYTEST_HEADER}collected 33 items

            tests/test_cache.py ....                                                 [ 12%]
            tests/test_client.py ..........                                          [ 42%]
            tests/test_config.py ......                                              [ 60%]
            tests/test_http.py ......                                                [ 78%]
            tests/test_retry.py ...F...                                              [100%]

            =================================== FAILURES ===================================
            ______________________ test_logs_warning_when_exhausted ________________________

            transport_with = <function transport_with.<locals>.make at 0x7f52e81c3d80>
            caplog = <_pytest.logging.LogCaptureFixture object at 0x7f52e81f6a10>

                def test_logs_warning_when_exhausted(transport_with, caplog):
                    handler, _ = flaky([503])
                    with pytest.raises(ApiError):
                        transport_with(handler, max_attempts=2).request("GET", "/current")
            >       assert "giving up on GET /current after 2 attempts; last status 503" in caplog.text
            E       AssertionError: assert 'giving up on GET /current after 2 attempts; last status 503' in ''
            E        +  where '' = <_pytest.logging.LogCaptureFixture object at 0x7f52e81f6a10>.text

            tests/test_retry.py:71: AssertionError
            =========================== short test summary info ============================
            FAILED tests/test_retry.py::test_logs_warning_when_exhausted - AssertionError: assert 'giving up on GET /current after 2 attempts; last status 503' in ''
            ========================= 1 failed, 32 passed in 1.07s =========================
        """,
            1,
        ),
    )
    s.act(
        "caplog captured nothing. The package sets up logging somewhere that stops propagation? Searching.",
        s.grep("propagate|basicConfig|NullHandler", "weatherly/", "tests/"),
    )
    s.say("""
        The root cause is `propagate = False` on the "weatherly" logger in `weatherly/__init__.py`
        (I had never opened that file, so I hadn't seen it). caplog listens on the root logger, so nothing arrives. Changing library logging
        configuration is out of scope for this PR, so instead of removing that line I'll
        capture on the module's logger explicitly in the test with `caplog.at_level(...,
        logger="weatherly.http")` and attach the handler there.
    """)
    s.act(
        None,
        s.edit(
            "tests/test_retry.py",
            '    handler, _ = flaky([503])\n    with pytest.raises(ApiError):\n        transport_with(handler, max_attempts=2).request("GET", "/current")\n    assert "giving up',
            '    handler, _ = flaky([503])\n    logger = logging.getLogger("weatherly.http")\n    logger.addHandler(caplog.handler)\n    try:\n        with caplog.at_level(logging.WARNING, logger="weatherly.http"), pytest.raises(ApiError):\n            transport_with(handler, max_attempts=2).request("GET", "/current")\n    finally:\n        logger.removeHandler(caplog.handler)\n    assert "giving up',
        ),
        s.edit("tests/test_retry.py", "import random\n", "import logging\nimport random\n"),
    )
    s.act(
        None,
        s.shell(
            "pytest -q && mypy weatherly && ruff check . && ruff format --check .",
            f"""
            {PYTEST_HEADER}collected 33 items

            tests/test_cache.py ....                                                 [ 12%]
            tests/test_client.py ..........                                          [ 42%]
            tests/test_config.py ......                                              [ 60%]
            tests/test_http.py ......                                                [ 78%]
            tests/test_retry.py .......                                              [100%]

            ============================== 33 passed in 1.04s ==============================
            Success: no issues found in 8 source files
            All checks passed!
            16 files already formatted
        """,
        ),
    )
    s.act(
        "Reviewing what the review round changed before committing.",
        s.diff("git diff", s.committed),
    )
    s.act(
        "Committing the review fixes and replying on the PR.",
        s.shell(
            "git commit -qam 'Seeded retry policy fixture; warn when retries are exhausted' && git push -q && git log --oneline -1 && gh pr comment 87 --body 'Addressed: seeded retry_policy fixture in conftest (make_transport uses it), and a WARNING log with attempt count and last status when giving up. See 7a3e9f2.'",
            """
            7a3e9f2 Seeded retry policy fixture; warn when retries are exhausted
            https://github.com/weatherly-dev/weatherly/pull/87#issuecomment-2471093385
        """,
        ),
    )
    s.commit()
    s.act(
        "Updating the changelog for the upcoming 1.5.0.",
        s.read("CHANGELOG.md"),
    )
    s.act(
        None,
        s.edit(
            "CHANGELOG.md",
            "# Changelog\n\n",
            "# Changelog\n\n## 1.5.0 — unreleased\n- Retry GET/HEAD requests on 429/502/503/504 and connection errors with exponential\n  backoff and full jitter; configurable under `[retry]` (`max_attempts` = 5,\n  `base_delay` = 0.5, `max_delay` = 30.0) (#64).\n- Requires Python 3.11 or newer.\n\n",
        ),
        s.shell(
            "git commit -qam 'Changelog for 1.5.0' && git push -q && git log --oneline -1",
            """
            c94b0e6 Changelog for 1.5.0
        """,
        ),
    )
    s.commit()
    s.act(
        "One last full verbose run to list every test on the branch.",
        s.shell("pytest -v", pytest_verbose(s.files)),
    )
    s.say("""
        Done with the review round. Summary of the branch feat/retry-backoff (PR #87, closes #64):
        - 4e8c2a1 RetryPolicy with exponential backoff + full jitter; transport retries.
        - b71d09f only GET/HEAD are retried; max_attempts 5; max_delay 30s.
        - d05f3b8 requires Python 3.11; CI matrix 3.11/3.12 (no tomli, per your instruction).
        - 7a3e9f2 seeded retry_policy fixture; WARNING when retries are exhausted.
        - c94b0e6 changelog.
        33 tests pass; mypy and ruff clean; CI green.

        Left: docs/configuration.md does not describe the [retry] table yet.
    """)
    s.user("""
        Great work. Last thing: document the new [retry] settings in docs/configuration.md
        (same table format as the other sections, and mention that POST is never retried),
        then run the full test suite once more and push.
    """)
    return {"messages": s.messages, "tools": TOOLS}


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--check", action="store_true", help="fail if the bundled file is stale")
    parser.add_argument("--out", type=Path, default=OUT, help="where to write the JSON")
    args = parser.parse_args(argv)
    text = json.dumps(build(), indent=1, ensure_ascii=False) + "\n"
    if args.check:
        if not args.out.exists() or args.out.read_text(encoding="utf-8") != text:
            print(f"{args.out} is stale; run {Path(__file__).name}", file=sys.stderr)
            return 1
        return 0
    args.out.parent.mkdir(parents=True, exist_ok=True)
    args.out.write_text(text, encoding="utf-8")
    print(f"wrote {args.out}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
