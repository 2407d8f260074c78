#!/usr/bin/env bash
# Runs every fuzz target (fuzz/fuzz_targets, entry points in src/fuzzing.rs)
# for FUZZ_SECONDS each (default 60), starting from its checked-in corpus
# (fuzz/corpus/<target>, read only: new inputs go to a scratch directory),
# and fails on the first crash, invariant break, timeout or oversized
# allocation. Prints executions, executions per second and coverage per
# target. Installs cargo-fuzz when it is missing.
#
# These machines have the stable toolchain only: RUSTC_BOOTSTRAP=1 lets
# cargo-fuzz pass its nightly flags, and `-s none` builds without a
# sanitizer (the gateway forbids unsafe code, so AddressSanitizer would
# mostly watch the dependencies).
#
# Usage: [FUZZ_SECONDS=60] [FUZZ_SEED=0] scripts/fuzz.sh [target...]
#        (default: every target; FUZZ_SEED=0 is a random seed)
set -euo pipefail
cd "$(dirname "$0")/../fuzz"

FUZZ_VERSION=0.13.2
if ! cargo fuzz --version 2>/dev/null | grep -q "$FUZZ_VERSION"; then
  cargo install cargo-fuzz --locked --version "$FUZZ_VERSION"
fi
export RUSTC_BOOTSTRAP=1
# The instrumented build of several hundred crates takes most of this
# script's time, and the dependencies change rarely: their artifacts are
# kept outside the checkout (as a CI cache would keep them), so a fresh
# clone rebuilds only what changed. FUZZ_TARGET_DIR overrides the place.
export CARGO_TARGET_DIR="${FUZZ_TARGET_DIR:-$HOME/.cache/aegis-gitea-mcp/fuzz-target}"
seconds="${FUZZ_SECONDS:-60}"
# libFuzzer's seed for its mutations: 0 picks one at random. CI fixes it,
# so a run that passed explores the same inputs again (a new finding comes
# from a longer or differently seeded run, not from chance in a gate).
seed="${FUZZ_SEED:-0}"

cargo fuzz build -s none
if [ "$#" -gt 0 ]; then
  targets="$*"
else
  targets="$(cargo fuzz list)"
fi

scratch="$(mktemp -d)"
trap 'rm -rf "$scratch"' EXIT
printf '%-16s %12s %10s %8s %8s\n' target executions exec/s cov corpus
for target in $targets; do
  mkdir -p "$scratch/$target"
  log="$scratch/$target.log"
  # -malloc_limit_mb: one allocation over 256 MB from an input of at most
  # 64 KiB is a parser allocating without bound, and fails the run.
  if ! cargo fuzz run -s none "$target" "$scratch/$target" "corpus/$target" -- \
      -max_total_time="$seconds" -seed="$seed" -max_len=65536 -timeout=10 \
      -rss_limit_mb=1024 -malloc_limit_mb=256 -print_final_stats=1 >"$log" 2>&1; then
    tail -n 60 "$log"
    echo "fuzz target $target failed; the input is in fuzz/artifacts/$target/" >&2
    exit 1
  fi
  executions=$(sed -n 's/^stat::number_of_executed_units: *//p' "$log")
  rate=$(sed -n 's/^stat::average_exec_per_sec: *//p' "$log")
  cov=$(grep -E '^#[0-9]+' "$log" | sed -n 's/.* cov: \([0-9]*\).*/\1/p' | tail -n 1)
  corpus=$(find "$scratch/$target" "corpus/$target" -type f | wc -l)
  printf '%-16s %12s %10s %8s %8s\n' "$target" "$executions" "$rate" "${cov:-?}" "$corpus"
done
