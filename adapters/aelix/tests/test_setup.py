"""Bad setups end in a typed verdict: the aelix adapter, run without a usable install, answers
``hello`` and then the kit's ``start`` with one ``error`` line of code ``adapter.setup`` that names
what is missing and the install command, and exits 1, at once.

    python3 -m unittest discover -s adapters/aelix/tests

Each case copies the adapter's two files into a temporary folder, so the real
``adapters/aelix/.venv`` is neither used nor touched. Standard library only.
"""

from __future__ import annotations

import hashlib
import json
import os
import shutil
import subprocess
import sys
import tempfile
import time
import unittest

HERE = os.path.dirname(os.path.abspath(__file__))
ADAPTER_DIR = os.path.dirname(HERE)
SDK_DIR = os.path.join(ADAPTER_DIR, "..", "sdk", "python")
START = {
    "type": "start",
    "scenario": {
        "config": {"activeLeafId": None, "maxSteps": 8, "context": {"total": 100000, "reservedOutput": 0, "safetyMargin": 0}},
        "session": [],
        "resources": {"instructions": [], "skills": []},
        "tools": [],
        "extensions": [],
        "ids": {"prefix": "entry-", "start": 1},
        "clock": {"startMs": 1767225600000, "stepMs": 1000},
        "faults": {"appends": [], "writes": []},
    },
}


class SetupFailure(unittest.TestCase):
    def setUp(self) -> None:
        self.root = tempfile.mkdtemp(prefix="agentsim-aelix-test-")
        # The copy keeps the repository's layout: the SDK two folders up, as aelix_adapter.py expects.
        self.adapter_dir = os.path.join(self.root, "adapters", "aelix")
        os.makedirs(self.adapter_dir)
        for name in ("adapter.py", "aelix_adapter.py", "requirements.txt"):
            shutil.copy(os.path.join(ADAPTER_DIR, name), self.adapter_dir)
        shutil.copytree(SDK_DIR, os.path.join(self.root, "adapters", "sdk", "python"))

    def tearDown(self) -> None:
        shutil.rmtree(self.root, ignore_errors=True)

    def run_adapter(self) -> tuple:
        began = time.monotonic()
        process = subprocess.run(
            [sys.executable, os.path.join(self.adapter_dir, "adapter.py")],
            input=(json.dumps(START) + "\n").encode(),
            capture_output=True,
            timeout=30,
        )
        lines = [json.loads(line) for line in process.stdout.decode().splitlines()]
        return process.returncode, lines, process.stderr.decode(), time.monotonic() - began

    def assert_setup_error(self, needle: str) -> None:
        code, lines, stderr, seconds = self.run_adapter()
        self.assertEqual(code, 1, stderr)
        self.assertEqual([line["type"] for line in lines], ["hello", "error"], lines)
        self.assertEqual(lines[0]["protocol"], 2)
        error = lines[1]
        self.assertEqual(error["code"], "adapter.setup")
        self.assertIn(needle, error["message"])
        self.assertIn("adapters/aelix/install.sh", error["message"])
        # One line on stderr, no traceback wall.
        self.assertNotIn("Traceback", stderr)
        self.assertLess(seconds, 20)

    def make_venv(self, python: str, marker: str | None) -> None:
        venv_bin = os.path.join(self.adapter_dir, ".venv", "bin")
        os.makedirs(venv_bin)
        os.symlink(python, os.path.join(venv_bin, "python"))
        if marker is not None:
            with open(os.path.join(self.adapter_dir, ".venv", "agentsim-installed"), "w") as file:
                file.write(marker + "\n")

    def requirements_digest(self) -> str:
        with open(os.path.join(self.adapter_dir, "requirements.txt"), "rb") as file:
            return hashlib.sha256(file.read()).hexdigest()

    def test_no_venv(self) -> None:
        self.assert_setup_error("the aelix venv is missing")

    def test_unfinished_install(self) -> None:
        self.make_venv(sys.executable, marker=None)
        self.assert_setup_error("did not finish")

    def test_install_for_other_pins(self) -> None:
        self.make_venv(sys.executable, marker="0" * 64)
        self.assert_setup_error("is for other pins")

    def test_aelix_not_importable(self) -> None:
        # A finished-looking venv whose interpreter has no aelix: the import check reports it.
        self.make_venv(sys.executable, marker=self.requirements_digest())
        self.assert_setup_error("is not installed in the aelix venv")

    def test_shutdown_before_start_exits_zero(self) -> None:
        process = subprocess.run(
            [sys.executable, os.path.join(self.adapter_dir, "adapter.py")],
            input=b'{"type":"shutdown"}\n',
            capture_output=True,
            timeout=30,
        )
        self.assertEqual(process.returncode, 0)
        self.assertEqual([json.loads(line)["type"] for line in process.stdout.decode().splitlines()], ["hello"])


if __name__ == "__main__":
    unittest.main()
