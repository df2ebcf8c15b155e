"""docs/scale.md's cluster commands on a Spark standalone cluster: a master and a worker started
with `spark-class` on this machine (executors in JVMs of their own), the example submitted both
ways with `spark-submit --archives` in client mode, every row checked against
`toolmend args --records` on the same file.

Opt-in: `make test-cluster` (not part of `make test`) sets TOOLMEND_CLUSTER=1, the wheel
(TOOLMEND_WHEEL) and the binary (TOOLMEND_BINARY). Needs pyspark, pyarrow, pandas and venv-pack
in this interpreter, java on PATH, and pip able to install pyarrow and pandas into the packed
environment (from its cache or PyPI)."""

import os
import signal
import socket
import subprocess
import sys
import tarfile
import time

import pytest

if os.environ.get("TOOLMEND_CLUSTER") != "1":
    pytest.skip("opt-in: run by `make test-cluster`", allow_module_level=True)

# The dataset, the CLI's records and the row check of the local test.
from test_spark import HERE, check, dataset, expected  # noqa: E402,F401

import pyspark  # noqa: E402

SPARK_HOME = os.path.dirname(os.path.abspath(pyspark.__file__))
ENV = dict(os.environ, SPARK_HOME=SPARK_HOME, SPARK_LOCAL_IP="127.0.0.1")


def free_port():
    with socket.socket() as s:
        s.bind(("127.0.0.1", 0))
        return s.getsockname()[1]


def wait_for(what, ready, log, seconds=120):
    end = time.monotonic() + seconds
    while time.monotonic() < end:
        if ready():
            return
        time.sleep(0.5)
    with open(log, encoding="utf-8", errors="replace") as f:
        tail = f.read()[-3000:]
    pytest.fail("%s did not happen in %d s; log:\n%s" % (what, seconds, tail))


@pytest.fixture(scope="module")
def cluster(tmp_path_factory):
    """A standalone master and one worker (2 cores) on loopback; the master's URL."""
    work = tmp_path_factory.mktemp("cluster")
    spark_class = os.path.join(SPARK_HOME, "bin", "spark-class")
    port = free_port()
    url = "spark://127.0.0.1:%d" % port
    master_log, worker_log = work / "master.log", work / "worker.log"
    procs = []

    def start(args, log):
        with open(log, "w") as out:
            procs.append(
                subprocess.Popen(
                    [spark_class] + args, stdout=out, stderr=subprocess.STDOUT, env=ENV, start_new_session=True
                )
            )

    def accepts():
        try:
            socket.create_connection(("127.0.0.1", port), timeout=1).close()
            return True
        except OSError:
            return False

    try:
        start(["org.apache.spark.deploy.master.Master", "--host", "127.0.0.1", "--port", str(port),
               "--webui-port", str(free_port())], master_log)
        wait_for("the master listening", accepts, master_log)
        start(["org.apache.spark.deploy.worker.Worker", url, "--host", "127.0.0.1", "--cores", "2",
               "--memory", "2g", "--webui-port", str(free_port()), "--work-dir", str(work / "work")], worker_log)
        wait_for("the worker registering", lambda: "Registering worker" in master_log.read_text(), master_log)
        yield url
    finally:
        for proc in procs:
            try:
                os.killpg(proc.pid, signal.SIGTERM)
                proc.wait(timeout=30)
            except (ProcessLookupError, subprocess.TimeoutExpired):
                os.killpg(proc.pid, signal.SIGKILL)


def run(cmd, cwd):
    r = subprocess.run(cmd, cwd=cwd, env=ENV, capture_output=True, text=True, timeout=1800)
    assert r.returncode == 0, "%s\n%s" % (" ".join(map(str, cmd)), (r.stdout + r.stderr)[-4000:])


def submit(cluster, args, cwd):
    """spark-submit in client mode: the driver runs this interpreter (which has pyspark), as
    docs/scale.md says a client-mode driver needs."""
    run([os.path.join(SPARK_HOME, "bin", "spark-submit"), "--master", cluster,
         "--conf", "spark.pyspark.driver.python=" + sys.executable,
         "--conf", "spark.ui.enabled=false"] + args, cwd)


class Parquet:
    """What `check` reads: the job's Parquet output as an Arrow table."""

    def __init__(self, path):
        import pyarrow.parquet as pq

        self.table = pq.read_table(str(path))

    def toArrow(self):
        return self.table


def test_in_process_with_a_packed_venv(cluster, dataset, expected, tmp_path):
    # docs/scale.md, In-process: a venv packed with venv-pack -p, shipped with --archives.
    run([sys.executable, "-m", "venv", "env"], tmp_path)
    run(["env/bin/pip", "install", "-q", "--disable-pip-version-check", os.environ["TOOLMEND_WHEEL"],
         "pyarrow", "pandas<3", "venv-pack"], tmp_path)
    run(["env/bin/venv-pack", "-q", "-p", "env", "-o", "env.tar.gz"], tmp_path)
    out = tmp_path / "out"
    submit(cluster, ["--archives", "env.tar.gz#environment",
                     "--conf", "spark.pyspark.python=./environment/bin/python",
                     os.path.join(HERE, "clean.py"), "--mode", "in-process", str(dataset), str(out)], tmp_path)
    check(Parquet(out), expected)


def test_pipe_with_the_binary_in_an_archive(cluster, dataset, expected, tmp_path):
    # docs/scale.md, Pipe: the binary in a tar archive, shipped with --archives.
    with tarfile.open(tmp_path / "toolmend.tar.gz", "w:gz") as tar:
        tar.add(os.environ["TOOLMEND_BINARY"], arcname="toolmend")
    out = tmp_path / "out"
    submit(cluster, ["--archives", "toolmend.tar.gz#tm",
                     "--conf", "spark.pyspark.python=" + sys.executable,
                     os.path.join(HERE, "clean.py"), "--mode", "pipe", "--binary", "./tm/toolmend",
                     str(dataset), str(out)], tmp_path)
    check(Parquet(out), expected)
