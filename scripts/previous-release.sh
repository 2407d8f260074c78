#!/usr/bin/env bash
# The previous landed version's release binary, for the upgrade tests
# (tests/replicas/rolling.py; docs/operations.md): the commit named in
# tests/upgrade/previous-release, built once per machine and cached by that
# commit, as the image's layers are. Prints the binary's path on its last
# line.
#
# CI caches every release binary it built (the image's, copied out) under
# its commit once the run passes (`--remember PATH`), so the previous
# landing's binary is normally there already. When it is not (a new
# machine), that commit's own Dockerfile is built with that commit's
# tests/containers/run.sh, in a git worktree, before this run builds its
# own image (the podman build cache makes it a crate rebuild, not a cold
# one).
#
# Usage: scripts/previous-release.sh            # the previous binary's path
#        scripts/previous-release.sh --remember BIN   # cache BIN as HEAD's
# Env: AEGIS_CACHE_DIR (default ~/.cache/aegis-gitea-mcp).
set -euo pipefail
cd "$(dirname "$0")/.."
CACHE="${AEGIS_CACHE_DIR:-$HOME/.cache/aegis-gitea-mcp}/releases"

cached_path() { echo "$CACHE/$1/aegis-gitea-mcp"; }

if [[ "${1:-}" == "--remember" ]]; then
  bin="${2:?--remember needs the binary}"
  head="$(git rev-parse HEAD)"
  mkdir -p "$CACHE/$head"
  install -m 0755 "$bin" "$CACHE/$head/aegis-gitea-mcp.tmp"
  mv "$CACHE/$head/aegis-gitea-mcp.tmp" "$(cached_path "$head")"
  echo "cached $(cached_path "$head")"
  exit 0
fi

commit="$(tr -d '[:space:]' < tests/upgrade/previous-release)"
if ! git cat-file -e "$commit^{commit}" 2>/dev/null; then
  echo "tests/upgrade/previous-release names $commit, which this clone does not have" >&2
  exit 1
fi
if ! git merge-base --is-ancestor "$commit" HEAD; then
  echo "tests/upgrade/previous-release names $commit, which is not an ancestor of HEAD" >&2
  exit 1
fi
bin="$(cached_path "$commit")"
if [[ -x "$bin" ]]; then
  echo "previous release $commit: cached" >&2
  echo "$bin"
  exit 0
fi

echo "previous release $commit: not cached, building it from its own Dockerfile" >&2
worktree="$(mktemp -d /tmp/aegis-previous-release.XXXXXX)"
trap 'git worktree remove --force "$worktree" >/dev/null 2>&1 || rm -rf "$worktree"' EXIT
git worktree add --detach "$worktree" "$commit" >/dev/null
mkdir -p "$CACHE/$commit"
(
  cd "$worktree"
  AEGIS_CONTAINERS_EXPORT_BINARY="$bin.tmp" AEGIS_CONTAINERS_IMAGE_ONLY=1 \
    bash tests/containers/run.sh >&2
)
mv "$bin.tmp" "$bin"
echo "$bin"
