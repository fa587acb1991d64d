#!/usr/bin/env bash
# Runs the example from scratch: the topology until every line is acked (the Spark spout's
# checkpoint says `finished`), then report.py on the Parquet output.
set -euo pipefail
cd "$(dirname "$0")"
root=$(cd ../.. && pwd)
py=${PYTHON:-$root/.venv/bin/python}
rm -rf .run    # a fresh run: checkpoint, staged rows and output (keep it to resume instead)

"$py" -m host local topology.yaml --duration "${DURATION:-600}" &
host=$!
trap 'kill -INT $host 2>/dev/null || true' EXIT
finished() {
    "$py" -c 'import json, sys; sys.exit(not json.load(open(sys.argv[1]))["finished"])' \
        .run/spout/checkpoint.json 2>/dev/null
}
until finished; do
    if ! kill -0 "$host" 2>/dev/null; then
        wait "$host" || exit $?
        echo "the topology stopped before every line was acked" >&2; exit 1
    fi
    sleep 1
done
kill -INT "$host"
wait "$host"
trap - EXIT
"$py" report.py .run/counts
