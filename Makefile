# One place that runs the checks the way CI does. `.ci/run` calls `make test`.
CARGO ?= cargo

.PHONY: test fmt-check clippy deploy-check module-cycles unit build bench fuzz

## Everything CI runs: format, lints, and the whole test suite (unit, property,
## crash, and integration tests against real processes and the standard clients).
test: fmt-check clippy deploy-check module-cycles
	$(CARGO) test --workspace --all-targets
	$(CARGO) test --workspace --doc

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

## No module of any crate reaches, through its uses, a module that reaches back to it
## (parents and children excepted: that is the module tree).
module-cycles:
	python3 .ci/module-cycles .

## deploy/ without starting anything: shell syntax (shellcheck if installed), broker
## configs, systemd units (systemd-analyze verify if installed), Kubernetes manifests.
## The configs and local-cluster.sh run for real in integration-tests/tests/deploy.rs.
deploy-check:
	bash deploy/check.sh

build:
	$(CARGO) build --workspace --bins

## Criterion micro-benchmarks (figures go in issue notes / BENCHMARKS.md, not in tests).
bench:
	$(CARGO) bench --workspace -- --warm-up-time 1 --measurement-time 3

## A minute of each fuzz target (needs nightly and cargo-fuzz); new inputs go to
## fuzz/target/work/<target>, the seeds in fuzz/corpus/<target> stay as they are.
FUZZ_TARGETS = frame_decode body_json config_parse commit_log_record consume_queue_unit ha_frame
FUZZ_SECONDS = 60
fuzz:
	cd fuzz && for t in $(FUZZ_TARGETS); do \
		mkdir -p target/work/$$t && \
		cargo +nightly fuzz run $$t target/work/$$t corpus/$$t -- -max_total_time=$(FUZZ_SECONDS) || exit 1; \
	done
