#!/usr/bin/env bash
# Command one: installs what is missing, builds, runs the default suite on every device present
# and writes results/runs/<run-id>/ (JSON per bench binary, report.md, plots). Prints that path
# last. `./bench.sh --quick` runs a short suite (under a minute).
set -euo pipefail
cd "$(dirname "$0")"
scripts/setup.sh
exec .venv/bin/python scripts/run_suite.py "$@"
