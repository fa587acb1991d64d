"""reach.yaml, built with the Python builder (docs/drpc.md §3.2)."""

from host.topology import TopologyBuilder

builder = TopologyBuilder("reach", config={"drpc.request.timeout.secs": 30})
drpc = builder.linear_drpc("reach")
drpc.bolt("tweeters", ["python3", "tweeters.py"], outputs=["id", "tweeter"], parallelism=2)
drpc.bolt("followers", ["node", "followers.js"], outputs=["id", "follower"]).shuffle()
drpc.bolt(
    "distinct", ["python3", "distinct.py"], outputs=["id", "count"], finish_batch=True
).fields("id", "follower")
drpc.bolt("total", ["python3", "total.py"], outputs=["id", "result"], finish_batch=True).fields(
    "id"
)
topology = builder
