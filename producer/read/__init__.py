"""Reading a span of commits through Spark: from the commits' own files or Delta's change-feed reader, the heads of every table in one cycle."""
