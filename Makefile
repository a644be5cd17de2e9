# One place that runs the checks the way CI does. `.ci/run` calls `make test`.
CARGO ?= cargo

.PHONY: test fmt-check clippy unit build bench fuzz

## Everything CI runs: format, lints, and the whole test suite (unit, property,
## crash, and integration tests against real processes and the standard clients).
test: fmt-check clippy
	$(CARGO) test --workspace --all-targets
	$(CARGO) test --workspace --doc

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

build:
	$(CARGO) build --workspace --bins

## Criterion micro-benchmarks (figures go in issue notes / BENCHMARKS.md, not in tests).
bench:
	$(CARGO) bench --workspace -- --warm-up-time 1 --measurement-time 3

## A minute of each fuzz target (needs nightly and cargo-fuzz).
fuzz:
	cd fuzz && mkdir -p target/work/frame_decode target/work/body_json && \
	cargo +nightly fuzz run frame_decode target/work/frame_decode corpus/frame_decode -- -max_total_time=60 && \
	cargo +nightly fuzz run body_json target/work/body_json corpus/body_json -- -max_total_time=60
