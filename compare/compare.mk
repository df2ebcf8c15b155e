# Differential comparison against json_repair (Python) and jsonrepair (JavaScript).
# Include from the main Makefile with:  include compare/compare.mk
COMPARE_DIR := $(patsubst %/,%,$(dir $(lastword $(MAKEFILE_LIST))))

.PHONY: compare compare-md compare-timing
compare:            ## run every case through the three tools, show where they differ
	$(COMPARE_DIR)/run.sh $(COMPARE_ARGS)
compare-md:         ## the same, as a Markdown table
	$(COMPARE_DIR)/run.sh --markdown $(COMPARE_ARGS)
compare-timing:     ## time the three tools on adversarial inputs (linear-time check)
	$(COMPARE_DIR)/run.sh --timing $(COMPARE_ARGS)
