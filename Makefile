# One place that runs the checks the way CI does. `.ci/run` calls `make test`.
CARGO ?= cargo

.PHONY: test unit it it-serial doc fmt-check clippy deploy-check module-cycles build bench fuzz

## Everything CI runs: format, lints, deploy checks, the unit tier, the integration tier
## and the doc tests.
test: fmt-check clippy deploy-check module-cycles unit it doc

## Every crate's unit, property and crash tests (benches run once as tests), and the
## integration-tests crate's own unit tests: only Rust needed, no Java, Maven or Go.
unit:
	$(CARGO) test --workspace --exclude integration-tests --all-targets
	$(CARGO) test -p integration-tests --lib --bins

## The integration tests (integration-tests/tests/*): our binaries as real processes,
## driven by the standard clients (Java, Go, Rust), Apache RocketMQ brokers, the bench
## and reliability drivers in --quick mode. A missing Java, Maven or Go fails the test
## (SLUICE_REQUIRE_TOOLS=1); under plain `cargo test` such tests are skipped, saying so.
## The binaries run two at a time (.ci/it-run: most of their time is waiting on JVMs,
## long polls and timers); `make it-serial` runs them one after the other as cargo does.
it:
	SLUICE_REQUIRE_TOOLS=1 CARGO=$(CARGO) python3 .ci/it-run

it-serial:
	SLUICE_REQUIRE_TOOLS=1 $(CARGO) test -p integration-tests --test '*'

doc:
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
FUZZ_TARGETS = frame_decode body_json config_parse commit_log_record consume_queue_unit ha_frame selector
FUZZ_SECONDS = 60
fuzz:
	cd fuzz && for t in $(FUZZ_TARGETS); do \
		mkdir -p target/work/$$t && \
		cargo +nightly fuzz run $$t target/work/$$t corpus/$$t -- -max_total_time=$(FUZZ_SECONDS) || exit 1; \
	done
