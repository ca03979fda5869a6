"""Filling a table from scratch: a rebuild from the topic or the lake into a shadow table,
swapped in whole (steps, fill, whole), the bootstrap from the lake and its boundary
(bootstrap, boundary, lake), what a new group reads first (first_read), and the automatic
rebuild at a new generation (auto_rebuild)."""
