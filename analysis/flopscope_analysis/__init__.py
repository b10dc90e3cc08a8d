"""flopscope analysis: Google Benchmark JSON from flopscope's bench binaries -> tables, plots,
report.md, and measured-ceilings files. The input format is described in analysis/FORMAT.md."""

from .errors import AnalysisError
from .names import CaseName, CaseNameError, parse_case_name, strip_gbench_suffixes

__version__ = "0.1.0"
__all__ = ["AnalysisError", "CaseName", "CaseNameError", "parse_case_name", "strip_gbench_suffixes"]
