#!/usr/bin/env bash
# The Kubernetes tools of CI, built once per machine from the Go module proxy
# and cached outside the checkout; prints the binary's path as its last line.
#
#   tests/kubernetes/tools.sh helm       Helm v4.3.2 (go install helm.sh/helm/v4/cmd/helm)
#   tests/kubernetes/tools.sh validate   tests/kubernetes/validate (k8s.io/api v0.37.2),
#                                        keyed by the hash of its sources
#
# Cache: ${AEGIS_CACHE_DIR:-~/.cache/aegis-gitea-mcp}/kubernetes/
#   helm-v4.3.2/helm
#   validate-<hash>/validate      (older hashes are removed)
# A cold build takes about 5 minutes for Helm and 1 for the validator on
# 2 cores; a warm call returns at once.
set -euo pipefail

HELM_VERSION="v4.3.2"
here="$(cd "$(dirname "$0")" && pwd)"
cache="${AEGIS_CACHE_DIR:-$HOME/.cache/aegis-gitea-mcp}/kubernetes"
GO="${GO:-$(command -v go || echo /usr/local/go/bin/go)}"
[[ -x "$GO" ]] || { echo "tools.sh: no Go toolchain (set GO=/path/to/go)" >&2; exit 1; }
mkdir -p "$cache"

case "${1:-}" in
  helm)
    dir="$cache/helm-$HELM_VERSION"
    bin="$dir/helm"
    if [[ -x "$bin" ]] && [[ "$("$bin" version --template '{{.Version}}' 2>/dev/null)" == "$HELM_VERSION" ]]; then
      echo "$bin"
      exit 0
    fi
    echo "tools.sh: building Helm $HELM_VERSION from the Go module proxy (once per machine)" >&2
    tmp="$(mktemp -d "$cache/helm-build.XXXXXX")"
    trap 'rm -rf "$tmp"' EXIT
    # The version is stamped as Helm's own Makefile does (a plain go install
    # reports only "v4.3").
    (cd "$tmp" && GOBIN="$tmp/bin" CGO_ENABLED=0 nice -n 10 "$GO" install -trimpath \
      -ldflags "-s -w -X helm.sh/helm/v4/internal/version.version=$HELM_VERSION" \
      "helm.sh/helm/v4/cmd/helm@$HELM_VERSION") >&2
    [[ "$("$tmp/bin/helm" version --template '{{.Version}}')" == "$HELM_VERSION" ]] \
      || { echo "tools.sh: the built helm does not say $HELM_VERSION" >&2; exit 1; }
    mkdir -p "$dir"
    mv -f "$tmp/bin/helm" "$bin"
    echo "$bin"
    ;;
  validate)
    src="$here/validate"
    key="$(cat "$src/go.mod" "$src/go.sum" "$src"/*.go | sha256sum | cut -c1-16)"
    dir="$cache/validate-$key"
    bin="$dir/validate"
    if [[ -x "$bin" ]]; then
      echo "$bin"
      exit 0
    fi
    echo "tools.sh: building the manifest validator (k8s.io/api from the Go module proxy)" >&2
    mkdir -p "$dir"
    (cd "$src" && CGO_ENABLED=0 GOFLAGS="-mod=readonly -buildvcs=false" nice -n 10 "$GO" build -trimpath -o "$bin.tmp" .) >&2
    mv -f "$bin.tmp" "$bin"
    for old in "$cache"/validate-*; do
      [[ "$old" == "$dir" ]] || rm -rf "$old"
    done
    echo "$bin"
    ;;
  *)
    echo "usage: tests/kubernetes/tools.sh helm|validate" >&2
    exit 2
    ;;
esac
