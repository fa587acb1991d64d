"""The reach of a URL, computed directly from the sample data (`data.json`, beside this file):
the number of distinct accounts that follow at least one account that tweeted the URL. A URL
the data does not know has reach 0, as has one whose tweeters have no followers.

This is what the DRPC topology computes in a distributed way; the tests compare the two, and
`tweeters.py` reads the data through `load`.

    python reach.py                      # every URL of the data, with its reach
    python reach.py URL [URL ...]        # the reach of each URL given
    python reach.py --data FILE [URL ...]
"""

from __future__ import annotations

import argparse
import json
import sys
from dataclasses import dataclass
from pathlib import Path

DATA = Path(__file__).resolve().with_name("data.json")


@dataclass(frozen=True)
class ReachData:
    tweeters: dict[str, list[str]]  # URL -> the accounts that tweeted it
    followers: dict[str, list[str]]  # account -> the accounts that follow it


def _string_lists(value: object, what: str, path: Path) -> dict[str, list[str]]:
    if not isinstance(value, dict) or not all(
        isinstance(v, list) and all(isinstance(s, str) for s in v) for v in value.values()
    ):
        raise ValueError(f"{path}: {what!r} must map each key to a list of strings")
    return value


def load(path: Path = DATA) -> ReachData:
    """The data in `path`; ValueError naming the file and the key when it has the wrong shape."""
    try:
        raw = json.loads(path.read_text(encoding="utf-8"))
    except json.JSONDecodeError as exc:
        raise ValueError(f"{path}: not JSON: {exc}") from None
    if not isinstance(raw, dict):
        raise ValueError(f"{path}: expected an object with 'tweeters' and 'followers'")
    return ReachData(
        tweeters=_string_lists(raw.get("tweeters"), "tweeters", path),
        followers=_string_lists(raw.get("followers"), "followers", path),
    )


def reach(data: ReachData, url: str) -> int:
    """How many distinct accounts follow someone who tweeted `url`."""
    return len(
        {
            follower
            for tweeter in data.tweeters.get(url, [])
            for follower in data.followers.get(tweeter, [])
        }
    )


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(description="The reach of URLs, from the sample data.")
    parser.add_argument("urls", nargs="*", metavar="URL", help="default: every URL of the data")
    parser.add_argument("--data", type=Path, default=DATA, help=f"default: {DATA}")
    args = parser.parse_args(argv)
    try:
        data = load(args.data)
    except (OSError, ValueError) as exc:
        print(f"reach.py: {exc}", file=sys.stderr)
        return 1
    for url in args.urls or list(data.tweeters):
        print(f"{reach(data, url)}\t{url}")
    return 0


if __name__ == "__main__":
    sys.exit(main())
