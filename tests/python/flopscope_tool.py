"""The built `flopscope` tool, for the tests of tests/python: its path (in FLOPSCOPE_BUILD_DIR,
build/ by default; a test is skipped where it is not built) and a runner."""
import os
import subprocess
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parents[2]
TOOL = ROOT / os.environ.get("FLOPSCOPE_BUILD_DIR", "build") / "tools" / "flopscope"


def tool():
    if not TOOL.exists():
        pytest.skip(f"{TOOL} not built (build the 'flopscope' target, or set FLOPSCOPE_BUILD_DIR)")
    return TOOL


def run(*args, stdin=None):
    """flopscope with these arguments (and `stdin` as text): the CompletedProcess. The timeout makes
    a hang one failed test rather than a stuck suite."""
    return subprocess.run([str(tool()), *args], input=stdin, capture_output=True, text=True, timeout=120)
