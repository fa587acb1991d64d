"""`${ENV-NAME}` placeholders in Flux files (and, with the same switch, in ours): substituted from
the environment line by line before parsing when asked (Flux's `-e` / `--env-filter`), warned
about when not."""

from __future__ import annotations

import logging
import os
import re
from collections.abc import Mapping

# the Flux loader's one logger, whichever of its modules warns
log = logging.getLogger("host.topology.flux")

# Flux matches one placeholder per line with a greedy pattern, so the *last* `${...}` of a line is
# the one considered; every occurrence of that same placeholder on the line is then replaced
# (Storm's `FluxParser.java`).
_PLACEHOLDER = re.compile(r".*\$\{(?P<var>ENV-(?P<env>.+)|.+)\}.*")
_ENV_REFERENCE = re.compile(r"\$\{ENV-[^}]+\}")


def substitute_env(
    text: str, *, file: str | None = None, environ: Mapping[str, str] | None = None
) -> str:
    """Replace `${ENV-NAME}` with the value of environment variable NAME, line by line as Flux's
    `-e` does. Unset variables and other placeholders (`${name}` from a properties file, which
    the host does not read) are left as they are, with a warning."""
    env = os.environ if environ is None else environ
    out = []
    for number, line in enumerate(text.splitlines(keepends=True), start=1):
        body = line.rstrip("\r\n")
        match = _PLACEHOLDER.match(body)
        if match is not None:
            placeholder = "${" + match.group("var") + "}"
            name = match.group("env")
            value = env.get(name) if name is not None else None
            if value is not None:
                line = body.replace(placeholder, value) + line[len(body) :]
            elif name is not None:
                log.warning(
                    "%s:%d: %s left as is: environment variable %s is not set",
                    file or "<flux>",
                    number,
                    placeholder,
                    name,
                )
            else:
                log.warning(
                    "%s:%d: %s left as is: only ${ENV-NAME} placeholders are "
                    "substituted (properties files are not supported)",
                    file or "<flux>",
                    number,
                    placeholder,
                )
        out.append(line)
    return "".join(out)


def warn_unsubstituted(doc: object, file: str | None) -> None:
    """Without -e, `${ENV-NAME}` stays literal text; say so once per placeholder."""
    seen: set[str] = set()

    def walk(value: object) -> None:
        if isinstance(value, str):
            seen.update(_ENV_REFERENCE.findall(value))
        elif isinstance(value, dict):
            for key, item in value.items():
                walk(key)
                walk(item)
        elif isinstance(value, list):
            for item in value:
                walk(item)

    walk(doc)
    for placeholder in sorted(seen):
        log.warning(
            "%s: %s left as is: pass -e/--env-filter to substitute environment variables",
            file or "<flux>",
            placeholder,
        )
