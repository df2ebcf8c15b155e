"""A JSONL dataset of {"id", "text"} rows like logged model outputs, for the Spark test and
bench: the bench corpus's mix (clean, encoded, concatenated, broken, wrapped; bench/gen_corpus.py)
at its smaller sizes, ids in a shuffled order, and a few odd rows every pipeline must survive."""

import json
import os
import random
import sys

sys.path.insert(0, os.path.join(os.path.dirname(os.path.dirname(os.path.dirname(os.path.abspath(__file__)))), "bench"))
import gen_corpus  # noqa: E402

# Empty, blank, not an object, non-ASCII, an escaped lone surrogate, nesting past the limit,
# JSON null.
ODD = ["", "   ", "[1, 2]", "\u00e9\u00e8 {\"k\": \"\u00e9\"}", '{"a": "\\ud800"}', "{" * 5000, "null"]


def write(path, rows, seed=16, distinct=25000):
    """Writes `rows` rows (ids 3, 10, 17, ... shuffled) then the ODD rows (ids -1, -2, ...).
    Rows reuse `distinct` generated texts, which keeps making the data cheap."""
    rnd = random.Random(seed)
    # Rows of tens to a few hundred bytes.
    gen_corpus.gen_size = lambda r: int(r.uniform(20, 200))
    texts = [gen_corpus.arg_line(rnd)[1] for _ in range(min(rows, distinct))]
    ids = list(range(rows))
    rnd.shuffle(ids)
    with open(path, "w") as f:
        for n, i in enumerate(ids):
            f.write(json.dumps({"id": i * 7 + 3, "text": texts[n % len(texts)]}) + "\n")
        for i, text in enumerate(ODD):
            f.write(json.dumps({"id": -1 - i, "text": text}) + "\n")
