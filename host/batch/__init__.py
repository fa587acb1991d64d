"""Transactional batches (docs/transactional.md): the coordinator that opens, commits and replays
batches in txid order, the tracking that tells a task when it has all of an attempt, the durable
store of batch metadata, and the glue by which the runtime tells this layer of deliveries, acks and
deaths. A topology without `topology.transactional.id` never imports it.
"""
