#!/usr/bin/env bash
# Re-resolve the digests that pin the container images.
#
#   scripts/pin-images.sh --list     the pinned references (offline)
#   scripts/pin-images.sh            ask each registry what the tag points to now;
#                                    exit 1 if any pin differs (default: --check)
#   scripts/pin-images.sh --write    the same, then replace every changed digest
#                                    in Dockerfile, docker-compose.yml and
#                                    docs/containers.md
#
# The pinned references are read from the files themselves: every
# `name:tag@sha256:<64 hex>` in Dockerfile (FROM lines and the `# syntax=`
# line) and docker-compose.yml. For each, the registry's HTTP API is asked for
# the manifest of `name:tag` (HEAD, anonymous pull token when the registry asks
# for one; Docker Hub does not count HEAD requests against its pull limit), and
# its Docker-Content-Digest is the new pin. Multi-platform tags answer with an
# image index, which is what should be pinned (the script says which kind it got).
#
# Needs bash, curl, sed, grep. Test hook: PIN_IMAGES_ENDPOINT=http://host:port
# sends every request to that one endpoint instead of the real registries
# (tests/containers/check.sh runs it against a fake registry on loopback).
set -euo pipefail
cd "$(dirname "$0")/.."

FILES=(Dockerfile docker-compose.yml)
DOC_FILES=(docs/containers.md)
MODE="${1:---check}"
case "$MODE" in
  --list | --check | --write) ;;
  -h | --help) sed -n '2,22p' "$0"; exit 0 ;;
  *) echo "usage: $0 [--list|--check|--write]" >&2; exit 2 ;;
esac

ACCEPT="application/vnd.oci.image.index.v1+json, application/vnd.docker.distribution.manifest.list.v2+json, application/vnd.oci.image.manifest.v1+json, application/vnd.docker.distribution.manifest.v2+json"

# Every pinned reference, once, in file order.
refs() {
  grep -hoE '[A-Za-z0-9][A-Za-z0-9./_-]*:[A-Za-z0-9][A-Za-z0-9._-]*@sha256:[0-9a-f]{64}' "${FILES[@]}" | awk '!seen[$0]++'
}

# "name:tag@sha256:…" -> registry host, repository, tag, pinned digest.
split_ref() {
  local ref="$1" name rest
  name="${ref%%@*}"
  PINNED="${ref#*@}"
  TAG="${name##*:}"
  name="${name%:*}"
  rest="${name#*/}"
  if [[ "$name" == */* && ( "${name%%/*}" == *.* || "${name%%/*}" == *:* || "${name%%/*}" == localhost ) ]]; then
    HOST="${name%%/*}"
    REPO="$rest"
  else
    HOST="docker.io"
    REPO="$name"
  fi
  [[ "$HOST" == "docker.io" ]] && HOST="registry-1.docker.io"
  [[ "$HOST" == "registry-1.docker.io" && "$REPO" != */* ]] && REPO="library/$REPO"
  return 0
}

# Prints "<digest> <media type>" for HOST/REPO:TAG.
resolve() {
  local base url headers status auth realm service scope token
  base="${PIN_IMAGES_ENDPOINT:-https://$HOST}"
  url="$base/v2/$REPO/manifests/$TAG"
  headers="$(curl -sS -I --max-time 30 -H "Accept: $ACCEPT" "$url")" || return 1
  status="$(printf '%s\n' "$headers" | awk 'toupper($1) ~ /^HTTP\// {code=$2} END {print code}')"
  if [[ "$status" == 401 ]]; then
    auth="$(printf '%s\n' "$headers" | tr -d '\r' | grep -i '^www-authenticate:' | head -n1 || true)"
    realm="$(printf '%s' "$auth" | sed -n 's/.*realm="\([^"]*\)".*/\1/p')"
    service="$(printf '%s' "$auth" | sed -n 's/.*service="\([^"]*\)".*/\1/p')"
    scope="$(printf '%s' "$auth" | sed -n 's/.*scope="\([^"]*\)".*/\1/p')"
    [[ -n "$scope" ]] || scope="repository:$REPO:pull"
    [[ -n "$realm" ]] || { echo "no token realm in: $auth" >&2; return 1; }
    token="$(curl -sS --max-time 30 -G "$realm" ${service:+--data-urlencode "service=$service"} \
      --data-urlencode "scope=$scope" \
      | sed -n 's/.*"\(token\|access_token\)"[[:space:]]*:[[:space:]]*"\([^"]*\)".*/\2/p' | head -n1)"
    [[ -n "$token" ]] || { echo "no anonymous token from $realm" >&2; return 1; }
    headers="$(curl -sS -I --max-time 30 -H "Accept: $ACCEPT" -H "Authorization: Bearer $token" "$url")" || return 1
    status="$(printf '%s\n' "$headers" | awk 'toupper($1) ~ /^HTTP\// {code=$2} END {print code}')"
  fi
  [[ "$status" == 200 ]] || { echo "HEAD $url answered ${status:-nothing}" >&2; return 1; }
  local dgst type
  dgst="$(printf '%s\n' "$headers" | tr -d '\r' | grep -i '^docker-content-digest:' | awk '{print $2}' | tail -n1)"
  type="$(printf '%s\n' "$headers" | tr -d '\r' | grep -i '^content-type:' | awk '{print $2}' | tail -n1)"
  [[ "$dgst" =~ ^sha256:[0-9a-f]{64}$ ]] || { echo "no Docker-Content-Digest from $url" >&2; return 1; }
  printf '%s %s\n' "$dgst" "${type:-unknown}"
}

if [[ "$MODE" == --list ]]; then
  refs
  exit 0
fi

changed=0
failed=0
while IFS= read -r ref; do
  split_ref "$ref"
  if ! answer="$(resolve)"; then
    echo "FAIL  ${ref%%@*}: could not resolve (see above)"
    failed=1
    continue
  fi
  current="${answer%% *}"
  type="${answer#* }"
  kind="single-platform manifest"
  [[ "$type" == *index* || "$type" == *list* ]] && kind="multi-platform index"
  if [[ "$current" == "$PINNED" ]]; then
    echo "ok    ${ref%%@*} @ $current ($kind)"
  else
    echo "NEW   ${ref%%@*}: pinned $PINNED, now $current ($kind)"
    changed=1
    if [[ "$MODE" == --write ]]; then
      for f in "${FILES[@]}" "${DOC_FILES[@]}"; do
        [[ -f "$f" ]] && sed -i "s/${PINNED#sha256:}/${current#sha256:}/g" "$f"
      done
    fi
  fi
done < <(refs)

if [[ "$failed" == 1 ]]; then
  echo "some references could not be resolved (is the registry reachable from here?)" >&2
  exit 1
fi
if [[ "$changed" == 1 && "$MODE" == --check ]]; then
  echo "pins differ from what the tags point to now: run $0 --write, rebuild, retest" >&2
  exit 1
fi
exit 0
