#!/usr/bin/env bash
# Every test suite and check, in the order CI runs them. `.ci/run` calls
# this script verbatim; run it locally before pushing.
set -euo pipefail
cd "$(dirname "$0")/.."

step() { printf '\n== %s\n' "$*"; }

step "format"
cargo fmt --all --check

step "lint"
cargo clippy --workspace --all-targets -- -D warnings

step "rustdoc (public items documented, links valid)"
RUSTDOCFLAGS="-D warnings" cargo doc --workspace --no-deps --quiet

step "tests: unit, properties, fuzz-corpus replay, scenarios, crash recovery, CLI end-to-end, differential vs git apply"
cargo test --workspace

step "C ABI: header current, C tests under valgrind, Go host"
bash scripts/test-ffi

step "Python package: wheel, stubtest, mypy --strict, pytest"
# The wheel is built once, in the dev profile: it shares the test build.
RT_PY_PROFILE="${RT_PY_PROFILE:-dev}" bash scripts/test-python
