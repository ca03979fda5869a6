"""Which reader cdfbridge-verify copies a snapshot with, from the table's protocol alone."""

import pytest

from verify.routes import Route, choose

# (min_reader_version, reader_features, --reader, route)
ROUTES = [
    (1, None, "auto", Route.PYARROW),  # a plain table
    (3, ["timestampNtz"], "auto", Route.PYARROW),
    (2, None, "auto", Route.DATAFUSION),  # column mapping, before table features
    (3, ["columnMapping"], "auto", Route.DATAFUSION),
    (3, ["deletionVectors"], "auto", Route.DATAFUSION),
    (3, ["deletionVectors", "columnMapping", "timestampNtz"], "auto", Route.DATAFUSION),
    (3, ["deletionVectors", "v2Checkpoint"], "auto", Route.SPARK),
    (3, ["typeWidening"], "auto", Route.SPARK),
    (4, None, "auto", Route.SPARK),
    (1, None, "spark", Route.SPARK),
    (3, ["deletionVectors"], "spark", Route.SPARK),
    (1, None, "delta-rs", Route.PYARROW),
    (3, ["deletionVectors"], "delta-rs", Route.DATAFUSION),
    (3, ["typeWidening"], "delta-rs", Route.DATAFUSION),
]


@pytest.mark.parametrize(("reader_version", "features", "forced", "route"), ROUTES)
def test_the_protocol_and_reader_flag_choose_the_route(
    reader_version: int, features: list[str] | None, forced: str, route: Route
) -> None:
    assert choose(reader_version, features, forced) is route  # type: ignore[arg-type]
