#!/usr/bin/env bash
# Builds (once per machine) the OpenTelemetry Collector of manifest.yaml
# with the Collector Builder from the Go module proxy, in a cache outside
# the checkout, and prints the binary's path as its last line.
set -euo pipefail

here="$(cd "$(dirname "$0")" && pwd)"
version="0.165.0"
cache="${OTELCOL_CACHE_DIR:-$HOME/.cache/aegis-gitea-mcp/otelcol}/$version"
bin="$cache/build/otelcol-aegis-test"
manifest_sum="$(sha256sum "$here/manifest.yaml" | cut -c1-16)"

if [ -x "$bin" ] && [ "$(cat "$cache/manifest.sum" 2>/dev/null)" = "$manifest_sum" ]; then
  echo "$bin"
  exit 0
fi

mkdir -p "$cache/bin"
if [ ! -x "$cache/bin/builder" ]; then
  echo "installing the Collector Builder $version" >&2
  GOBIN="$cache/bin" go install "go.opentelemetry.io/collector/cmd/builder@v$version" >&2
fi
cp "$here/manifest.yaml" "$cache/manifest.yaml"
echo "building the Collector (OTLP receiver, debug exporter)" >&2
(cd "$cache" && ./bin/builder --config manifest.yaml >&2)
echo "$manifest_sum" > "$cache/manifest.sum"
echo "$bin"
