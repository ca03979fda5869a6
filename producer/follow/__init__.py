"""Finding what to read: each table's new commits from its own log, the looks of idle tables grouped, and the plan of chunks."""
