# Sourced by the scripts: create the virtualenv once and keep it in step with pyproject.toml.
# Idempotent: a second run only checks that the installed project is current.
# COMPACTKIT_EXTRAS picks what to install: "" (the default) is the library alone, which is all
# the demo needs; scripts/test asks for "dev" (test tools, SQL drivers, framework integrations).
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python="${PYTHON:-python3}"
extras="${COMPACTKIT_EXTRAS:-}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=".venv/.compactkit-installed${extras:+-$extras}"
dev_stamp=".venv/.compactkit-installed-dev"
current() { [ -f "$1" ] && [ ! pyproject.toml -nt "$1" ]; }
# The dev install holds everything the library alone needs, so it also serves the demo.
if ! current "$stamp" && ! { [ -z "$extras" ] && current "$dev_stamp"; }; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".${extras:+[$extras]}"
  touch "$stamp"
fi
export PATH="$root/.venv/bin:$PATH"
