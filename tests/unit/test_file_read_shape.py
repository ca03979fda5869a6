"""Which tables' commits may be read from their own files (producer/read/file_read.py
shape_of): only where the metadata records changes, as Delta's reader requires."""

import json

import pytest

from producer.read.file_read import shape_of

PROTOCOL = {"minReaderVersion": 1, "minWriterVersion": 4}
SCHEMA = {
    "type": "struct",
    "fields": [{"name": "id", "type": "long", "nullable": False, "metadata": {}}],
}


def metadata(configuration: dict[str, str]) -> dict[str, object]:
    return {
        "schemaString": json.dumps(SCHEMA),
        "partitionColumns": [],
        "configuration": configuration,
    }


@pytest.mark.parametrize("value", ["true", "TRUE"])
def test_a_table_that_records_changes_is_read_from_its_files(value: str) -> None:
    shape = shape_of(PROTOCOL, metadata({"delta.enableChangeDataFeed": value}))

    assert shape is not None and shape.columns == ("id",)


@pytest.mark.parametrize("configuration", [{}, {"delta.enableChangeDataFeed": "false"}])
def test_a_range_whose_metadata_records_no_change_is_left_to_deltas_reader(
    configuration: dict[str, str],
) -> None:
    assert shape_of(PROTOCOL, metadata(configuration)) is None
