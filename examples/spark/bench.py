#!/usr/bin/env python3
"""Throughput of examples/spark/clean.py in local mode: rows per second, and per core, of each
way (in-process, pipe) on a generated dataset (examples/spark/dataset.py), the output computed
in full and thrown away (Spark's `noop` sink). Spark's start is not counted; reading the JSONL is.

    python examples/spark/bench.py --rows 1000000 --cores 2

Needs pyspark, pyarrow, pandas and the toolmend package in the interpreter, and java.
"""

import argparse
import os
import sys
import tempfile
import time

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path.insert(0, HERE)
import clean  # noqa: E402
import dataset  # noqa: E402


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("--rows", type=int, default=1_000_000)
    p.add_argument("--cores", type=int, default=2, help="local[N]")
    p.add_argument("--rounds", type=int, default=2, help="best of N runs of each way")
    args = p.parse_args()

    import toolmend
    from pyspark.sql import SparkSession

    os.environ.setdefault("SPARK_LOCAL_IP", "127.0.0.1")
    os.environ["PYSPARK_PYTHON"] = sys.executable
    with tempfile.TemporaryDirectory() as tmp:
        path = os.path.join(tmp, "input.jsonl")
        dataset.write(path, args.rows)
        size = os.path.getsize(path)
        spark = (
            SparkSession.builder.master(f"local[{args.cores}]")
            .config("spark.ui.enabled", "false")
            .config("spark.ui.showConsoleProgress", "false")
            .config("spark.driver.host", "127.0.0.1")
            .config("spark.driver.bindAddress", "127.0.0.1")
            .getOrCreate()
        )
        spark.sparkContext.setLogLevel("ERROR")
        # The workers unpickle clean.py's functions by module name: ship the module.
        spark.sparkContext.addPyFile(os.path.join(HERE, "clean.py"))
        ways = {
            "in-process (mapInArrow, toolmend.mend_many)": lambda: clean.clean_in_process(spark, path),
            "pipe (RDD.pipe, toolmend args)": lambda: clean.clean_with_cli(spark, path, toolmend.binary_path()),
        }
        print(f"{args.rows + len(dataset.ODD)} rows, {size / 1e6:.1f} MB, local[{args.cores}], best of {args.rounds}")
        for name, make in ways.items():
            best = None
            for _ in range(args.rounds):
                started = time.perf_counter()
                make().write.format("noop").mode("overwrite").save()
                took = time.perf_counter() - started
                best = took if best is None else min(best, took)
            rate = args.rows / best
            print(f"{name}: {best:.1f} s, {rate:,.0f} rows/s, {rate / args.cores:,.0f} rows/s per core, "
                  f"{size / best / 1e6 / args.cores:.1f} MB/s per core")
        spark.stop()


if __name__ == "__main__":
    main()
