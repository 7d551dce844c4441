"""The one runner of the Python test files: `sys.exit(testmain.run(__name__))`.

Runs the module's tests (or those named on the command line: `test_x.py TestClass ...`),
prints the closing line "N passed, M failed, K skipped" and returns the exit status meson
reads: 1 when a test failed or none ran, 77 (meson's SKIP) when every test skipped, else 0.
A skip is never counted as a pass.
"""
import sys
import unittest


def run(module_name, argv=None, stream=sys.stdout):
    argv = sys.argv[1:] if argv is None else argv
    names = [a for a in argv if not a.startswith("-")]
    loader = unittest.TestLoader()
    module = sys.modules[module_name]
    suite = loader.loadTestsFromNames(names, module) if names else loader.loadTestsFromModule(module)
    result = unittest.TextTestRunner(verbosity=2, stream=stream).run(suite)
    failed = len(result.failures) + len(result.errors) + len(result.unexpectedSuccesses)
    skipped = len(result.skipped)
    # A class whose setUpClass skips or fails is one entry and no run test: only the test
    # methods skipped or failed come out of testsRun.
    def ran(entries):
        return sum(1 for t, _ in entries if isinstance(t, unittest.TestCase))
    passed = result.testsRun - ran(result.failures + result.errors) - len(result.unexpectedSuccesses) \
        - ran(result.skipped)
    print("%d passed, %d failed, %d skipped" % (passed, failed, skipped))
    if failed:
        return 1
    if result.testsRun == 0 and skipped == 0:
        print("no test ran")
        return 1
    if passed == 0:
        return 77
    return 0
