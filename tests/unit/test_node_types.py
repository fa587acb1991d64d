"""The Node client's declarations (multilang/node/multilang/index.d.ts) match what index.js
exports: the same values, and every public member of each class declared. `make lint` checks
that the declarations compile and fit their documented use (tests/typescript/); this test
catches a method added to index.js and not to its types."""

from __future__ import annotations

import json
import re
import subprocess

from multilang.paths import NODE_PATH_DIR

PACKAGE = NODE_PATH_DIR / "multilang"
DECLARATIONS = (PACKAGE / "index.d.ts").read_text()

# What index.js exports at run time: each value's public members (prototype chain and instance
# fields, without the `_` ones), or an object's entries.
RUNTIME_SURFACE = r"""
const m = require(process.argv[1]);
const out = {};
for (const [name, value] of Object.entries(m)) {
  if (typeof value !== 'function') { out[name] = { entries: value }; continue; }
  const members = new Set();
  for (let p = value.prototype; p && p !== Object.prototype; p = Object.getPrototypeOf(p)) {
    for (const key of Object.getOwnPropertyNames(p)) members.add(key);
  }
  const instance = name === 'Tuple' ? new value('1', 'c', 's', 1, []) : new value();
  for (const key of Object.keys(instance)) members.add(key);
  out[name] = { members: [...members].filter((k) => k !== 'constructor' && !k.startsWith('_')) };
}
console.log(JSON.stringify(out));
"""

_CLASS = re.compile(
    r"^(export )?declare (?:abstract )?class (\w+)(?:<[^{]*?>)?(?: extends (\w+))? \{\n(.*?)^\}",
    re.M | re.S,
)
_MEMBER = re.compile(r"^  (\w+)\??[(:<]", re.M)


def runtime_surface() -> dict:
    out = subprocess.run(
        ["node", "-e", RUNTIME_SURFACE, str(PACKAGE)],
        capture_output=True,
        text=True,
        timeout=30,
        check=True,
    ).stdout
    return json.loads(out)


def declared_classes() -> dict[str, tuple[bool, str | None, set[str]]]:
    """name -> (exported, base class, members declared in its body)."""
    return {
        m[2]: (m[1] is not None, m[3], set(_MEMBER.findall(m[4])))
        for m in _CLASS.finditer(DECLARATIONS)
    }


def declared_members(classes: dict, name: str) -> set[str]:
    exported, base, members = classes[name]
    return members | (declared_members(classes, base) if base else set())


def test_the_declared_values_are_the_exported_ones():
    classes = declared_classes()
    declared = {name for name, (exported, _, _) in classes.items() if exported}
    declared |= set(re.findall(r"^export declare const (\w+)", DECLARATIONS, re.M))
    assert declared == set(runtime_surface())


def test_every_public_member_of_each_class_is_declared():
    classes = declared_classes()
    for name, surface in runtime_surface().items():
        if "members" in surface:
            missing = set(surface["members"]) - declared_members(classes, name)
            assert not missing, f"{name}: {sorted(missing)} not in index.d.ts"


def test_levels_are_declared_with_their_numbers():
    [body] = re.findall(r"export declare const LEVELS: Readonly<\{(.*?)\}>", DECLARATIONS)
    declared = {k: int(v) for k, v in re.findall(r"(\w+): (\d+)", body)}
    assert declared == runtime_surface()["LEVELS"]["entries"]


def test_the_package_points_at_its_declarations():
    package = json.loads((PACKAGE / "package.json").read_text())
    assert (PACKAGE / package["types"]).resolve() == (PACKAGE / "index.d.ts").resolve()
