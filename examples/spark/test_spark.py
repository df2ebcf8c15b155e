"""The Spark example on 200,000 rows in local mode: both ways give one row per input row, with
its id, and the values of `toolmend args --records` on the same file.

Needs pyspark (with pyarrow and pandas) in the interpreter, java on PATH, the toolmend package
installed: `make test-spark` sets that up. Without pyspark or java the tests are skipped, saying
why."""

import json
import os
import shutil
import subprocess
import sys

import pytest

HERE = os.path.dirname(os.path.abspath(__file__))
ROWS = int(os.environ.get("TOOLMEND_SPARK_ROWS", "200000"))
pyspark = pytest.importorskip(
    "pyspark", reason="pyspark is not installed here and could not be from PyPI (`make test-spark` installs it)"
)
if shutil.which("java") is None and not os.environ.get("JAVA_HOME"):
    pytest.skip(
        "no java on PATH and no JAVA_HOME: Spark needs a JRE (.ci/run installs Debian's "
        "openjdk-17-jre-headless; it could not be installed here)",
        allow_module_level=True,
    )

sys.path.insert(0, HERE)
import clean  # noqa: E402
import dataset as data  # noqa: E402

import toolmend  # noqa: E402


@pytest.fixture(scope="module")
def dataset(tmp_path_factory):
    """ROWS rows of {"id", "text"} and the odd rows (examples/spark/dataset.py)."""
    path = tmp_path_factory.mktemp("spark") / "input.jsonl"
    data.write(path, ROWS)
    return path


@pytest.fixture(scope="module")
def expected(dataset):
    """id -> (ok, the value's JSON text as the CLI wrote it, repairs, error code, message), from
    `toolmend args --records --input jsonl` on the same file."""
    out = subprocess.run(
        [toolmend.binary_path(), "args", "--records", "--input", "jsonl", str(dataset)],
        capture_output=True,
        text=True,
    ).stdout
    records = {}
    decoder = json.JSONDecoder()
    for line in out.splitlines():
        record = json.loads(line)
        value = None
        if record["ok"]:
            # The CLI writes ok, line, id, then value: its text, numbers as written.
            start = line.index(',"value":', line.index('"id":')) + len(',"value":')
            value = line[start : decoder.raw_decode(line, start)[1]]
            assert json.loads(value) == record["value"]
        error = record.get("error") or {}
        records[record["id"]] = (record["ok"], value, record.get("repairs"), error.get("code"), error.get("message"))
    assert len(records) == ROWS + len(data.ODD)
    return records


@pytest.fixture(scope="module")
def spark():
    from pyspark.sql import SparkSession

    # Local mode talks to itself on loopback only.
    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    # The executors' Python workers run this interpreter, where toolmend is installed.
    os.environ["PYSPARK_PYTHON"] = sys.executable
    session = (
        SparkSession.builder.master("local[2]")
        .appName("toolmend-test")
        .config("spark.ui.enabled", "false")
        .config("spark.sql.shuffle.partitions", "4")
        .config("spark.driver.host", "127.0.0.1")
        .config("spark.driver.bindAddress", "127.0.0.1")
        .getOrCreate()
    )
    session.sparkContext.setLogLevel("ERROR")
    # The workers unpickle clean.py's functions by module name: ship the module, as a job
    # that imports clean.py from its own script must (the test's working directory alone
    # would hide that).
    session.sparkContext.addPyFile(os.path.join(HERE, "clean.py"))
    yield session
    session.stop()


def check(df, expected):
    """Every output row against the CLI's record for its id."""
    # Arrow brings the rows to the driver far faster than collect()'s Row objects.
    if hasattr(df, "toArrow"):
        columns = df.toArrow().to_pydict()
    else:  # pyspark < 4
        rows = df.collect()
        columns = {k: [r[k] for r in rows] for k in df.columns}
    ids = columns["id"]
    assert len(ids) == len(expected), "one output row per input row"
    assert len(set(ids)) == len(ids), "no id twice"
    failed = 0
    for n, row_id in enumerate(ids):
        assert row_id in expected, row_id
        ok, value, repairs, code, message = expected[row_id]
        got = (columns["ok"][n], columns["value"][n], columns["error_code"][n], columns["error_message"][n])
        assert got == (ok, value, code, message), (row_id, got, expected[row_id])
        if ok:
            assert json.loads(columns["repairs"][n]) == repairs, row_id
        else:
            failed += 1
    # The mix has failures (the odd rows, some cut-off inputs), but few.
    assert 3 <= failed < len(ids) // 10


def test_in_process_on_the_executors(spark, dataset, expected):
    check(clean.clean_in_process(spark, str(dataset)), expected)


def test_pipe_through_the_cli(spark, dataset, expected):
    check(clean.clean_with_cli(spark, str(dataset), toolmend.binary_path()), expected)


def test_raw_value_ignores_lookalikes_in_other_members():
    line = '{"ok":true,"line":1,"id":"x\\"value\\":9","value":{"n":1.50},"repairs":[],"dropped":[]}'
    assert clean._raw_value(line) == '{"n":1.50}'
    assert clean.record_row(line)[:3] == ('x"value":9', True, '{"n":1.50}')
