"""A stand-in for a library's test suite, for test_suite_runner.py: it behaves
differently under LD_PRELOAD, so linalg_suites.py's verdicts can be checked
on known outcomes (a pass, a failure, a crash, a test after the crash)."""
