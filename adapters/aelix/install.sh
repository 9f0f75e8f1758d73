#!/bin/sh
# Installs aelix 0.1.0b2 (PyPI aelix-coding-agent, aelix-agent-core and their dependencies) into
# adapters/aelix/.venv from requirements.txt: exact pins, every wheel checked against its sha256.
#
#   adapters/aelix/install.sh          # from anywhere; Python 3.11 (`python3`, or $PYTHON)
#
# The adapter (adapter.py) refuses to run on a venv this script did not finish: the last step
# records the sha256 of requirements.txt in .venv/agentsim-installed, and the adapter compares it.
set -eu
here=$(cd "$(dirname "$0")" && pwd)
python=${PYTHON:-python3}
venv="$here/.venv"
marker="$venv/agentsim-installed"

version=$("$python" -c 'import sys; print("%d.%d" % sys.version_info[:2])')
if [ "$version" != "3.11" ]; then
  echo "install.sh: aelix's wheels are pinned for CPython 3.11; $python is $version (set PYTHON)" >&2
  exit 2
fi
rm -f "$marker"
if [ ! -x "$venv/bin/python" ]; then
  "$python" -m venv "$venv"
fi
# The venv's bundled pip may be too old for hashed extras (pip.txt says why): the pinned one first.
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
  --require-hashes --only-binary :all: -r "$here/pip.txt"
"$venv/bin/python" -m pip install --quiet --disable-pip-version-check --no-input \
  --require-hashes --only-binary :all: -r "$here/requirements.txt"
"$venv/bin/python" -c 'import hashlib, sys; print(hashlib.sha256(open(sys.argv[1], "rb").read()).hexdigest())' \
  "$here/requirements.txt" > "$marker"
echo "install.sh: aelix installed into $venv"
