"""The group pipeline, in the order a message takes: joined (startup, member, routes,
rebalance), polled (kafka, member, loop), batched per partition (batch, uncommitted), written to ClickHouse (writer,
sink; poison isolated to the dead-letter topic: isolate, reread, dlq) and committed after
the insert (commit, positions)."""
