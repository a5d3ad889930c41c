"""ConfigError, and how a validation failure is worded: the field path as written
in the YAML (`profiles[0].plugins.score.enabled[1].name`), then the reason."""

from __future__ import annotations

import json
from collections.abc import Iterable, Mapping, Sequence

from pydantic import ValidationError

INVALID = "kpysched_invalid"  # error type of kpysched's own checks; their reasons name the values


class ConfigError(ValueError):
    """The configuration cannot be used. Each problem reads `field.path: reason`."""

    def __init__(self, problems: Sequence[str], source: str | None = None) -> None:
        self.problems = tuple(dict.fromkeys(problems))  # one line per distinct problem
        self.source = source
        super().__init__(self._message())

    def _message(self) -> str:
        prefix = f"{self.source}: " if self.source else ""
        if len(self.problems) == 1:
            return prefix + self.problems[0]
        lines = "\n".join(f"  {problem}" for problem in self.problems)
        return f"{prefix}{len(self.problems)} problems:\n{lines}"

    def with_source(self, source: str) -> ConfigError:
        return ConfigError(self.problems, source)


def join_path(base: str, *parts: str | int) -> str:
    """`join_path("profiles", 0, "plugins")` -> `profiles[0].plugins`."""
    path = base
    for part in parts:
        if isinstance(part, int) and not isinstance(part, bool):
            path += f"[{part}]"
        else:
            path = f"{path}.{part}" if path else str(part)
    return path


def problem(path: str, reason: str) -> str:
    return f"{path}: {reason}" if path else reason


def validation_problems(
    error: ValidationError, base: str = "", hints: Mapping[str, str] | None = None
) -> list[str]:
    """Pydantic's errors as problems whose paths start at `base`.

    `hints` adds an explanation to an unknown field, keyed by its full path.
    """
    problems = []
    for item in error.errors(include_url=False):
        loc = item["loc"]
        if item["type"] == "extra_forbidden":
            path = join_path(base, *loc[:-1])
            reason = f'unknown field "{loc[-1]}"'
            hint = (hints or {}).get(join_path(base, *loc))
            if hint:
                reason += f" ({hint})"
        elif item["type"] == "missing":
            path, reason = join_path(base, *loc), "required field is missing"
        else:
            path, reason = join_path(base, *loc), item["msg"]
            if item["type"] != INVALID:  # those reasons already carry the values
                reason += _got(item.get("input"))
        problems.append(problem(path, reason))
    return problems


def _got(value: object) -> str:
    """The offending value, when it is short enough to help."""
    if isinstance(value, str | int | float | bool) or value is None:
        return f" (got {json.dumps(value)})"
    return ""


def plural(names: Iterable[str]) -> str:
    return ", ".join(f'"{name}"' for name in names)
