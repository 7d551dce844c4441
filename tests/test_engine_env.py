#!/usr/bin/env python3
"""The model library reads no environment variable: the programs read the engine's
variables (MT_COMPUTE_TYPE, MT_KERNELS, MT_CPU_HIDE, MT_SPLIT_MIN) through config/'s
settings table and pass them down in mt_model_options. Each is checked end to end on
mt-translate (--verbose names the kernels and compute type the model ran) and on
mt-server --print-config (the same names, one precedence: flag > environment)."""
import os
import shutil
import subprocess
import tempfile
import unittest

BUILD = os.environ.get("MT_BUILD_DIR", "build")
SOURCE = os.environ.get("MT_SOURCE_DIR", os.path.join(os.path.dirname(__file__), ".."))
CLI = os.path.join(BUILD, "cli", "mt-translate")
SERVER = os.path.join(BUILD, "server", "mt-server")
ENGINE_VARS = ("MT_COMPUTE_TYPE", "MT_KERNELS", "MT_CPU_HIDE", "MT_SPLIT_MIN")


def clean_env(**extra):
    env = {k: v for k, v in os.environ.items() if k not in ENGINE_VARS}
    env.update(extra)
    return env


class EngineEnvironment(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        if not os.path.exists(CLI) or not os.path.exists(SERVER):
            raise unittest.SkipTest(f"{CLI} or {SERVER} is not built")
        cls.tmp = tempfile.mkdtemp(prefix="mt-test-engine-env-")
        cls.model = os.path.join(cls.tmp, "model")
        subprocess.run(["/usr/bin/python3", os.path.join(SOURCE, "tools", "make_test_model.py"), cls.model,
                        "--seed", "5", "--eos-bias", "6", "--max-length", "16"],
                       check=True, capture_output=True, timeout=300)

    @classmethod
    def tearDownClass(cls):
        shutil.rmtree(cls.tmp, ignore_errors=True)

    def cli(self, env, args=()):
        return subprocess.run([CLI, "--model", self.model, "--verbose", *args], input=b"A dog runs.\n",
                              capture_output=True, env=env, timeout=120)

    def test_kernels_reach_the_model(self):
        proc = self.cli(clean_env(MT_KERNELS="scalar"))
        self.assertEqual(proc.returncode, 0, proc.stderr.decode())
        self.assertIn("+ scalar kernels", proc.stderr.decode())  # float32 on OpenBLAS + scalar
        proc = self.cli(clean_env(MT_KERNELS="avx1024"))
        self.assertEqual(proc.returncode, 2)
        self.assertIn("MT_KERNELS", proc.stderr.decode())

    def test_compute_type_and_cpu_hide_reach_the_model(self):
        proc = self.cli(clean_env(MT_COMPUTE_TYPE="int8", MT_CPU_HIDE="vnni,amx"))
        self.assertEqual(proc.returncode, 1, proc.stderr.decode())
        self.assertIn("compute type int8 is not available on this CPU", proc.stderr.decode())
        # the flag wins over the variable
        proc = self.cli(clean_env(MT_COMPUTE_TYPE="int8", MT_CPU_HIDE="vnni,amx"), ["--compute-type", "float32"])
        self.assertEqual(proc.returncode, 0, proc.stderr.decode())
        proc = self.cli(clean_env(MT_CPU_HIDE="sse"))
        self.assertEqual(proc.returncode, 2)
        self.assertIn("MT_CPU_HIDE", proc.stderr.decode())

    def test_split_min_is_checked(self):
        proc = self.cli(clean_env(MT_SPLIT_MIN="many"))
        self.assertEqual(proc.returncode, 2)
        self.assertIn("MT_SPLIT_MIN", proc.stderr.decode())
        self.assertEqual(self.cli(clean_env(MT_SPLIT_MIN="0")).returncode, 0)

    def test_server_reads_the_same_names(self):
        env = clean_env(MT_KERNELS="avx2", MT_CPU_HIDE="bf16", MT_SPLIT_MIN="3")
        proc = subprocess.run([SERVER, "--model", self.model, "--print-config"], capture_output=True, env=env,
                              timeout=60)
        self.assertEqual(proc.returncode, 0, proc.stderr.decode())
        out = proc.stdout.decode()
        self.assertIn('[engine]\nkernels = "avx2"\ncpu_hide = "bf16"\nsplit_min = 3\n', out)
        proc = subprocess.run([SERVER, "--model", self.model, "--kernels", "scalar", "--print-config"],
                              capture_output=True, env=env, timeout=60)
        self.assertIn('kernels = "scalar"', proc.stdout.decode())
        proc = subprocess.run([SERVER, "--model", self.model, "--print-config"], capture_output=True,
                              env=clean_env(MT_KERNELS="avx1024"), timeout=60)
        self.assertEqual(proc.returncode, 2)
        self.assertIn("engine.kernels", proc.stderr.decode())


if __name__ == "__main__":
    unittest.main()
