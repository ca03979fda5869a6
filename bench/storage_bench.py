"""The producer on the same backlog from a local path and from S3, side by side in one run.

    python bench/storage_bench.py --rows 1000000 --rows 5000000 [--conf KEY=VALUE ...]

For each size, the backlog of producer_bench.py (inserts, then 5% updated and 1% deleted)
is written locally once, copied byte for byte to the S3 server, and published by a cold
`cdfbridge-producer` from each place in turn: rows/s from process start, the first chunk's
time from process start, and the peak RSS of the producer's process tree. The S3 server is
the one CDFBRIDGE_STORAGE__* name, else the local stack's MinIO (`cdfbridge-stack up s3`).
"""

from __future__ import annotations

import json
import os
from pathlib import Path

from output import bars, save, table
from producer_bench import backlog_parser, build_table, publish
from pyarrow import fs

from services.storage import StorageOnly, StorageSettings
from stack.s3 import S3
from stack.settings import StackSettings

PLACES = ("local", "s3")


def storage_env() -> tuple[StorageSettings, str, dict[str, str]]:
    """The S3 server's settings, its bucket, and the producer's environment for it."""
    given = StorageOnly().storage
    stack = StackSettings()
    if given.endpoint is None:
        server = S3(stack)
        if not server.status().ready:
            raise SystemExit(
                "no S3 server: run `cdfbridge-stack up s3` or set CDFBRIDGE_STORAGE__*"
            )
        access, secret = server.credentials()
        given = StorageSettings(
            endpoint=stack.s3_url,
            path_style_access=True,
            allow_http=True,
            access_key_id=access,  # type: ignore[arg-type]
            secret_access_key=secret,  # type: ignore[arg-type]
        )
    options = given.delta_rs_options()
    env = {
        **os.environ,
        "CDFBRIDGE_STORAGE__ENDPOINT": options["AWS_ENDPOINT_URL"],
        "CDFBRIDGE_STORAGE__PATH_STYLE_ACCESS": str(given.path_style_access).lower(),
        "CDFBRIDGE_STORAGE__ALLOW_HTTP": str(given.allow_http).lower(),
        "CDFBRIDGE_STORAGE__ACCESS_KEY_ID": options["AWS_ACCESS_KEY_ID"],
        "CDFBRIDGE_STORAGE__SECRET_ACCESS_KEY": options["AWS_SECRET_ACCESS_KEY"],
    }
    return given, stack.s3_bucket, env


def copy_to_s3(local: Path, storage: StorageSettings, bucket: str) -> str:
    """The local table's files under s3a://bucket/bench/<name> (copied once)."""
    options = storage.delta_rs_options()
    store = fs.S3FileSystem(
        access_key=options["AWS_ACCESS_KEY_ID"],
        secret_key=options["AWS_SECRET_ACCESS_KEY"],
        endpoint_override=options["AWS_ENDPOINT_URL"],
        region=options["AWS_REGION"],
    )
    key = f"{bucket}/bench/{local.name}"
    if store.get_file_info(f"{key}/_delta_log").type == fs.FileType.NotFound:
        fs.copy_files(str(local.resolve()), key, fs.LocalFileSystem(), store, use_threads=True)
    return f"s3a://{key}"


def main() -> None:
    args = backlog_parser(__doc__).parse_args()
    storage, bucket, env = storage_env()
    results = []
    for rows in args.rows or [1_000_000]:
        local = args.dir / f"blog_{rows}"
        last = build_table(local, rows)
        uris = {"local": str(local), "s3": copy_to_s3(local, storage, bucket)}
        for place in PLACES:
            run = publish(uris[place], last, args.conf, env if place == "s3" else None)
            result = {"backlog_inserts": rows, "place": place, **run}
            results.append(result)
            print(json.dumps(result), flush=True)
    header = ("backlog", "from", "changes", "wall s", "rows/s", "first chunk s", "peak RSS MiB")
    keys = ("backlog_inserts", "place", "rows", "wall_s", "rows_per_s_wall", "first_chunk_s")
    print("\n" + table(header, [[r[k] for k in (*keys, "peak_rss_mib")] for r in results]))
    labels = [f"{r['backlog_inserts'] // 1000:,}k {r['place']}" for r in results]
    values = [r["rows_per_s_wall"] for r in results]
    paths = save("storage", results, bars(labels, values, "rows/s"), "producer rows/s by storage")
    print(f"\nwrote {paths[0]} and {paths[1]}")


if __name__ == "__main__":
    main()
