class AnalysisError(Exception):
    """Bad input: the command-line tool prints it as one line and exits with code 2."""
