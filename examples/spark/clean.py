#!/usr/bin/env python3
"""Cleans a JSONL dataset of logged model outputs with PySpark and toolmend.

Each input line is {"id": <a whole number>, "text": "<the arguments a model wrote>"}. Two
ways, one result:

  in-process  `mapInArrow`: every executor mends its partitions with the toolmend Python
              package (`toolmend.mend_many`, the GIL released, as many threads as the task
              has cores: spark.task.cpus). Needs the toolmend wheel installed on the executors.
  pipe        `RDD.pipe` through the `toolmend args --records --input jsonl` command, for
              clusters where only the binary can be shipped (`--archives toolmend.tar.gz#tm`).

Both give one output row per input row, with its id: `ok`, the value as compact JSON (every
number as the model wrote it), the repairs, and for a failure its error code and message.

    spark-submit examples/spark/clean.py --mode in-process input.jsonl output/
    tar -czf toolmend.tar.gz -C target/release toolmend
    spark-submit --archives toolmend.tar.gz#tm examples/spark/clean.py --mode pipe \\
        --binary ./tm/toolmend input.jsonl output/

See docs/scale.md for running it on a cluster and the throughput measured per core.
"""

import argparse
import json
import shlex

INPUT_SCHEMA = "id long, text string"
OUTPUT_SCHEMA = "id long, ok boolean, value string, repairs string, error_code string, error_message string"


def mend_batches(batches):
    """mapInArrow's function: each Arrow batch of (id, text) mended in one `mend_many` call."""
    import pyarrow as pa
    from pyspark import TaskContext

    import toolmend

    # Spark runs one task per core it was given: each mends with its own cores only.
    context = TaskContext.get()
    threads = context.cpus() if context is not None else 0
    for batch in batches:
        records = toolmend.mend_many(batch.column("text").to_pylist(), threads=threads)
        yield pa.RecordBatch.from_arrays(
            [
                batch.column("id"),
                pa.array([r.ok for r in records], pa.bool_()),
                pa.array([r.json for r in records], pa.string()),
                pa.array([json.dumps(r.repairs, separators=(",", ":")) for r in records], pa.string()),
                pa.array([r.code for r in records], pa.string()),
                pa.array([r.message for r in records], pa.string()),
            ],
            names=["id", "ok", "value", "repairs", "error_code", "error_message"],
        )


def clean_in_process(spark, path):
    """The dataset at `path` mended in-process on the executors: a DataFrame of OUTPUT_SCHEMA."""
    return spark.read.schema(INPUT_SCHEMA).json(path).mapInArrow(mend_batches, OUTPUT_SCHEMA)


def record_row(line):
    """One record line of `toolmend args --records` as a row of OUTPUT_SCHEMA. The value's
    JSON text is cut out of the line as written, so numbers keep their spelling."""
    record = json.loads(line)
    error = record.get("error") or {}
    value = None
    if record["ok"]:
        value = _raw_value(line)
    repairs = json.dumps(record.get("repairs", []), separators=(",", ":"))
    return (record.get("id"), record["ok"], value, repairs, error.get("code"), error.get("message"))


def _raw_value(line):
    """The text of the top-level "value" member of a record line, as written. The members are
    walked one by one, so a string elsewhere (an id, say) that holds `"value":` is no match."""
    decoder = json.JSONDecoder()
    i = line.index("{") + 1
    while True:
        i = _skip_space(line, i)
        key, i = decoder.raw_decode(line, i)
        i = _skip_space(line, i)
        if line[i] != ":":
            raise ValueError(f"not a record: {line[:100]!r}")
        start = _skip_space(line, i + 1)
        _, end = decoder.raw_decode(line, start)
        if key == "value":
            return line[start:end]
        i = _skip_space(line, end)
        if line[i] != ",":
            raise ValueError(f"no value member in {line[:100]!r}")
        i += 1


def _skip_space(line, i):
    while line[i] in " \t\r\n":
        i += 1
    return i


def clean_with_cli(spark, path, binary="toolmend"):
    """The dataset at `path` piped through the toolmend CLI on the executors: a DataFrame of
    OUTPUT_SCHEMA. `binary` must be runnable on every executor (shipped with --files, or on
    PATH there)."""
    command = " ".join(shlex.quote(a) for a in [binary, "args", "--records", "--input", "jsonl"])
    # The CLI exits 1 when some inputs failed; their records are still written, one per line.
    records = spark.sparkContext.textFile(path).pipe(command, checkCode=False).map(record_row)
    return spark.createDataFrame(records, OUTPUT_SCHEMA)


def main():
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("input", help="JSONL with id and text")
    p.add_argument("output", help="output directory (Parquet)")
    p.add_argument("--mode", choices=["in-process", "pipe"], default="in-process")
    p.add_argument("--binary", default="toolmend", help="the toolmend binary for --mode pipe")
    args = p.parse_args()

    from pyspark.sql import SparkSession

    spark = SparkSession.builder.appName("toolmend-clean").getOrCreate()
    if args.mode == "in-process":
        out = clean_in_process(spark, args.input)
    else:
        out = clean_with_cli(spark, args.input, args.binary)
    out.write.mode("overwrite").parquet(args.output)
    spark.stop()


if __name__ == "__main__":
    main()
