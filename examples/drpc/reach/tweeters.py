"""tweeters: the first bolt of the reach function (a plain bolt, any number of tasks).

Gets [request, url] from the host's drpc-request and emits [request, tweeter] for every account
that tweeted the URL, none for a URL the data does not know. The request id travels first in
every tuple, as in Storm's linear DRPC, so the bolts after it can tell the requests apart."""

from __future__ import annotations

from typing import Any

from reach import load

from multilang import BasicBolt, Tuple


class Tweeters(BasicBolt):
    def initialize(self, conf: dict[str, Any], context: dict[str, Any]) -> None:
        self.tweeters = load().tweeters

    def process(self, tup: Tuple) -> None:
        request, url = tup.values
        for tweeter in self.tweeters.get(url, []):
            self.emit([request, tweeter])


Tweeters().run()
