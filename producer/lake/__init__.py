"""Following the lake: every table in a thread of its own, started, followed and retried."""
