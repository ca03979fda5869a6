"""Resyncs: a table's new generation, asked for by the command or by the producer itself."""
