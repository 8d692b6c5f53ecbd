#!/usr/bin/env bash
# Set-up for `make demo` and `make test`: checks Java and Python, creates .venv, installs the
# project with its test tools, and migrates the default store. Safe to run again and again.
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv
STAMP=$VENV/.installed

say() { printf 'setup: %s\n' "$*"; }
fail() { printf 'setup: error: %s\n' "$*" >&2; exit 1; }

java_major() {
  local java=java
  [ -n "${JAVA_HOME:-}" ] && [ -x "$JAVA_HOME/bin/java" ] && java="$JAVA_HOME/bin/java"
  command -v "$java" >/dev/null 2>&1 || return 1
  "$java" -version 2>&1 | sed -n 's/.*version "\([0-9]*\).*/\1/p' | head -n 1
}

major=$(java_major || true)
[ -n "$major" ] || fail "Java 17 or newer is required by Spark and was not found (install a JDK, or set JAVA_HOME)"
[ "$major" -ge 17 ] || fail "Java 17 or newer is required by Spark, found Java $major (set JAVA_HOME to a newer JDK)"

PYTHON=${PYTHON:-python3}
command -v "$PYTHON" >/dev/null 2>&1 || fail "Python 3.10 or newer is required and $PYTHON was not found"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
  || fail "Python 3.10 or newer is required, found $("$PYTHON" --version 2>&1)"

if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi

if [ ! -f "$STAMP" ] || [ pyproject.toml -nt "$STAMP" ]; then
  say "installing Python packages into $VENV (the first time takes a few minutes)"
  "$VENV/bin/python" -m pip install --quiet --upgrade pip
  "$VENV/bin/python" -m pip install --quiet -e ".[dev]"
  touch "$STAMP"
else
  say "Python packages are up to date"
fi

"$VENV/bin/wmon" db upgrade
