#!/usr/bin/env bash
# Unused-dependency check with cargo-machete: every crate in the workspace
# and the fuzz crate. It reads the sources, not the compiler's view (so it
# needs no nightly, as cargo-udeps would), and fails on a declared crate
# nothing names. A crate used only through a macro or a feature would be
# listed under `[package.metadata.cargo-machete] ignored` with the reason.
# Installs cargo-machete when it is missing.
#
# Usage: scripts/cargo-machete.sh
set -euo pipefail
cd "$(dirname "$0")/.."

MACHETE_VERSION=0.9.2
if ! cargo machete --version 2>/dev/null | grep -q "$MACHETE_VERSION"; then
  cargo install cargo-machete --locked --version "$MACHETE_VERSION"
fi

cargo machete
