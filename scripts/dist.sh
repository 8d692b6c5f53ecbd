#!/usr/bin/env bash
# `make dist`: the sdist and the wheel in dist/ (or the folder given), after `make setup` has built what they carry
# beside the code: the JVM listener and operator (wmon/jars/wmon-spark.jar) and the dashboard's
# front-end libraries (web/node_modules, from the locked npm packages). The wheel is built from
# the sdist, so the sdist holds everything too. Their files are dated by the last commit
# (SOURCE_DATE_EPOCH), so that the same commit makes the same wheel.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv
OUT=${1:-dist}
say() { printf 'dist: %s\n' "$*"; }
fail() { printf 'dist: error: %s\n' "$*" >&2; exit 1; }

# What the wheel must carry, beside the code: checked in the wheel once it is built.
CARRIED=(
  wmon/jars/wmon-spark.jar
  web/node_modules/uplot/dist/uPlot.esm.js
  web/node_modules/uplot/dist/uPlot.min.css
  web/node_modules/socket.io-client/dist/socket.io.esm.min.js
)
for file in "${CARRIED[@]}"; do
  [ -f "$file" ] || fail "$file is missing: run make setup"
done

SOURCE_DATE_EPOCH=${SOURCE_DATE_EPOCH:-$(git log -1 --format=%ct 2>/dev/null || echo 315532800)}
export SOURCE_DATE_EPOCH
rm -rf "$OUT" build
say "building the sdist and, from it, the wheel into $OUT/"
mkdir -p "$OUT"
"$VENV/bin/python" -m build --outdir "$OUT" . >"$OUT/build.log" 2>&1 \
  || { tail -n 20 "$OUT/build.log" >&2; fail "python -m build failed ($OUT/build.log)"; }
rm "$OUT/build.log"

wheel=$(ls "$OUT"/*.whl)
"$VENV/bin/python" - "$wheel" "${CARRIED[@]}" <<'PY' || fail "$wheel lacks what it must carry"
import sys, zipfile
missing = set(sys.argv[2:]) - set(zipfile.ZipFile(sys.argv[1]).namelist())
for name in sorted(missing):
    print(f"dist: error: the wheel has no {name}", file=sys.stderr)
sys.exit(bool(missing))
PY
for built in "$OUT"/*.whl "$OUT"/*.tar.gz; do
  say "$built ($(du -k "$built" | cut -f1) KiB, sha256 $(sha256sum "$built" | cut -c1-16)…)"
done
