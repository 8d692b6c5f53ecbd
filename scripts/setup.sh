#!/usr/bin/env bash
# Set-up, safe to run again and again. With no option, what the demo needs (`make setup`,
# `make demo`): checks Java (a JDK) and Python, creates .venv and installs the project with
# Spark into it, builds the JVM listener, installs the dashboard's npm packages (and Debian's
# npm if it is missing), and migrates the default store.
#   --dev    also the development tools in .venv: the linters, pytest, the packaging tools,
#            the Spark Connect and pipelines extras (`make lint`, `make dist`, `make bench`)
#   --tests  --dev, and the Debian packages only the tests drive: chromium (the browser
#            tests), prometheus and prometheus-alertmanager (`make test`, `make e2e`)
set -euo pipefail
cd "$(dirname "$0")/.."

VENV=.venv
# The extras installed, comma-separated, as the last installation left them.
STAMP=$VENV/.installed
EXTRAS=spark
TEST_PACKAGES=no
for option in "$@"; do
  case "$option" in
    --dev) EXTRAS=spark,connect,pipelines,dev ;;
    --tests) EXTRAS=spark,connect,pipelines,dev; TEST_PACKAGES=yes ;;
    *) printf 'setup: error: unknown option %s (--dev or --tests)\n' "$option" >&2; exit 2 ;;
  esac
done

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

# The JVM listener is compiled here (below): a Java runtime alone will not do, and it is better
# said before the Python packages take their minutes.
JAR=wmon/jars/wmon-spark.jar
jar_is_stale() { [ ! -f "$JAR" ] || [ -n "$(find jvm/src -name '*.java' -newer "$JAR")" ]; }
if jar_is_stale; then
  command -v javac >/dev/null 2>&1 && command -v jar >/dev/null 2>&1 \
    || fail "javac and jar (a JDK 17 or newer, not only a Java runtime) are needed to build $JAR"
fi

PYTHON=${PYTHON:-python3}
command -v "$PYTHON" >/dev/null 2>&1 || fail "Python 3.10 or newer is required and $PYTHON was not found"
"$PYTHON" -c 'import sys; sys.exit(sys.version_info < (3, 10))' \
  || fail "Python 3.10 or newer is required, found $("$PYTHON" --version 2>&1)"

if [ ! -x "$VENV/bin/python" ]; then
  say "creating $VENV"
  "$PYTHON" -m venv "$VENV"
fi

# Up to date when pyproject.toml has not changed since the last installation and that
# installed every extra asked for now (the tests' set-up covers the demo's).
installed_all_extras() {
  [ -f "$STAMP" ] && [ ! pyproject.toml -nt "$STAMP" ] || return 1
  local installed extra
  installed=",$(cat "$STAMP"),"
  for extra in ${EXTRAS//,/ }; do
    [[ "$installed" == *",$extra,"* ]] || return 1
  done
}
if installed_all_extras; then
  say "Python packages are up to date"
else
  say "installing Python packages ($EXTRAS) into $VENV (the first time takes a few minutes)"
  # uv installs them, from PyPI as pip would: from its cache it unpacks and compiles them on
  # every core, 37 s here where pip took 80 s (a fresh .venv with every extra).
  "$VENV/bin/python" -m pip install --quiet uv
  # Compiled ahead, as pip does: the tests start many Python processes, each of which would
  # otherwise compile what it imports (they write no bytecode when PYTHONDONTWRITEBYTECODE is
  # set). uv shows the build backend's warnings only when it fails.
  "$VENV/bin/uv" pip install --python "$VENV/bin/python" --quiet --compile-bytecode -e ".[$EXTRAS]"
  printf '%s\n' "$EXTRAS" >"$STAMP"
fi

# The JVM listener and instrumented operator (jvm/), compiled against the Spark jars pyspark
# ships into the `wmon` package, which carries it in its wheel: rebuilt only when a source is
# newer than the jar. Its entries are dated 1980-01-02 (the zip format's first day, and a jar
# is a zip), so that the same sources make the same jar.
build_listener_jar() {
  local pyspark
  pyspark=$("$VENV/bin/python" -c 'import os, pyspark; print(os.path.dirname(pyspark.__file__))') \
    || fail "cannot find pyspark in $VENV to build $JAR against its jars"
  say "building the JVM listener $JAR"
  rm -rf jvm/build/classes
  javac --release 17 -Xlint:all,-path -Werror -cp "$pyspark/jars/*" -d jvm/build/classes \
    jvm/src/wmon/spark/*.java jvm/src/wmon/spark/operator/*.java || fail "javac could not compile jvm/src (see above)"
  mkdir -p "$(dirname "$JAR")"
  jar --create --date=1980-01-02T00:00:00Z --file "$JAR.tmp" -C jvm/build/classes . \
    || fail "jar could not write $JAR"
  mv "$JAR.tmp" "$JAR"
}
if jar_is_stale; then
  build_listener_jar
else
  say "JVM listener is up to date"
fi

# Debian packages: npm for the dashboard's libraries; with --tests, chromium for its browser
# tests, prometheus and prometheus-alertmanager for the tests of its metrics and alerts.
apt_install() {
  local sudo=""
  [ "$(id -u)" -eq 0 ] || sudo=sudo
  say "installing Debian packages: $*"
  export DEBIAN_FRONTEND=noninteractive
  $sudo apt-get install -y -q "$@" >/dev/null 2>&1 \
    || { $sudo apt-get update -q >/dev/null && $sudo apt-get install -y -q "$@" >/dev/null; } \
    || fail "could not install $* with apt-get (install them, then run make setup again)"
}
command -v npm >/dev/null 2>&1 || apt_install nodejs npm
if [ "$TEST_PACKAGES" = yes ]; then
  command -v chromium >/dev/null 2>&1 || apt_install chromium
  # A real Prometheus for the tests of GET /metrics (its recommended node exporter is not needed).
  command -v prometheus >/dev/null 2>&1 || apt_install prometheus --no-install-recommends
  # A real Alertmanager for the tests of the `alertmanager` receiver kind.
  command -v prometheus-alertmanager >/dev/null 2>&1 \
    || apt_install prometheus-alertmanager --no-install-recommends
fi

NPM_STAMP=web/node_modules/.installed
if [ ! -f "$NPM_STAMP" ] || [ web/package-lock.json -nt "$NPM_STAMP" ]; then
  say "installing the dashboard's front-end libraries from the npm registry (npm ci)"
  (cd web && npm ci --no-audit --no-fund --loglevel=error >/dev/null) || fail "npm ci failed in web/"
  touch "$NPM_STAMP"
else
  say "front-end libraries are up to date"
fi

"$VENV/bin/wmon" db upgrade
