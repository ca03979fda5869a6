"""What the producer's unique-key check costs per slice, against the sort by _order every
slice gets anyway, in the same run.

    python bench/unique_keys_bench.py [--rows 1000000] [--repeat 5]

A slice of `rows` encoded changes (random 64-bit key hashes, keys of 13 bytes, one commit:
the worst case for the check, since every row survives) is checked by
producer/encode/slices.py `check_unique` and sorted by _order; prints each one's median time.
"""

from __future__ import annotations

import argparse
import random
import statistics
import time

import pyarrow as pa
from output import table

from producer.encode.encode import IS_DELETE, KEY, KEY_HASH, ORDER
from producer.encode.slices import check_unique


def main() -> None:
    args = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    args.add_argument("--rows", type=int, default=1_000_000)
    args.add_argument("--repeat", type=int, default=5)
    given = args.parse_args()
    rng = random.Random(7)  # noqa: S311 - data for a benchmark, not a secret
    ids = rng.sample(range(given.rows * 10), given.rows)
    rows = pa.table(
        {
            KEY: pa.array([b"\x00\x00\x00\x00\x01" + i.to_bytes(8, "big") for i in ids]),
            ORDER: pa.array([7] * given.rows, pa.int64()),
            IS_DELETE: pa.array([False] * given.rows),
            KEY_HASH: pa.array([rng.getrandbits(63) for _ in ids], pa.int64()),
        }
    )
    checked, sorted_ = [], []
    for _ in range(given.repeat):
        began = time.perf_counter()
        check_unique(rows, "bench", None)  # type: ignore[arg-type] - no key is described
        checked.append(time.perf_counter() - began)
        began = time.perf_counter()
        rows.sort_by(ORDER)
        sorted_.append(time.perf_counter() - began)
    ms = {
        name: round(statistics.median(s) * 1000, 1)
        for name, s in (("check", checked), ("sort", sorted_))
    }
    print(
        table(
            ["rows", "check_unique ms (median)", "sort_by(_order) ms (median)"],
            [[given.rows, ms["check"], ms["sort"]]],
        )
    )


if __name__ == "__main__":
    main()
