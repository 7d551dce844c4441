#!/usr/bin/python3
"""deploy/: the systemd unit and the Kubernetes manifests agree with the real server.

Kubernetes: rendered with `kubectl kustomize` when kubectl is there (else the listed
manifests are read as they are: each carries its own selectors); the container port is
the port the server is told to use, the Service reaches it, the probe paths answer 200 on
a real mt-server, the grace period outlasts the drain timeout, the pod runs as the image's
non-root user on a read-only root filesystem with resources set, the HPA and the PDB point
at the Deployment's pods, and every MT_* variable is a setting the server knows.
systemd: the same for its Environment, TimeoutStopSec against the drain timeout, and the
sandboxing options (with `systemd-analyze security --offline` where it exists).
"""
import json
import os
import re
import shutil
import subprocess
import sys
import unittest

import yaml

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
import mtfixtures as ts  # noqa: E402

DEPLOY = os.path.join(ts.SRC, "deploy")


def server_settings():
    """The environment variables mt-server --help lists."""
    out = subprocess.run([ts.SERVER, "--help"], capture_output=True, text=True, timeout=60).stdout
    return set(re.findall(r"\bMT_[A-Z0-9_]+\b", out))


def kubernetes_docs():
    kdir = os.path.join(DEPLOY, "kubernetes")
    if shutil.which("kubectl"):
        r = subprocess.run(["kubectl", "kustomize", kdir], capture_output=True, text=True, timeout=120)
        if r.returncode == 0:
            return [d for d in yaml.safe_load_all(r.stdout) if d], "kubectl kustomize"
    with open(os.path.join(kdir, "kustomization.yaml")) as f:
        resources = yaml.safe_load(f)["resources"]
    docs = []
    for name in resources:
        with open(os.path.join(kdir, name)) as f:
            docs += [d for d in yaml.safe_load_all(f) if d]
    return docs, "manifests as written"


class TestKubernetes(unittest.TestCase):
    @classmethod
    def setUpClass(cls):
        docs, cls.how = kubernetes_docs()
        cls.by_kind = {d["kind"]: d for d in docs}
        cls.dep = cls.by_kind["Deployment"]
        cls.pod = cls.dep["spec"]["template"]
        cls.ctr = cls.pod["spec"]["containers"][0]
        cls.env = {e["name"]: e["value"] for e in cls.ctr["env"] if "value" in e}
        cls.env_from = {e["name"]: e["valueFrom"] for e in cls.ctr["env"] if "valueFrom" in e}

    def test_every_kind_is_there(self):
        for kind in ("Deployment", "Service", "HorizontalPodAutoscaler", "PodDisruptionBudget"):
            self.assertIn(kind, self.by_kind, self.how)

    def test_ports_and_service(self):
        port = {p["name"]: p["containerPort"] for p in self.ctr["ports"]}
        self.assertEqual(port["http"], int(self.env["MT_PORT"]))
        self.assertEqual(self.env["MT_HOST"], "0.0.0.0")
        svc = self.by_kind["Service"]["spec"]
        self.assertIn(svc["ports"][0]["targetPort"], (port["http"], "http"))
        labels = self.pod["metadata"]["labels"]
        for sel in (svc["selector"], self.dep["spec"]["selector"]["matchLabels"],
                    self.by_kind["PodDisruptionBudget"]["spec"]["selector"]["matchLabels"]):
            self.assertTrue(set(sel.items()) <= set(labels.items()), (sel, labels))
        hpa = self.by_kind["HorizontalPodAutoscaler"]["spec"]["scaleTargetRef"]
        self.assertEqual((hpa["kind"], hpa["name"]), ("Deployment", self.dep["metadata"]["name"]))

    def test_probes_answer_on_the_real_server(self):
        paths = {self.ctr[p]["httpGet"]["path"] for p in ("startupProbe", "readinessProbe", "livenessProbe")}
        self.assertEqual(paths, {"/health/ready", "/health/live"})
        srv = ts.Server(["--model", ts.BUNDLED], name="deploy")
        try:
            for path in paths:
                self.assertEqual(srv.request("GET", path)[0], 200, path)
        finally:
            self.assertEqual(srv.stop(), 0)

    def test_drain_fits_in_the_grace_period(self):
        grace = self.pod["spec"]["terminationGracePeriodSeconds"]
        self.assertGreater(grace, float(self.env["MT_DRAIN_TIMEOUT"]) + self.prestop_seconds())

    def prestop_seconds(self):
        """The preStop hook's sleep: `sleep: {seconds: N}` or an exec of `sleep N`."""
        pre = self.ctr.get("lifecycle", {}).get("preStop")
        self.assertTrue(pre, "no preStop: the server closes its listener on SIGTERM while the "
                             "Service still routes new connections to the pod")
        if "sleep" in pre:
            return float(pre["sleep"]["seconds"])
        cmd = pre["exec"]["command"]
        self.assertEqual(cmd[0].rsplit("/", 1)[-1], "sleep", cmd)
        return float(cmd[1])

    def test_prestop_outlasts_endpoint_propagation(self):
        """Endpoint removal reaches kube-proxy and ingress controllers a few seconds after the
        pod turns Terminating; the sleep must outlast that (5 s at least), and the image must
        have the sleep it execs."""
        self.assertGreaterEqual(self.prestop_seconds(), 5)
        pre = self.ctr["lifecycle"]["preStop"]
        if "exec" in pre:  # debian:12-slim's coreutils: /bin/sleep, on the read-only root
            with open(os.path.join(ts.SRC, "docker", "Dockerfile")) as f:
                self.assertRegex(f.read(), r"(?m)^FROM debian:(12|bookworm)-slim\s*$")

    def test_image_tag_and_pull_policy(self):
        image = self.ctr["image"]
        name, _, tag = image.rpartition(":")
        self.assertTrue(name and "/" not in tag, "no tag: %s means :latest" % image)
        self.assertNotEqual(tag, "latest")
        with open(os.path.join(ts.SRC, "meson.build")) as f:
            version = re.search(r"version\s*:\s*'([^']+)'", f.read()).group(1)
        self.assertEqual(tag, version, "the image tag is the version built")
        self.assertIn(self.ctr.get("imagePullPolicy"), ("IfNotPresent", "Always"))
        with open(os.path.join(DEPLOY, "kubernetes", "kustomization.yaml")) as f:
            for img in yaml.safe_load(f).get("images", []):
                self.assertNotEqual(str(img.get("newTag")), "latest")

    def test_tmp_holds_the_spool(self):
        """The /tmp emptyDir holds the file spool: MT_MAX_FILE_JOBS files of at most
        4 x MT_MAX_FILE_BYTES + 1 MiB (server/lt_files.c). A pod whose emptyDir outgrows its
        sizeLimit is evicted, so the limit must hold a full spool (it was 256 Mi)."""
        r = subprocess.run([ts.SERVER, "--print-config", "--model", ts.BUNDLED], capture_output=True, text=True,
                           timeout=60, env=dict(os.environ, **self.env))
        self.assertEqual(r.returncode, 0, r.stderr)
        conf = r.stdout
        file_bytes = int(re.search(r"(?m)^max_file_bytes = (\d+)", conf).group(1))
        jobs = int(re.search(r"(?m)^max_file_jobs = (\d+)", conf).group(1))
        spool = jobs * (4 * file_bytes + (1 << 20))
        vol = {v["name"]: v for v in self.pod["spec"]["volumes"]}
        tmp = [m["name"] for m in self.ctr["volumeMounts"] if m["mountPath"] == "/tmp"][0]
        limit = vol[tmp]["emptyDir"]["sizeLimit"]
        m = re.fullmatch(r"(\d+)(Ki|Mi|Gi)", str(limit))
        self.assertTrue(m, limit)
        size = int(m.group(1)) << {"Ki": 10, "Mi": 20, "Gi": 30}[m.group(2)]
        self.assertGreaterEqual(size, spool, "emptyDir %s < spool bound %d MiB (%d jobs x %d bytes)"
                                % (limit, spool >> 20, jobs, file_bytes))
        self.assertNotIn("MT_SPOOL_DIR", self.env)  # the spool is in $TMPDIR, i.e. /tmp

    def test_non_root_read_only_with_resources(self):
        sc, csc = self.pod["spec"]["securityContext"], self.ctr["securityContext"]
        self.assertTrue(sc["runAsNonRoot"])
        with open(os.path.join(ts.SRC, "docker", "Dockerfile")) as f:
            user = re.search(r"^USER (\d+):(\d+)", f.read(), re.M)
        self.assertEqual((sc["runAsUser"], sc["runAsGroup"]), (int(user.group(1)), int(user.group(2))))
        self.assertTrue(csc["readOnlyRootFilesystem"])
        self.assertFalse(csc["allowPrivilegeEscalation"])
        self.assertEqual(csc["capabilities"]["drop"], ["ALL"])
        self.assertIn("/tmp", [m["mountPath"] for m in self.ctr["volumeMounts"]])
        for k in ("requests", "limits"):
            self.assertIn("cpu", self.ctr["resources"][k])
            self.assertIn("memory", self.ctr["resources"][k])

    def test_environment_names_are_settings(self):
        self.assertEqual((set(self.env) | set(self.env_from)) - server_settings(), set())

    def test_shared_state_from_an_optional_secret(self):
        """The database URL comes from the Secret mt-shared-state (key url); without it
        (optional) each pod keeps its own state, as one machine does."""
        ref = self.env_from["MT_SHARED_STATE"]["secretKeyRef"]
        self.assertEqual((ref["name"], ref["key"], ref.get("optional")), ("mt-shared-state", "url", True))
        self.assertNotIn("MT_SHARED_STATE", self.env)  # never a URL with a password in the manifest


class TestKubernetesPostgres(unittest.TestCase):
    """deploy/kubernetes-postgres: the base plus an in-cluster PostgreSQL (StatefulSet +
    Service) and the Secret that points the replicas at it; the KEDA example counts the
    queue's jobs."""
    KDIR = os.path.join(DEPLOY, "kubernetes-postgres")

    def test_overlay(self):
        if shutil.which("kubectl"):
            r = subprocess.run(["kubectl", "kustomize", self.KDIR], capture_output=True, text=True, timeout=120)
            self.assertEqual(r.returncode, 0, r.stderr)
            docs = [d for d in yaml.safe_load_all(r.stdout) if d]
            how = "kubectl kustomize"
        else:
            with open(os.path.join(self.KDIR, "kustomization.yaml")) as f:
                k = yaml.safe_load(f)
            docs = []
            for name in k["resources"]:
                path = os.path.join(self.KDIR, name)
                if os.path.isdir(path):
                    docs += kubernetes_docs()[0]
                else:
                    with open(path) as f:
                        docs += [d for d in yaml.safe_load_all(f) if d]
            for g in k["secretGenerator"]:
                docs.append({"kind": "Secret", "metadata": {"name": g["name"]},
                             "stringData": dict(kv.split("=", 1) for kv in g["literals"])})
            how = "manifests as written"
        kinds = {}
        for d in docs:
            kinds.setdefault(d["kind"], []).append(d)
        for kind in ("Deployment", "Service", "StatefulSet", "Secret", "HorizontalPodAutoscaler"):
            self.assertIn(kind, kinds, how)
        secret = kinds["Secret"][0]
        data = secret.get("stringData") or {k: __import__("base64").b64decode(v).decode()
                                           for k, v in secret["data"].items()}
        dep = kinds["Deployment"][0]["spec"]["template"]["spec"]["containers"][0]
        ref = [e for e in dep["env"] if e["name"] == "MT_SHARED_STATE"][0]["valueFrom"]["secretKeyRef"]
        self.assertEqual(ref["name"], secret["metadata"]["name"])
        sts = kinds["StatefulSet"][0]
        pg = sts["spec"]["template"]["spec"]["containers"][0]
        pw = [e for e in pg["env"] if e["name"] == "POSTGRES_PASSWORD"][0]["valueFrom"]["secretKeyRef"]
        self.assertEqual((pw["name"], pw["key"]), (secret["metadata"]["name"], "password"))
        svc = [s for s in kinds["Service"] if s["metadata"]["name"] == sts["spec"]["serviceName"]][0]
        self.assertRegex(data[ref["key"]], r"^postgresql://[^@]+@%s:%d/" % (svc["metadata"]["name"],
                                                                          svc["spec"]["ports"][0]["port"]))
        self.assertIn(data["password"], data[ref["key"]])
        self.assertEqual(sts["spec"]["template"]["metadata"]["labels"], svc["spec"]["selector"])

    def test_keda_counts_the_job_queue(self):
        with open(os.path.join(self.KDIR, "keda-scaledobject.yaml")) as f:
            docs = {d["kind"]: d for d in yaml.safe_load_all(f) if d}
        trig = docs["ScaledObject"]["spec"]["triggers"][0]
        self.assertEqual(trig["type"], "postgresql")
        self.assertIn("FROM mt_jobs", trig["metadata"]["query"])
        self.assertEqual(docs["ScaledObject"]["spec"]["scaleTargetRef"]["name"], "mt-server")


class TestComposePostgres(unittest.TestCase):
    def test_replicas_share_the_postgres_service(self):
        with open(os.path.join(ts.SRC, "docker", "compose.scale.yml")) as f:
            c = yaml.safe_load(f)
        mt, pg = c["services"]["mt"], c["services"]["postgres"]
        self.assertIn("postgres", mt["depends_on"])
        self.assertEqual(mt["depends_on"]["postgres"]["condition"], "service_healthy")
        self.assertIn("healthcheck", pg)
        self.assertIn("@postgres:5432/", mt["environment"]["MT_SHARED_STATE"])
        self.assertNotIn("POSTGRES_PASSWORD", mt["environment"]["MT_SHARED_STATE"])  # PGPASSWORD instead
        self.assertIn("PGPASSWORD", mt["environment"])


class TestSystemd(unittest.TestCase):
    UNIT = os.path.join(DEPLOY, "systemd", "mt-server.service")

    @classmethod
    def setUpClass(cls):
        cls.keys = {}
        with open(cls.UNIT) as f:
            for line in f:
                line = line.strip()
                if line and not line.startswith(("#", "[")) and "=" in line:
                    k, v = line.split("=", 1)
                    cls.keys.setdefault(k, []).append(v)

    def test_exec_and_environment(self):
        exec_start = self.keys["ExecStart"][0].split()
        self.assertTrue(exec_start[0].endswith("/mt-server"))
        env = dict(kv.split("=", 1) for e in self.keys["Environment"] for kv in e.split())
        self.assertEqual(set(env) - server_settings(), set())
        self.assertGreater(float(self.keys["TimeoutStopSec"][0]), float(env["MT_DRAIN_TIMEOUT"]))
        self.assertNotIn("ExecReload", self.keys)  # SIGHUP does not reload (README)
        # the server accepts its command line and environment (models from this checkout)
        args = [a.replace("/usr/local/share/mt/models", os.path.join(ts.SRC, "models")) for a in exec_start[1:]]
        r = subprocess.run([ts.SERVER] + args + ["--print-config"], capture_output=True, text=True, timeout=60,
                           env=dict(os.environ, **env))
        self.assertEqual(r.returncode, 0, r.stderr)
        self.assertIn("drain_timeout = 30", r.stdout)

    def test_system_call_filter_allows_what_the_server_calls(self):
        """OpenBLAS and oneDNN call mbind / set_mempolicy / sched_setaffinity, the document
        reader's child sets rlimits: `~@resources` killed the server with SIGSYS at start
        under systemd 252 (scripts/docker-selftest.sh systemd runs the unit for real)."""
        needed = {"mbind", "set_mempolicy", "sched_setaffinity", "setrlimit", "prlimit64", "madvise",
                  "clone3", "clone", "mmap", "mprotect", "sched_getaffinity"}
        allow, deny = set(), set()
        for v in self.keys["SystemCallFilter"]:
            target = deny if v.startswith("~") else allow
            target.update(v.lstrip("~").split())
        self.assertNotIn("@resources", deny)
        tool = shutil.which("systemd-analyze")
        if not tool:
            self.assertFalse(needed & deny)
            return

        def expand(names):
            out = set()
            for n in names:
                if not n.startswith("@"):
                    out.add(n)
                    continue
                r = subprocess.run([tool, "syscall-filter", n], capture_output=True, text=True, timeout=60)
                self.assertEqual(r.returncode, 0, r.stderr)
                for line in r.stdout.splitlines()[1:]:
                    w = line.strip()
                    if w and not w.startswith("#"):
                        out |= expand([w]) if w.startswith("@") else {w}
            return out
        allowed = expand(allow) - expand(deny)
        self.assertFalse(needed - allowed, "the filter denies %s" % sorted(needed - allowed))

    def test_sandboxed(self):
        for k, v in (("DynamicUser", "yes"), ("ProtectSystem", "strict"), ("ProtectHome", "yes"),
                     ("NoNewPrivileges", "yes"), ("PrivateTmp", "yes"), ("PrivateDevices", "yes")):
            self.assertEqual(self.keys.get(k), [v], k)
        self.assertEqual(self.keys.get("CapabilityBoundingSet"), [""])
        tool = shutil.which("systemd-analyze")
        if not tool:
            self.skipTest("systemd-analyze is not installed")
        r = subprocess.run([tool, "security", "--offline=true", self.UNIT], capture_output=True, text=True,
                           timeout=120)
        m = re.search(r"Overall exposure level for \S+: ([0-9.]+)", r.stdout)
        if not m:
            self.skipTest("this systemd-analyze cannot judge a unit file offline: " + r.stderr[-200:])
        self.assertLessEqual(float(m.group(1)), 2.0, r.stdout[-2000:])


if __name__ == "__main__":
    import testmain
    sys.exit(testmain.run(__name__))
