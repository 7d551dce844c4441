#!/usr/bin/python3
"""The README's first command works as written: it installs what is needed (nothing when
everything is there), builds, and serves the bundled models: en->de (the default) and
de->en.

The command is read from README.md (the ```sh block after the line with the
`first-command` marker; without README.md, scripts/quickstart.sh itself) and run from
the repository root with "--port P" appended (a free loopback port; quickstart.sh hands
extra arguments to mt-server), in the background in its own process group. The test
waits for GET /health (bounded), translates a sentence in the native and the
LibreTranslate forms, checks the answer equals mt-translate's, does the same for a German
sentence with source "de" (with and without target), checks that a request naming no
language goes to en-de (the default), checks GET /languages, then stops the group.
Skipped while models/en-de/config.json does not exist.

InstallDeps runs scripts/install-deps.sh against a fake Debian (dpkg-query, apt-get, sudo
and id on a PATH of their own, MT_DEPS_SYSROOT for /usr/sbin and /etc): --serve installs
the serving packages only (no chromium, PyTorch, nginx, valgrind, clang); as root it runs
apt-get, as a user through sudo, and without sudo (or with a sudo that needs a password
and no terminal) it installs nothing and says what to run as root; nothing missing needs
no root; installing nginx-light keeps services from starting (policy-rc.d during the
install, removed after, an existing one left alone) and removes the default site link it
created, never one that was there before.

Env: MT_BUILD_DIR, MT_SOURCE_DIR, MT_SHARED_DIR. Prints "N passed, M failed".
"""
import json
import os
import shutil
import subprocess
import sys
import tempfile
import unittest

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import test_scripts as ts  # noqa: E402
from test_docker import readme_first_command  # noqa: E402

SOURCE = ts.SOURCE
MODEL = os.path.join(SOURCE, "models", "en-de")
MODEL_DE_EN = os.path.join(SOURCE, "models", "de-en")
SENTENCE = "A man in a blue shirt is riding a bike."
SENTENCE_DE = "Zwei Hunde spielen im Schnee."
HEALTH_TIMEOUT = 720  # the command may have to build first


def first_command():
    cmd = readme_first_command()
    if cmd is None:
        return "scripts/quickstart.sh", "scripts/quickstart.sh (README.md has no first-command marker)"
    return cmd, "README.md's first command"


class Quickstart(unittest.TestCase):
    def test_first_command_serves_bundled_model(self):
        if not os.path.exists(os.path.join(MODEL, "config.json")):
            self.skipTest("models/en-de/config.json does not exist yet (the bundled model is not "
                          "in the repository): the README's first command cannot serve it")
        cmd, what = first_command()
        self.assertNotIn("\n", cmd.strip(), "%s should be one command line: %r" % (what, cmd))
        self.assertIn("quickstart.sh", cmd, "%s should run scripts/quickstart.sh: %r" % (what, cmd))
        port = ts.free_port()
        line = "%s --port %d" % (cmd.strip(), port)
        print("  running (%s): %s" % (what, line))
        tmp = tempfile.mkdtemp(prefix="test_quickstart.")
        log = os.path.join(tmp, "quickstart.log")
        proc = None
        try:
            with open(log, "wb") as out:
                proc = subprocess.Popen(["bash", "-c", line], cwd=SOURCE, stdout=out, stderr=subprocess.STDOUT,
                                        stdin=subprocess.DEVNULL, start_new_session=True)
            url = "http://127.0.0.1:%d" % port
            ts.wait_health(url, proc, timeout=HEALTH_TIMEOUT, log=log)

            status, _, body = ts.http_request("POST", url + "/translate",
                                              {"text": SENTENCE, "source": "en", "target": "de"}, timeout=120)
            self.assertEqual(status, 200, body)
            answer = json.loads(body)
            translations = answer["translations"]
            self.assertEqual(len(translations), 1, answer)
            text = translations[0]["text"] if isinstance(translations[0], dict) else translations[0]
            self.assertTrue(text.strip(), answer)
            print("  %s -> %s" % (SENTENCE, text))

            status, _, body = ts.http_request("POST", url + "/translate",
                                              {"q": SENTENCE, "source": "en", "target": "de"}, timeout=120)
            self.assertEqual(status, 200, body)
            self.assertEqual(json.loads(body)["translatedText"], text)

            with open(log, "rb") as f:
                output = f.read().decode("utf-8", "replace")
            self.assertNotIn("install-deps: installing", output,
                             "install-deps.sh reinstalled packages that are present")

            # a request that names no language goes to the default model, en-de
            status, _, body = ts.http_request("POST", url + "/translate", {"text": SENTENCE}, timeout=120)
            self.assertEqual(status, 200, body)
            self.assertEqual((json.loads(body)["model"], json.loads(body)["translations"]), ("en-de", [text]))

            status, _, body = ts.http_request("POST", url + "/translate",
                                              {"text": SENTENCE_DE, "source": "de", "target": "en"}, timeout=120)
            self.assertEqual(status, 200, body)
            answer = json.loads(body)
            self.assertEqual(answer["model"], "de-en", answer)
            text_en = answer["translations"][0]
            print("  %s -> %s" % (SENTENCE_DE, text_en))
            status, _, body = ts.http_request("POST", url + "/translate", {"text": SENTENCE_DE, "source": "de"},
                                              timeout=120)
            self.assertEqual((status, json.loads(body)["translations"]), (200, [text_en]), body)

            status, _, body = ts.http_request("GET", url + "/languages", None, timeout=60)
            self.assertEqual(status, 200, body)
            targets = {lang["code"]: lang["targets"] for lang in json.loads(body)}
            self.assertEqual(targets, {"en": ["de"], "de": ["en"]})

            if os.access(ts.CLI, os.X_OK):
                for model, sentence, want in ((MODEL, SENTENCE, text), (MODEL_DE_EN, SENTENCE_DE, text_en)):
                    r = subprocess.run([ts.CLI, "--model", model], input=(sentence + "\n").encode(),
                                       capture_output=True, timeout=300)
                    self.assertEqual(r.returncode, 0, r.stderr)
                    self.assertEqual(r.stdout.decode().rstrip("\n"), want, "server and mt-translate disagree")
        finally:
            ts.stop(proc, timeout=30)
            if proc is not None and proc.returncode not in (0, -15, 143, 130, -2):
                print("  quickstart exited with %s%s" % (proc.returncode, ts.log_tail(log, 1500)))
            shutil.rmtree(tmp, ignore_errors=True)


# ------------------------------------------------------------ scripts/install-deps.sh

INSTALL_DEPS = os.path.join(SOURCE, "scripts", "install-deps.sh")

# A fake Debian: dpkg-query answers from a list of installed packages, apt-get logs its
# calls (and installs: nginx-light brings Debian's default site link, as the real one
# does), sudo and id behave as the case needs. Only these tools and a few real ones are
# on PATH, so "sudo is not installed" can be true.
FAKES = {
    "id": '#!/bin/sh\n[ "$1" = -u ] && echo "$FAKE_UID" || /usr/bin/id "$@"\n',
    "dpkg-query": '#!/bin/sh\nfor p; do :; done\ngrep -qx -- "$p" "$FAKE_INSTALLED" && printf "install ok installed" '
                  '&& exit 0\nexit 1\n',
    "apt-get": '#!/bin/bash\necho "${FAKE_AS:-user} apt-get $* policy=$([ -e "$MT_DEPS_SYSROOT/usr/sbin/policy-rc.d" ] '
               '&& echo yes || echo no)" >>"$FAKE_LOG"\n'
               'if [ "$1" = install ]; then for p; do case $p in -*|install) ;; *) echo "$p" >>"$FAKE_INSTALLED";; esac; done\n'
               '  case " $* " in *" nginx-light "*) echo nginx-common >>"$FAKE_INSTALLED"; mkdir -p "$MT_DEPS_SYSROOT/etc/nginx/sites-enabled"; '
               'ln -sf ../sites-available/default "$MT_DEPS_SYSROOT/etc/nginx/sites-enabled/default";; esac; fi\n',
    "sudo": '#!/bin/bash\nif [ "$1" = -n ]; then [ "$FAKE_SUDO" = nopass ]; exit; fi\nFAKE_AS=sudo exec "$@"\n',
}
REAL_TOOLS = ["bash", "sh", "grep", "sed", "printf", "chmod", "rm", "cat", "mkdir", "ln", "env", "dirname"]


class InstallDeps(unittest.TestCase):
    def setUp(self):
        self.tmp = tempfile.mkdtemp(prefix="test_install_deps.")
        self.bin = os.path.join(self.tmp, "bin")
        self.root = os.path.join(self.tmp, "root")
        os.makedirs(self.bin)
        os.makedirs(os.path.join(self.root, "usr", "sbin"))
        for name, text in FAKES.items():
            path = os.path.join(self.bin, name)
            with open(path, "w") as f:
                f.write(text)
            os.chmod(path, 0o755)
        for tool in REAL_TOOLS:
            os.symlink(shutil.which(tool), os.path.join(self.bin, tool))
        self.installed = os.path.join(self.tmp, "installed")
        self.log = os.path.join(self.tmp, "apt.log")
        open(self.installed, "w").close()

    def tearDown(self):
        shutil.rmtree(self.tmp, ignore_errors=True)

    def listed(self, mode):
        r = subprocess.run(["bash", INSTALL_DEPS, "--list", mode], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 0, r.stderr)
        return r.stdout.split()

    def run_deps(self, *args, uid=0, sudo=None, installed=()):
        with open(self.installed, "a") as f:
            f.writelines(p + "\n" for p in installed)
        env = {"PATH": self.bin, "FAKE_UID": str(uid), "FAKE_INSTALLED": self.installed, "FAKE_LOG": self.log,
               "MT_DEPS_SYSROOT": self.root, "HOME": self.tmp}
        if sudo:
            env["FAKE_SUDO"] = sudo
        elif os.path.exists(os.path.join(self.bin, "sudo")):
            os.remove(os.path.join(self.bin, "sudo"))
        r = subprocess.run(["/bin/bash", INSTALL_DEPS] + list(args), env=env, capture_output=True, text=True,
                           stdin=subprocess.DEVNULL, timeout=60)
        calls = open(self.log).read().splitlines() if os.path.exists(self.log) else []
        return r, calls

    def test_lists(self):
        serve, test = self.listed("--serve"), self.listed("--test")
        for p in ("build-essential", "meson", "libmicrohttpd-dev", "libdnnl-dev", "curl", "jq"):
            self.assertIn(p, serve)
        for p in ("chromium", "chromium-driver", "python3-torch", "nginx-light", "valgrind", "clang",
                  "libclang-rt-14-dev", "python3-matplotlib"):
            self.assertNotIn(p, serve)
            self.assertIn(p, test)
        self.assertTrue(set(serve) <= set(test))
        with open(os.path.join(SOURCE, "scripts", "quickstart.sh")) as f:
            quick = f.read()
        self.assertIn("\nscripts/install-deps.sh\n", quick)  # the default: --serve
        self.assertIn("scripts/build.sh build --programs", quick)
        with open(os.path.join(SOURCE, "scripts", "run-tests.sh")) as f:
            self.assertIn("install-deps.sh --test", f.read())

    def test_root_installs_serve_packages(self):
        r, calls = self.run_deps(uid=0)  # --serve is the default
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual(len(calls), 2, calls)
        self.assertTrue(calls[0].startswith("user apt-get update"), calls)
        installed = calls[1].split(" policy=")[0].split()[2:]
        self.assertEqual([p for p in installed if not p.startswith("-") and p != "install"], self.listed("--serve"))
        # a second run finds everything
        r, calls2 = self.run_deps("--serve", uid=0)
        self.assertEqual((r.returncode, calls2), (0, calls))
        self.assertIn("already installed", r.stdout)

    def test_user_without_sudo_is_told_what_to_run(self):
        r, calls = self.run_deps("--serve", uid=1000, installed=["meson"])
        self.assertEqual(r.returncode, 1)
        self.assertEqual(calls, [])
        self.assertIn("sudo is not installed", r.stderr)
        self.assertIn("apt-get install -y --no-install-recommends build-essential ninja-build", r.stderr)
        self.assertNotIn(" meson ", r.stderr.split("Run as root")[1])

    def test_user_with_sudo(self):
        r, calls = self.run_deps("--serve", uid=1000, sudo="password")
        self.assertEqual(r.returncode, 1)
        self.assertIn("needs a password and there is no terminal", r.stderr)
        self.assertEqual(calls, [])
        r, calls = self.run_deps("--serve", uid=1000, sudo="nopass")
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertEqual([c.split()[0:2] for c in calls], [["sudo", "apt-get"]] * 2)

    def test_everything_there_needs_no_root(self):
        r, calls = self.run_deps("--serve", uid=1000, installed=self.listed("--serve"))
        self.assertEqual((r.returncode, calls), (0, []), r.stderr)

    def test_nginx_default_site_not_enabled(self):
        r, calls = self.run_deps("--test", uid=0)
        self.assertEqual(r.returncode, 0, r.stderr)
        install = [c for c in calls if " install " in c]
        self.assertIn("nginx-light", install[0])
        self.assertTrue(install[0].endswith("policy=yes"), "services could start during the install")
        self.assertFalse(os.path.exists(os.path.join(self.root, "usr", "sbin", "policy-rc.d")), "policy-rc.d left")
        self.assertFalse(os.path.lexists(os.path.join(self.root, "etc", "nginx", "sites-enabled", "default")))
        self.assertIn("removed", r.stdout)

    def test_nginx_already_there_is_left_alone(self):
        site = os.path.join(self.root, "etc", "nginx", "sites-enabled", "default")
        os.makedirs(os.path.dirname(site))
        os.symlink("../sites-available/default", site)
        policy = os.path.join(self.root, "usr", "sbin", "policy-rc.d")
        with open(policy, "w") as f:
            f.write("#!/bin/sh\nexit 0\n")
        r, calls = self.run_deps("--test", uid=0, installed=["nginx-common"])
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertTrue(os.path.lexists(site), "a site the script did not create was removed")
        with open(policy) as f:
            self.assertEqual(f.read(), "#!/bin/sh\nexit 0\n")
        r, calls = self.run_deps("--test", uid=0)  # nginx-light present now: nothing to do
        self.assertIn("already installed", r.stdout)

    def test_bad_option(self):
        r = subprocess.run(["bash", INSTALL_DEPS, "--serv"], capture_output=True, text=True, timeout=30)
        self.assertEqual(r.returncode, 2)
        self.assertIn("--serve", r.stderr)


if __name__ == "__main__":
    sys.exit(ts.run_tests(__name__))
