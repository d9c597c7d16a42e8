"""A stand-in for the `expecttest` module (PyPI's, not packaged by Debian 12),
which torch.testing._internal.common_utils imports and whose TestCase every
PyTorch test case derives from. torch_suite.py puts this folder on
PYTHONPATH only when Debian's python3 cannot import the real one.

It offers what PyTorch's tests use: `ACCEPT` (never set: nothing here
rewrites a test file) and `TestCase.assertExpectedInline` and
`assertExpectedRaisesInline`, which compare the actual text with the
expected literal. Baseline and HCOps runs use the same module, so a
difference from the real one shows in both and is not counted."""
import textwrap
import unittest

ACCEPT = False


def _expected(text):
    """The literal as the test wrote it: a triple-quoted block may be indented
    with the code around it."""
    return textwrap.dedent(text)


class TestCase(unittest.TestCase):
    longMessage = True

    def assertExpectedInline(self, actual, expect, skip=0):
        self.assertMultiLineEqual(_expected(expect), actual)

    def assertExpectedRaisesInline(self, exc_type, callable, expect, *args, **kwargs):
        try:
            callable(*args, **kwargs)
        except exc_type as e:
            self.assertExpectedInline(str(e), expect, skip=1)
            return
        self.fail(f"did not raise when expected {exc_type.__name__}")
