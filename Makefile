# One place that runs the checks the way CI does. `.ci/run` calls `make test`.
CARGO ?= cargo

.PHONY: test fmt-check clippy deploy-check unit build bench fuzz

## Everything CI runs: format, lints, and the whole test suite (unit, property,
## crash, and integration tests against real processes and the standard clients).
test: fmt-check clippy deploy-check
	$(CARGO) test --workspace --all-targets
	$(CARGO) test --workspace --doc

fmt-check:
	$(CARGO) fmt --all -- --check

clippy:
	$(CARGO) clippy --workspace --all-targets -- -D warnings

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

## A minute of each fuzz target (needs nightly and cargo-fuzz).
fuzz:
	cd fuzz && mkdir -p target/work/frame_decode target/work/body_json && \
	cargo +nightly fuzz run frame_decode target/work/frame_decode corpus/frame_decode -- -max_total_time=60 && \
	cargo +nightly fuzz run body_json target/work/body_json corpus/body_json -- -max_total_time=60
