"""The command line's start: SimPy imported without importlib.metadata (protosim._startup),
with the same simpy.__version__, and the real importlib.metadata afterwards."""

from __future__ import annotations

import importlib.metadata
import json
import subprocess
import sys


def test_cli_imports_simpy_without_importlib_metadata():
    code = ("import sys, json; import protosim.cli, simpy; had = 'importlib.metadata' in sys.modules; "
            "import importlib.metadata as m; "
            "print(json.dumps([simpy.__version__, had, m.version('simpy'), type(m).__name__, hasattr(m, 'distributions')]))")
    out = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True).stdout
    version, had, real, kind, full = json.loads(out)
    assert version == real == importlib.metadata.version("simpy")
    assert not had and kind == "module" and full


def test_version_flag_still_answers():
    out = subprocess.run([sys.executable, "-m", "protosim.cli", "--version"], capture_output=True, text=True)
    assert out.returncode == 0 and out.stdout.strip() == f"protosim {importlib.metadata.version('protosim')}"
