# Sourced by the scripts: create the virtualenv once and keep it in step with pyproject.toml.
# Idempotent: a second run only checks that the installed project is current.
set -euo pipefail
root="$(cd "$(dirname "${BASH_SOURCE[0]}")/.." && pwd)"
cd "$root"
python="${PYTHON:-python3}"
if [ ! -x .venv/bin/python ]; then
  "$python" -m venv .venv
fi
stamp=.venv/.compactkit-installed
if [ ! -f "$stamp" ] || [ pyproject.toml -nt "$stamp" ]; then
  .venv/bin/python -m pip install --quiet --disable-pip-version-check --upgrade pip
  .venv/bin/python -m pip install --quiet --disable-pip-version-check -e ".[dev]"
  touch "$stamp"
fi
export PATH="$root/.venv/bin:$PATH"
