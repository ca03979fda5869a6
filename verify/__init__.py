"""Is ClickHouse equal to the Delta table? `cdfbridge-verify` compares `<table>_current` with the
table's snapshot at the last version the producer published: counts, an order-independent hash
over every column, and, on a mismatch, the lost, extra and wrong keys."""
