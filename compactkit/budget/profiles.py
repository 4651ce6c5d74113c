"""Token budgets per model: what a model can take, and how much of it to use.

Three objects, three jobs:

- ``ModelProfile`` — facts about a model (window, output cap, input cap, tokenizer, formatting
  rules, and where those numbers come from). compactkit ships profiles for the OpenAI, Anthropic,
  Gemini, Llama, Qwen and Mistral families in ``compactkit/budget/profiles.toml``.
- ``BudgetPolicy`` — the user's choices for a model (reserved output, safety margin, compaction
  trigger and target). Its arithmetic turns a profile into a ``Budget``::

      usable input = min(window - reserved output, input cap) - safety margin

- ``ProfileRegistry`` — finds the profile and policy for a model name. An exact name beats any
  pattern; among patterns the most specific wins; a plain name also matches its dated snapshots
  (``gpt-4o`` matches ``gpt-4o-2024-08-06``). Extend it in code (``register``, ``set_policy``) or
  from a TOML file (``load_toml``; the default registry also reads the file named by the
  ``COMPACTKIT_PROFILES`` environment variable). ``docs/models.md`` describes the format.
"""

from __future__ import annotations

import fnmatch
import hashlib
import marshal
import os
import re
import sys
from collections.abc import Iterable, Mapping
from functools import cache
from importlib import resources
from pathlib import Path
from types import ModuleType
from typing import Any

from compactkit.budget._encodings import cache_folder, read_cached, write_cached
from compactkit.budget._profiles_shipped import shipped, shipped_default_policy
from compactkit.budget.profile import (
    DEFAULT_RESERVED_OUTPUT,
    Budget,
    BudgetPolicy,
    Counting,
    MessageRules,
    ModelProfile,
    ToolSchemaRules,
    _validate,
)
from compactkit.errors import ConfigError

__all__ = [
    "DEFAULT_RESERVED_OUTPUT",
    "PROFILES_ENV",
    "Budget",
    "BudgetPolicy",
    "Counting",
    "MessageRules",
    "ModelProfile",
    "ProfileRegistry",
    "ToolSchemaRules",
    "budget_for",
    "default_registry",
    "get_profile",
]


PROFILES_ENV = "COMPACTKIT_PROFILES"
"""The environment variable naming a TOML file that the default registry loads on first use."""


# What may follow a plain profile name for a model to be one of its snapshots or aliases:
# gpt-4o-2024-08-06, claude-sonnet-4-5-20250929, gpt-4-0613, gemini-1.5-pro-002,
# mistral-large-2411, claude-sonnet-4-0, *-latest, *-preview-06-05, *-exp, claude-3-5-sonnet@2024…
_SNAPSHOT_SUFFIX = re.compile(
    r"@.*|-(?:\d{4}-\d{2}-\d{2}|\d{3,8}|0|latest|preview|exp)(?:[-:@].*)?", re.DOTALL
)
_GLOB_SYNTAX = re.compile(r"\[[^\]]*\]|[*?]")


class ProfileRegistry:
    """Finds the profile and the budget policy for a model name.

    Matching ignores case. An exact name beats every pattern. Otherwise the most specific match
    wins: the one with the most literal characters (a plain name that matches a snapshot counts
    its whole length; a glob counts its characters other than ``*``, ``?`` and ``[...]``), and on a
    tie the one registered last. A name with a provider prefix (``openai/gpt-4o``) is also tried
    without it. Policies are matched the same way.

    Args:
        profiles: Profiles to start with.
        policies: Budget policies by model name or pattern.
        default: The profile for models nothing matches; ``None`` makes them an error.
        default_policy: The policy for models no policy pattern matches.

    Attributes:
        default: The profile for models nothing matches (``None``: unknown models are an error).
        default_policy: The policy for models no policy pattern matches.
    """

    def __init__(
        self,
        profiles: Iterable[ModelProfile] = (),
        *,
        policies: Mapping[str, BudgetPolicy] | None = None,
        default: ModelProfile | None = None,
        default_policy: BudgetPolicy | None = None,
    ) -> None:
        if isinstance(profiles, (str, bytes, os.PathLike)):
            raise ConfigError(
                f"ProfileRegistry takes ModelProfiles, got the path {os.fsdecode(profiles)!r}; "
                "read a TOML file with ProfileRegistry.from_toml(path)"
            )
        self._profiles: dict[str, ModelProfile] = {}
        self._policies: dict[str, tuple[str, BudgetPolicy]] = {}
        self.default = default
        self.default_policy = default_policy or shipped_default_policy()
        for profile in profiles:
            self.register(profile)
        for pattern, policy in (policies or {}).items():
            self.set_policy(pattern, policy)

    @classmethod
    def bundled(cls) -> ProfileRegistry:
        """A new registry holding the profiles compactkit ships (no environment overrides)."""
        return cls(_bundled_profiles())

    @classmethod
    def from_toml(cls, path: str | os.PathLike[str]) -> ProfileRegistry:
        """A new registry: the shipped profiles plus the TOML file at ``path`` (docs/models.md).

        Raises:
            ConfigError: The file is unreadable, not TOML, or holds an invalid value (named).
        """
        return cls.bundled().load_toml(path)

    @property
    def profiles(self) -> tuple[ModelProfile, ...]:
        """The registered profiles, in registration order."""
        return tuple(self._profiles.values())

    @property
    def policies(self) -> dict[str, BudgetPolicy]:
        """The policies set per name or pattern, in registration order."""
        return dict(self._policies.values())

    def register(self, profile: ModelProfile) -> None:
        """Add ``profile``, replacing any profile of the same name (case-insensitively)."""
        key = profile.name.lower()
        self._profiles.pop(key, None)  # re-registering moves it last: it wins pattern ties
        self._profiles[key] = profile

    def set_policy(self, pattern: str, policy: BudgetPolicy) -> None:
        """Use ``policy`` for models matching ``pattern`` (a name or glob, as for profiles)."""
        if not pattern:
            raise ConfigError("a policy pattern must not be empty; use '*' for every model")
        self._policies.pop(pattern.lower(), None)
        self._policies[pattern.lower()] = (pattern, policy)

    def get(self, model: str) -> ModelProfile:
        """The profile for ``model``.

        Raises:
            ConfigError: Nothing matches and there is no default profile.
        """
        found = self._find(model)
        if found is not None:
            return found
        if self.default is not None:
            return self.default
        raise ConfigError(
            f"unknown model {model!r}: no profile matches it. Register one"
            f" (registry.register(ModelProfile(name={model!r}, ...))), describe it in a TOML file"
            f" (registry.load_toml(path), or the {PROFILES_ENV} environment variable), or set a"
            " default profile for unknown models (registry.default = ...)"
        )

    def policy_for(self, model: str) -> BudgetPolicy:
        """The budget policy for ``model``: the best matching pattern's, else the default."""
        self._find(model)  # the same argument check as get()
        key = _best_named(model, [name for name, _ in self._policies.values()])
        return self._policies[key][1] if key is not None else self.default_policy

    def budget_for(self, model: str, *, policy: BudgetPolicy | None = None) -> Budget:
        """The checked budget for ``model``, with ``policy`` instead of the registered one."""
        return (policy or self.policy_for(model)).resolve(self.get(model), model=model)

    def copy(self) -> ProfileRegistry:
        """An independent registry with the same profiles, policies and defaults."""
        clone = ProfileRegistry(default=self.default, default_policy=self.default_policy)
        clone._profiles = dict(self._profiles)
        clone._policies = dict(self._policies)
        return clone

    def load_toml(self, path: str | os.PathLike[str]) -> ProfileRegistry:
        """Add or override profiles and policies from a TOML file (format: docs/models.md).

        Returns this registry, so ``ProfileRegistry.bundled().load_toml(path)`` is the registry.

        A ``[[profile]]`` whose name is already registered changes only the fields it gives; a new
        one needs ``name``, ``context_window``, ``max_output`` and an ``encoding`` or
        ``chars_per_token``. ``[policies."<pattern>"]`` tables work the same way. The file applies
        entirely or not at all.

        Raises:
            ConfigError: The file is unreadable, not TOML, or holds an invalid value (named).
        """
        where = os.fspath(path)
        tomllib = _toml()
        try:
            data = tomllib.loads(Path(where).read_text(encoding="utf-8"))
        except OSError as exc:
            raise ConfigError(f"cannot read profiles file {where!r}: {exc}") from exc
        except tomllib.TOMLDecodeError as exc:
            raise ConfigError(f"profiles file {where!r} is not valid TOML: {exc}") from exc
        staged = self.copy()
        staged._apply(data, where)
        self._profiles, self._policies, self.default = (
            staged._profiles,
            staged._policies,
            staged.default,
        )
        return self

    def _find(self, model: str) -> ModelProfile | None:
        if not isinstance(model, str) or not model.strip():
            raise ConfigError(
                f"model must be a model name such as 'gpt-4o' (a non-empty str), got {model!r:.60}"
            )
        key = _best_named(model, [profile.name for profile in self._profiles.values()])
        return self._profiles[key] if key is not None else None

    def _apply(self, data: dict[str, Any], where: str) -> None:
        unknown = set(data) - {"profile", "policies", "default"}
        if unknown:
            raise ConfigError(
                f"{where}: unknown top-level keys {sorted(unknown)!r}; expected [[profile]],"
                ' [policies."<pattern>"] and default'
            )
        for index, table in enumerate(_tables(data.get("profile", []), where, "[[profile]]")):
            name = table.get("name")
            if not isinstance(name, str) or not name:
                raise ConfigError(f"{where}: [[profile]] number {index + 1} needs a name")
            existing = self._profiles.get(name.lower())
            base = existing.model_dump(exclude={"source"}) if existing is not None else {}
            fields = {**base, "source": where, **table}
            self.register(_validate(ModelProfile, fields, where))
        policies = data.get("policies", {})
        if not isinstance(policies, dict):
            raise ConfigError(f'{where}: policies must be tables: [policies."<pattern>"]')
        for pattern, table in policies.items():
            (table,) = _tables([table], where, f"[policies.{pattern!r}]")
            existing_policy = self._policies.get(pattern.lower())
            base = existing_policy[1].model_dump(exclude_unset=True) if existing_policy else {}
            what = f"{where}: policy {pattern!r}"
            self.set_policy(pattern, _validate(BudgetPolicy, {**base, **table}, what))
        if "default" in data:
            name = data["default"]
            found = self._find(name) if isinstance(name, str) else None
            if found is None:
                raise ConfigError(
                    f"{where}: default={name!r} names no known profile; give the name of a"
                    " shipped profile or of a [[profile]] in this file"
                )
            self.default = found


def _best_named(model: str, names: list[str]) -> str | None:
    """``_best``, then for ``provider:model`` (LangChain's and pydantic-ai's spelling, such as
    ``openai:gpt-4o``) the part after the colon; only as a fallback, since a colon is also part
    of some model names (Ollama's ``qwen3:32b``)."""
    key = _best(model, names)
    if key is None and ":" in model:
        key = _best(model.split(":", 1)[1], names)
    return key


def _best(model: str, names: Iterable[str]) -> str | None:
    """The lower-cased name among ``names`` that matches ``model`` best, or ``None``."""
    candidates = [model.strip().lower()]
    if "/" in candidates[0]:
        candidates.append(candidates[0].rsplit("/", 1)[1])
    best: tuple[int, int, int] | None = None
    best_key: str | None = None
    for order, name in enumerate(names):
        key = name.lower()
        for candidate in candidates:
            score = _match(key, candidate)
            if score is not None and (best is None or (*score, order) > best):
                best, best_key = (*score, order), key
    return best_key


def _match(pattern: str, model: str) -> tuple[int, int] | None:
    """(1, 0) for an exact name, (0, specificity) for a pattern match, ``None`` otherwise."""
    if _GLOB_SYNTAX.search(pattern) is None:
        if model == pattern:
            return (1, 0)
        if model.startswith(pattern) and _SNAPSHOT_SUFFIX.fullmatch(model, len(pattern)):
            return (0, len(pattern))
        return None
    if fnmatch.fnmatchcase(model, pattern):
        return (0, len(_GLOB_SYNTAX.sub("", pattern)))
    return None


def _tables(value: object, where: str, what: str) -> list[dict[str, Any]]:
    if not isinstance(value, list) or not all(isinstance(item, dict) for item in value):
        raise ConfigError(f"{where}: {what} must be a table (see docs/models.md)")
    return value


@cache
def _bundled_profiles() -> tuple[ModelProfile, ...]:
    text = (resources.files("compactkit.budget") / "profiles.toml").read_text("utf-8")
    where = "compactkit/budget/profiles.toml"
    profiles = []
    for table in _profile_tables(text):
        try:
            profiles.append(shipped(ModelProfile, table))
        except ConfigError as exc:
            raise ConfigError(f"{where}: {exc}") from exc
    return tuple(profiles)


_TABLES_FORMAT = b"compactkit-profile-tables-1"


def _profile_tables(text: str) -> list[dict[str, Any]]:
    """The ``[[profile]]`` tables of the bundled ``text``: parsed (the TOML parse is about
    3.5 ms, once per process), or read back from compactkit's cache folder
    (``COMPACTKIT_CACHE_DIR``), where the first process that parsed this very text left them
    (``marshal``-ed, about 0.1 ms to read; the file is named by the text's sha256 and checked
    by its own, so a cache of other profiles or a damaged one is never used, and a cache
    that cannot be read or written only means the text is parsed). Every table becomes a
    profile the same way either way (``_profiles_shipped.shipped``)."""
    folder = cache_folder()
    path = None
    if folder is not None:
        digest = hashlib.sha256(text.encode()).hexdigest()[:16]
        path = Path(folder, f"profiles-{digest}.tables")
        payload = read_cached(path, _TABLES_FORMAT)
        if payload is not None:
            try:
                tables = marshal.loads(payload)
            except (EOFError, ValueError, TypeError):
                tables = None
            if type(tables) is list and all(type(table) is dict for table in tables):
                return tables
    tables = _toml().loads(text)["profile"]
    if path is not None:
        try:
            payload = marshal.dumps(tables)
        except ValueError:  # (a TOML date marshal cannot write: parsed in every process)
            return tables  # type: ignore[no-any-return]
        write_cached(path, _TABLES_FORMAT, payload)
    return tables  # type: ignore[no-any-return]


def _toml() -> ModuleType:
    """The TOML parser, loaded with its first use: a process that reads the bundled profiles
    back from the cache and loads no file of its own never needs it (its import compiles
    regular expressions, a few ms)."""
    if sys.version_info >= (3, 11):
        import tomllib
    else:  # pragma: no cover - exercised on Python 3.10 only
        import tomli as tomllib  # type: ignore[import-not-found, unused-ignore]
    return tomllib  # type: ignore[no-any-return, unused-ignore]


@cache
def default_registry() -> ProfileRegistry:
    """The process-wide registry: the shipped profiles plus the ``COMPACTKIT_PROFILES`` file.

    Built on first use; changes made to it (``register``, ``set_policy``) apply to every caller of
    ``get_profile`` and ``budget_for`` in the process.

    Raises:
        ConfigError: The file named by ``COMPACTKIT_PROFILES`` is unreadable or invalid.
    """
    registry = ProfileRegistry.bundled()
    path = os.environ.get(PROFILES_ENV)
    if path:
        try:
            registry.load_toml(path)
        except ConfigError as exc:
            raise ConfigError(f"{PROFILES_ENV}={path!r}: {exc}") from exc
    return registry


def get_profile(model: str) -> ModelProfile:
    """The profile for ``model`` from the default registry."""
    return default_registry().get(model)


def budget_for(
    model: str,
    *,
    registry: ProfileRegistry | None = None,
    policy: BudgetPolicy | None = None,
) -> Budget:
    """The checked token budget for ``model``.

    Args:
        model: The model name as sent to the provider (snapshots and prefixes are matched).
        registry: Where to look; the default registry when ``None``.
        policy: Use this policy instead of the one registered for the model.

    Raises:
        ConfigError: The model is unknown, or the policy does not fit its profile.
    """
    return _registry(registry).budget_for(model, policy=policy)


def _registry(registry: object) -> ProfileRegistry:
    """``registry``, or the default one for ``None``; anything else is a ``ConfigError``."""
    if registry is None:
        return default_registry()
    if isinstance(registry, ProfileRegistry):
        return registry
    fix = (
        "ProfileRegistry.from_toml(path) reads a TOML file"
        if isinstance(registry, (str, os.PathLike))
        else "build one with ProfileRegistry.bundled() or ProfileRegistry.from_toml(path)"
    )
    raise ConfigError(f"registry must be a ProfileRegistry, got {type(registry).__name__}; {fix}")
