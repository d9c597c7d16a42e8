"""The PASS/FAIL lines and the count the torch2 Python tests print
(test_binary.py, test_sdpa.py, test_sum.py): check(ok, name, detail) prints
one line (detail only on a failure) and counts it; summary() prints
"N passed, M failed" and returns the exit status."""


class Checks:
    def __init__(self):
        self.passed = self.failed = 0

    def __call__(self, ok, name, detail=""):
        print(f"{'PASS' if ok else 'FAIL'}: {name}" + (f"  [{detail}]" if not ok and detail else ""), flush=True)
        self.passed, self.failed = self.passed + bool(ok), self.failed + (not ok)

    def summary(self):
        print(f"{self.passed} passed, {self.failed} failed")
        return 0 if self.failed == 0 else 1
