#!/usr/bin/env bash
# The whole pipeline on the local stack: a changing Delta table, the producer, the consumer,
# and a check that ClickHouse's <table>_current holds exactly the table's rows.
# Re-running it continues where the last run stopped (new commits, resumed progress).
set -euo pipefail
cd "$(dirname "$0")/.."
BIN=${VENV:-.venv}/bin
TABLE=${DEMO_TABLE:-.stack/demo/people}
TOPIC=${DEMO_TOPIC:-cdfbridge.demo}
COMMITS=${DEMO_COMMITS:-8}
ROWS=${DEMO_ROWS:-20000}

"$BIN/cdfbridge-stack" up
eval "$("$BIN/cdfbridge-stack" env)"

echo "== demo data: $COMMITS commits of $ROWS rows into $TABLE"
"$BIN/cdfbridge-demo-data" --table "$TABLE" --commits "$COMMITS" --rows-per-commit "$ROWS" --interval 0
last=$("$BIN/python" -c "from deltalake import DeltaTable; print(DeltaTable('$TABLE').version())")

echo "== producer: versions up to $last → $TOPIC"
"$BIN/cdfbridge-producer" --table "$TABLE" --primary-key id --topic "$TOPIC" \
  --until-version "$last" --metrics-port 0 2> >(grep --line-buffered '"event"' >&2)

echo "== consumer: $TOPIC → ClickHouse"
"$BIN/cdfbridge-consumer" --topic "$TOPIC" run --until-caught-up
"$BIN/cdfbridge-consumer" --topic "$TOPIC" status

echo "== check: ClickHouse demo_current against the Delta table at the last published version"
"$BIN/cdfbridge-verify" --table "$TABLE" --topic "$TOPIC" --wait 60
echo "== demo ok"
