"""Shared helpers of the analysis tests. Test files are named test_analysis_*.py so that they never
collide with tests/python/ when pytest runs both from the repository root."""

from __future__ import annotations

import os
import shutil
import subprocess
import sys
from pathlib import Path

import pytest

TESTS = Path(__file__).resolve().parent
FIXTURES = TESTS / "fixtures"
ANALYSIS = TESTS.parent

try:
    import flopscope_analysis  # noqa: F401
except ImportError:  # not installed (pip install -e analysis): import it from the source tree
    sys.path.insert(0, str(ANALYSIS))


@pytest.fixture
def fixture_dir(tmp_path):
    """Copies a fixture directory (run_cpu, run_gpu, single, bad/...) into tmp_path, so that
    commands that write into the run directory leave the committed fixtures alone."""

    def copy(name: str) -> Path:
        target = tmp_path / Path(name).name
        shutil.copytree(FIXTURES / name, target)
        return target

    return copy


def run_cli(*args, cwd=None) -> subprocess.CompletedProcess:
    """python -m flopscope_analysis ARGS, as a separate process (exit code, stdout, stderr)."""
    env = dict(os.environ)
    env["PYTHONPATH"] = os.pathsep.join([str(ANALYSIS), env.get("PYTHONPATH", "")]).rstrip(os.pathsep)
    env["MPLBACKEND"] = "Agg"
    return subprocess.run([sys.executable, "-m", "flopscope_analysis", *map(str, args)],
                          cwd=cwd, env=env, capture_output=True, text=True, timeout=120)
