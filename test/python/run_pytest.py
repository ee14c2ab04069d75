"""Runs pytest with the given arguments and exits 77 when it selected tests
and skipped every one of them, so that ctest (SKIP_RETURN_CODE 77) reports
the entry as skipped instead of passed. Any failure keeps pytest's exit
code; a selection that collects nothing (pytest's 5) is a failure too.

    python3 test/python/run_pytest.py [pytest arguments]
"""
import sys

import pytest


class Outcomes:
    def __init__(self):
        self.passed = self.failed = self.skipped = 0

    def pytest_runtest_logreport(self, report):
        if report.failed:
            self.failed += 1
        elif report.skipped:
            self.skipped += 1
        elif report.passed and report.when == "call":
            self.passed += 1


def main():
    outcomes = Outcomes()
    rc = int(pytest.main(sys.argv[1:], plugins=[outcomes]))
    if rc == 0 and outcomes.passed == 0 and outcomes.failed == 0 and outcomes.skipped > 0:
        print(f"run_pytest: all {outcomes.skipped} selected tests skipped: exit 77 (reported as skipped)")
        return 77
    if rc == 5:
        print("run_pytest: no test selected")
        return 1
    return rc


if __name__ == "__main__":
    sys.exit(main())
