#!/usr/bin/env bash
# Build a pinned Gitea release from the Go module proxy with the local Go toolchain,
# and cache it outside the repository:
#
#   ${AEGIS_CACHE_DIR:-~/.cache/aegis-gitea-mcp}/gitea-<version>          the binary
#   ${AEGIS_CACHE_DIR:-~/.cache/aegis-gitea-mcp}/gitea-<version>-static/  templates/ options/ public/
#
# The binary is built without the `bindata` tag (the module zip holds no generated
# bindata.dat), so Gitea reads templates/options/public from STATIC_ROOT_PATH at run time;
# gitea.sh points STATIC_ROOT_PATH at the -static dir above.
#
# Gitea's go.mod has `replace` directives, so `go install module@version` refuses it. We build
# it as a dependency of a throw-away wrapper module (in the cache dir) that repeats them.
#
# Since 1.27 Gitea's module path is `gitea.dev` (also for its sdk and actions-proto-go), a
# host the module proxy here does not serve. The same module zips are served under their old
# paths (code.gitea.io/...), whose go.mod already declares the gitea.dev path, so the wrapper
# maps gitea.dev/* onto those module-cache directories with directory `replace`s. The sdk is
# missing from the checksum DB under its old path, so those aliased downloads skip the
# checksum DB and are verified here instead, against the h1: hashes in Gitea's own go.sum
# (which itself comes from the checksum-DB-verified Gitea zip).
#
# Env: GITEA_VERSION (default 1.27.1), AEGIS_CACHE_DIR, GO (go binary), GITEA_REBUILD=1 to
# force a rebuild, GITEA_BUILD_NICE (default 15).
set -euo pipefail

GITEA_VERSION="${GITEA_VERSION:-1.27.1}"
GITEA_VERSION="${GITEA_VERSION#v}"
CACHE_DIR="${AEGIS_CACHE_DIR:-${HOME}/.cache/aegis-gitea-mcp}"
BIN="${CACHE_DIR}/gitea-${GITEA_VERSION}"
STATIC="${CACHE_DIR}/gitea-${GITEA_VERSION}-static"
WRAP="${CACHE_DIR}/build-${GITEA_VERSION}"
NICE="${GITEA_BUILD_NICE:-15}"

log() { printf '[build-gitea] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

if [[ -z "${GO:-}" ]]; then
  if command -v go >/dev/null 2>&1; then GO="$(command -v go)"
  elif [[ -x /usr/local/go/bin/go ]]; then GO=/usr/local/go/bin/go
  else die "no Go toolchain found (set GO=/path/to/go)"; fi
fi
command -v python3 >/dev/null 2>&1 || die "python3 is required"

if [[ "${GITEA_REBUILD:-0}" != 1 && -x "$BIN" && -d "$STATIC/templates" && -d "$STATIC/options" ]] \
   && "$BIN" --version >/dev/null 2>&1; then
  log "cached: $BIN ($("$BIN" --version 2>/dev/null | sed -n 1p))"
  echo "$BIN"
  exit 0
fi

mkdir -p "$CACHE_DIR"
cd "$CACHE_DIR"   # outside any Go module
START=$(date +%s)
log "building Gitea ${GITEA_VERSION} with $("$GO" version)"

# 1. Download Gitea's module zip (verified against the checksum DB under code.gitea.io/gitea).
mod_dir() { # <module@version> [extra env...] -> prints the module-cache dir
  local spec="$1"; shift
  local json
  if ! json="$(env "$@" "$GO" mod download -json "$spec" 2>&1)"; then
    log "go mod download $spec failed:"; printf '%s\n' "$json" >&2; return 1
  fi
  printf '%s' "$json" | python3 -c '
import json, sys
d = json.load(sys.stdin)
if d.get("Error"): sys.exit("error: " + d["Error"])
print(d["Dir"])'
}
SRC="$(mod_dir "code.gitea.io/gitea@v${GITEA_VERSION}")" || die "cannot download code.gitea.io/gitea@v${GITEA_VERSION}"
log "module source: $SRC"

MODPATH="$(awk '$1=="module"{print $2; exit}' "$SRC/go.mod")"
GOVER="$(awk '$1=="go"{print $2; exit}' "$SRC/go.mod")"
LOCALGO="$("$GO" env GOVERSION)"; LOCALGO="${LOCALGO#go}"
log "module path: $MODPATH, go directive: $GOVER, local go: $LOCALGO"

# 2. If go.mod asks for a newer Go than the local one, let the go command fetch that
#    toolchain from the module proxy (golang.org/toolchain).
export GOTOOLCHAIN="${GOTOOLCHAIN:-local}"
if [[ "$(printf '%s\n%s\n' "$GOVER" "$LOCALGO" | sort -V | tail -n1)" != "$LOCALGO" ]]; then
  GOTOOLCHAIN="go${GOVER}"
  log "go.mod needs go ${GOVER} > ${LOCALGO}: using GOTOOLCHAIN=${GOTOOLCHAIN}"
fi

# 3. Directory replaces for gitea.dev/* (1.27+): fetch each under its old code.gitea.io path
#    and verify it against Gitea's go.sum under its new path.
REPLACES=()
if [[ "$MODPATH" != "code.gitea.io/gitea" ]]; then
  [[ "$MODPATH" == gitea.dev ]] || die "unexpected module path $MODPATH"
  REPLACES+=("replace ${MODPATH} => ${SRC}")
  while read -r dep ver; do
    alias="code.gitea.io/${dep#gitea.dev/}"
    dir="$(mod_dir "${alias}@${ver}" "GONOSUMDB=${alias}")" \
      || die "cannot download ${alias}@${ver} (alias of ${dep})"
    python3 - "$dir" "$dep" "$ver" "$SRC/go.sum" <<'PY' || die "hash check failed for ${dep}@${ver}"
# Recompute Go's dirhash "h1:" of a module dir under another module path and compare it
# with go.sum (golang.org/x/mod/sumdb/dirhash.Hash1).
import base64, hashlib, os, sys
d, mod, ver, gosum = sys.argv[1:]
def h1(files):  # files: list of (name, path)
    s = hashlib.sha256()
    for name, path in sorted(files):
        with open(path, "rb") as f:
            s.update(("%s  %s\n" % (hashlib.sha256(f.read()).hexdigest(), name)).encode())
    return "h1:" + base64.b64encode(s.digest()).decode()
files = []
for root, _, names in os.walk(d):
    for n in names:
        p = os.path.join(root, n)
        files.append(("%s@%s/%s" % (mod, ver, os.path.relpath(p, d).replace(os.sep, "/")), p))
want = {}
for line in open(gosum):
    f = line.split()
    if len(f) == 3 and f[0] == mod and f[1] in (ver, ver + "/go.mod"):
        want[f[1]] = f[2]
got = {ver: h1(files), ver + "/go.mod": h1([("go.mod", os.path.join(d, "go.mod"))])}
for k in (ver, ver + "/go.mod"):
    if k not in want:
        sys.exit("go.sum has no entry for %s %s" % (mod, k))
    if want[k] != got[k]:
        sys.exit("hash mismatch for %s %s: go.sum %s, got %s" % (mod, k, want[k], got[k]))
print("[build-gitea] verified %s %s against Gitea's go.sum (%s)" % (mod, ver, want[ver]), file=sys.stderr)
PY
    REPLACES+=("replace ${dep} => ${dir}")
  done < <(awk '
    $1=="require" && $2=="(" {inreq=1; next}
    inreq && $1==")" {inreq=0; next}
    inreq && $1 ~ /^gitea\.dev\// {print $1, $2}
    $1=="require" && $2 ~ /^gitea\.dev\// {print $2, $3}' "$SRC/go.mod")
fi

# 4. The throw-away wrapper module: require Gitea, repeat its replace directives.
rm -rf "$WRAP"; mkdir -p "$WRAP"
{
  echo "// Generated by tests/e2e/build-gitea.sh; not part of the project."
  echo "module aegis-e2e/gitea-build"
  echo
  echo "go ${GOVER}"
  echo
  echo "require ${MODPATH} v${GITEA_VERSION}"
  echo
  for r in "${REPLACES[@]}"; do echo "$r"; done
  awk '
    $1=="replace" && $2=="(" {inrep=1; next}
    inrep && $1==")" {inrep=0; next}
    inrep {print "replace " $0; next}
    $1=="replace" {print}' "$SRC/go.mod"
} > "$WRAP/go.mod"
cp "$SRC/go.sum" "$WRAP/go.sum"; chmod u+w "$WRAP/go.sum"
log "wrapper module: $WRAP/go.mod"
sed 's/^/    /' "$WRAP/go.mod" >&2

# 5. SQLite: up to 1.26 via mattn/go-sqlite3 (cgo, tags sqlite sqlite_unlock_notify);
#    1.27 defaults to the pure-Go modernc driver (no tag needed).
if [[ -f "$SRC/models/db/driver_sqlite_modernc.go" ]]; then
  TAGS=""
  export CGO_ENABLED="${CGO_ENABLED:-0}"
else
  TAGS="sqlite sqlite_unlock_notify"
  export CGO_ENABLED=1
  command -v gcc >/dev/null 2>&1 || die "Gitea ${GITEA_VERSION} needs cgo (gcc) for SQLite"
fi
log "build tags: '${TAGS}', CGO_ENABLED=${CGO_ENABLED}"

LDFLAGS="-s -w -X main.Version=${GITEA_VERSION} -X 'main.Tags=${TAGS}'"
(
  cd "$WRAP"
  set -x
  nice -n "$NICE" "$GO" build -mod=mod -trimpath -tags "$TAGS" -ldflags "$LDFLAGS" \
    -o "${BIN}.tmp" "$MODPATH"
) || die "go build failed"
mv -f "${BIN}.tmp" "$BIN"

# 6. Runtime assets (templates, options, public) copied out of the read-only module cache.
rm -rf "${STATIC}.tmp"; mkdir -p "${STATIC}.tmp"
for d in templates options public; do
  [[ -d "$SRC/$d" ]] && cp -r "$SRC/$d" "${STATIC}.tmp/$d"
done
chmod -R u+w "${STATIC}.tmp"
# The frontend (JS/CSS, built by vite/npm) is not in the module zip: web pages render
# unstyled, the API and OAuth endpoints are unaffected. An empty manifest stops 1.27 from
# logging "Failed to open frontend manifest" on every page.
if [[ -f "$SRC/vite.config.ts" && ! -f "${STATIC}.tmp/public/assets/.vite/manifest.json" ]]; then
  mkdir -p "${STATIC}.tmp/public/assets/.vite"
  echo '{}' > "${STATIC}.tmp/public/assets/.vite/manifest.json"
fi
rm -rf "$STATIC"; mv "${STATIC}.tmp" "$STATIC"

END=$(date +%s)
echo "version=${GITEA_VERSION} module=${MODPATH} tags='${TAGS}' go=$("$GO" version) build_seconds=$((END-START)) built_at=$(date -u +%FT%TZ)" \
  > "${BIN}.buildinfo"
log "built $BIN ($("$BIN" --version | sed -n 1p)) in $((END-START)) s"
echo "$BIN"
