#!/usr/bin/python3
"""The shared Python test runner (tests/testmain.py) tells the truth: a module whose tests
all skip exits 77 (meson's SKIP), one that ran no test or had a failure exits 1, and the
closing line counts skips apart from passes."""
import io
import os
import sys
import types
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import testmain  # noqa: E402


def fake_module(name, **cases):
    mod = types.ModuleType(name)
    for cls_name, methods in cases.items():
        setattr(mod, cls_name, type(cls_name, (unittest.TestCase,), methods))
    sys.modules[name] = mod
    return name


def run_quietly(name):
    out, err = io.StringIO(), io.StringIO()
    saved = sys.stdout
    sys.stdout = out
    try:
        rc = testmain.run(name, argv=[], stream=err)
    finally:
        sys.stdout = saved
    return rc, out.getvalue().strip().splitlines()[-1]


class TestRunner(unittest.TestCase):
    def test_all_skipped_is_skip(self):
        name = fake_module("all_skip", T={"test_a": lambda self: self.skipTest("no daemon")})
        self.assertEqual(run_quietly(name), (77, "0 passed, 0 failed, 1 skipped"))

    def test_no_test_is_a_failure(self):
        self.assertEqual(run_quietly(fake_module("empty"))[0], 1)

    def test_failure_and_mixed(self):
        name = fake_module("mixed", T={"test_ok": lambda self: None,
                                       "test_skip": lambda self: self.skipTest("x"),
                                       "test_bad": lambda self: self.fail("no")})
        self.assertEqual(run_quietly(name), (1, "1 passed, 1 failed, 1 skipped"))

    def test_pass_with_a_skip_is_a_pass(self):
        name = fake_module("passing", T={"test_ok": lambda self: None,
                                         "test_skip": lambda self: self.skipTest("x")})
        self.assertEqual(run_quietly(name), (0, "1 passed, 0 failed, 1 skipped"))

    def test_class_skipped_in_setupclass_is_skip(self):
        def setup(cls):
            raise unittest.SkipTest("needs ../shared")
        name = fake_module("class_skip", T={"setUpClass": classmethod(setup), "test_a": lambda self: None,
                                            "test_b": lambda self: None})
        self.assertEqual(run_quietly(name), (77, "0 passed, 0 failed, 1 skipped"))

    def test_class_skip_beside_a_pass_is_a_pass(self):
        def setup(cls):
            raise unittest.SkipTest("needs ../shared")
        name = fake_module("class_skip_mixed", S={"setUpClass": classmethod(setup), "test_a": lambda self: None},
                           T={"test_ok": lambda self: None})
        self.assertEqual(run_quietly(name), (0, "1 passed, 0 failed, 1 skipped"))

    def test_class_error_in_setupclass_is_a_failure_not_a_negative_pass(self):
        def setup(cls):
            raise RuntimeError("no model")
        name = fake_module("class_error", T={"setUpClass": classmethod(setup), "test_a": lambda self: None})
        self.assertEqual(run_quietly(name), (1, "0 passed, 1 failed, 0 skipped"))


if __name__ == "__main__":
    sys.exit(testmain.run(__name__))
