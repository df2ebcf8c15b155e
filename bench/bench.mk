# The benchmark (issue 4): `make bench`. Not part of `make test` or CI.
# Include from the main Makefile with:  include bench/bench.mk
.PHONY: bench
bench:
	bash bench/run.sh
