#!/usr/bin/env bash
# Supply-chain checks with cargo-deny (deny.toml), offline: advisories
# against a snapshot of the RustSec database, licenses, bans, sources.
#
# The database cannot be fetched on these machines, so the snapshot comes
# from AEGIS_RUSTSEC_DB (a plain copy of rustsec/advisory-db), by default
# ../shared/rustsec/advisory-db beside the checkout or /work/shared's. It is
# copied into target/advisory-dbs under the name cargo-deny derives from its
# default URL, and committed there, because cargo-deny reads it as a git
# repository. Installs cargo-deny when it is missing.
#
# Usage: scripts/cargo-deny.sh [cargo-deny check arguments]
set -euo pipefail
cd "$(dirname "$0")/.."

DENY_VERSION=0.20.2
if ! cargo deny --version 2>/dev/null | grep -q "$DENY_VERSION"; then
  cargo install cargo-deny --locked --version "$DENY_VERSION"
fi

source_db="${AEGIS_RUSTSEC_DB:-}"
if [ -z "$source_db" ]; then
  for candidate in ../shared/rustsec/advisory-db /work/shared/rustsec/advisory-db; do
    if [ -d "$candidate" ]; then
      source_db="$candidate"
      break
    fi
  done
fi
if [ -z "$source_db" ] || [ ! -f "$source_db/README.md" ]; then
  echo "scripts/cargo-deny.sh: no RustSec advisory database snapshot found; set AEGIS_RUSTSEC_DB to a copy of rustsec/advisory-db" >&2
  exit 1
fi

# The directory name cargo-deny derives from its default `db-urls` entry.
db="target/advisory-dbs/advisory-db-3157b0e258782691"
rm -rf "$db"
mkdir -p "$(dirname "$db")"
cp -r "$source_db" "$db"
rm -rf "$db/.git"
git -C "$db" init -q
git -C "$db" add -A
git -C "$db" -c user.name=ci -c user.email=ci@localhost commit -qm snapshot
touch "$db/.git/FETCH_HEAD"
echo "RustSec snapshot: $source_db ($(find "$db/crates" -name '*.md' | wc -l) advisories)"

cargo deny --offline --locked check "$@"
