#!/usr/bin/env bash
# The Helm chart run by a real engine: `podman kube play` (podman 4.3) plays
# what `helm template` renders for the sqlite and the postgres profile,
# with the image CI builds, next to a real Gitea (and PostgreSQL), and the
# checks do what a user would (docs/kubernetes.md, "What CI runs and what
# differs from a cluster"). In order:
#
#  1. The engine of tests/containers/run.sh (tests/containers/engine.sh: its
#     storage, so the images it built are here): aegis-gitea-mcp:local, and
#     the local Gitea and PostgreSQL images. Helm and the validator from
#     tests/kubernetes/tools.sh.
#  2. Gitea as a Pod (tests/kubernetes/gitea.yaml) on 127.0.0.1:3000; an
#     admin with a token and the user alice; `aegis-gitea-mcp setup` run in
#     the image writes aegis.env (the OAuth applications, the bearer, the
#     keys), which becomes the chart's existingSecret as the docs say
#     (`kubectl create secret generic --from-env-file`; here a podman secret
#     of base64 values, which is what a secretKeyRef reads under podman).
#  3. For each mode, `helm template` of the profile with
#     tests/kubernetes/kube-play-values.yaml, the strict decoding
#     (`validate check`), and `validate kube-play`, which makes what podman
#     plays and prints each change (kinds podman does not play left out, a
#     Job as a Pod, hostPort 127.0.0.1:8080, probes sent by this script,
#     emptyDirs named per pod, one replica). Then:
#     - sqlite: ConfigMap, PersistentVolumeClaim, Deployment played; the
#       probes as a kubelet sends them (Host: localhost, to the pod's
#       address; without the header: 421); the image's promises in the
#       running pod (user 65532, no capability, no-new-privileges, seccomp
#       filter, read-only root, /data 0700 on the claim); /health, metrics
#       on the pod's address, a bearer tools/call, one OAuth sign-in of the
#       Python SDK through headless Chromium (tests/containers/stack.py); a
#       SIGTERM drain with a request in flight, exit 0 within the grace;
#       `kube down`; the audit chain on the claim verifies.
#     - postgres: PostgreSQL as a Pod (tests/kubernetes/postgres.yaml);
#       DATABASE_URL joins the secret; without the migration step the
#       replica (STORE_MIGRATE=never) refuses the empty store, exit 3; the
#       migration Job's pod runs `store migrate` and exits 0, then the
#       replica starts, as Helm runs its pre-install hook before the
#       Deployment; the same checks; the sign-in lands in PostgreSQL; the
#       pod stops within its grace; last, the Job run again applies nothing
#       (an upgrade with no new migration).
#  4. Everything this script made is removed on exit, on failure too: pods,
#     the podman secrets, the volumes, the kube network.
#
# The migration step needs a gateway binary with `store migrate`: with an
# older image the postgres mode's migration check FAILs, last and by name
# (the replica then migrates at its own start and the other checks run);
# AEGIS_KUBE_MIGRATE_OPTIONAL=1 makes that a SKIP.
#
# Runs as root, after tests/containers/run.sh built the images; needs
# 127.0.0.1:3000 and :8080 free. Prints PASS/FAIL lines and ends with
# `kubernetes-kube-play: N passed, M failed, K skipped (S s)`; exits
# non-zero on failure. About 1.5 minutes.
set -euo pipefail
cd "$(dirname "$0")/../.."
REPO="$PWD"
started=$(date +%s)
# The engine's configuration, shared (shellcheck reads engine.sh on its own).
# shellcheck source=/dev/null
source tests/containers/engine.sh

CACHE="${AEGIS_CACHE_DIR:-$HOME/.cache/aegis-gitea-mcp}/containers"
RUN_DIR=/run/aegis-gitea-mcp-containers
CHART=deploy/helm/aegis-gitea-mcp
RELEASE=aegis-gitea-mcp
# The image tests/containers/run.sh built (AEGIS_KUBE_IMAGE: another, for a try).
GATEWAY_IMAGE="${AEGIS_KUBE_IMAGE:-localhost/aegis-gitea-mcp:local}"
GATEWAY_URL=http://127.0.0.1:8080
GITEA_URL=http://gitea.localhost:3000
NETWORK=podman-default-kube-network
SECRET="$RELEASE"
PG_SECRET=aegis-kube-postgres
PYPI_PINS=("mcp==2.3.0" "playwright==1.65.2")
WORK="$(mktemp -d /tmp/aegis-kube-play.XXXXXX)"
passed=0
failed=0
skipped=0
PLAYED=()    # files given to `podman kube play`, for `kube down`
VOLUMES=()   # podman volumes made for the pods
ENGINE_READY=0

step() { echo; echo "--- $1 ($(($(date +%s) - started)) s)"; }
pass() { passed=$((passed + 1)); echo "PASS  $1"; }
# A failed check ends the run (the cleanup prints the logs it can).
fail() { failed=$((failed + 1)); echo "FAIL  $1"; exit 1; }
check() { local what="$1"; shift; if "$@"; then pass "$what"; else fail "$what"; fi; }
log() { echo "      $*"; }

# ---- cleanup ------------------------------------------------------------------

remove_everything() {
  local f v
  for ((i = ${#PLAYED[@]} - 1; i >= 0; i--)); do
    timeout 60 podman kube down "${PLAYED[$i]}" >/dev/null 2>&1 || true
  done
  # A pod of an earlier, killed run, by the names these manifests give.
  for p in $(podman pod ls -q --filter "name=^(aegis-gitea-mcp-pod-0|aegis-gitea-mcp-migrate|aegis-kube-gitea|aegis-kube-postgres)$" 2>/dev/null); do
    podman pod rm -f -t 5 "$p" >/dev/null 2>&1 || true
  done
  for v in "${VOLUMES[@]}" aegis-kube-gitea-data aegis-kube-gitea-config aegis-kube-postgres-data; do
    podman volume rm -f "$v" >/dev/null 2>&1 || true
  done
  for f in "$SECRET" "$PG_SECRET"; do
    podman secret rm "$f" >/dev/null 2>&1 || true
  done
  podman network rm "$NETWORK" >/dev/null 2>&1 || true
}

cleanup() {
  local status=$?
  set +e
  if [[ "$status" != 0 && "$ENGINE_READY" == 1 ]]; then
    echo
    echo "--- the pods at the failure"
    podman ps -a --pod --format '{{.Names}}  {{.Status}}' 2>/dev/null | grep -E 'aegis' | sed 's/^/      /'
    for c in aegis-gitea-mcp-pod-0-gateway aegis-gitea-mcp-migrate-migrate aegis-kube-gitea-gitea aegis-kube-postgres-postgres; do
      if podman container exists "$c" 2>/dev/null; then
        echo "--- logs of $c (tail)"
        podman logs --tail 30 "$c" 2>&1 | cut -c1-400
      fi
    done
  fi
  if [[ "$ENGINE_READY" == 1 ]]; then
    remove_everything
    local pids deadline
    deadline=$(($(date +%s) + 15))
    while pids="$(engine_conmons "$CACHE")"; [[ -n "$pids" ]] && (($(date +%s) < deadline)); do sleep 1; done
    # shellcheck disable=SC2086
    [[ -z "$pids" ]] || kill $pids 2>/dev/null
  fi
  rm -rf "$WORK"
  [[ "$status" == 0 || "$failed" != 0 ]] || failed=1
  echo
  echo "kubernetes-kube-play: $passed passed, $failed failed, $skipped skipped ($(($(date +%s) - started)) s)"
  exit "$status"
}
trap cleanup EXIT
trap 'exit 130' INT TERM

# ---- 1. the engine, the images, the tools -------------------------------------------

step "the engine (tests/containers/engine.sh), the images, Helm and the validator"
[[ "$(id -u)" -eq 0 ]] || { echo "kube-play.sh runs the engine as root (as CI does)" >&2; exit 1; }
missing=()
for pkg in podman runc chromium; do
  dpkg-query -W -f='${Status}' "$pkg" 2>/dev/null | grep -q "ok installed" || missing+=("$pkg")
done
if ((${#missing[@]})); then
  apt-get update
  DEBIAN_FRONTEND=noninteractive apt-get install -y "${missing[@]}"
fi
need_pip=()
for pin in "${PYPI_PINS[@]}"; do
  have="$(python3 -c 'import importlib.metadata as m, sys; print(m.version(sys.argv[1]))' "${pin%%==*}" 2>/dev/null || true)"
  [[ "$have" == "${pin##*==}" ]] || need_pip+=("$pin")
done
if ((${#need_pip[@]})); then
  python3 -m pip install --quiet --disable-pip-version-check "${need_pip[@]}"
fi
engine_configure "$CACHE" "$RUN_DIR"
ENGINE_READY=1
podman --version
HELM="$(tests/kubernetes/tools.sh helm | tail -n 1)"
VALIDATE="$(tests/kubernetes/tools.sh validate | tail -n 1)"
export HELM_CACHE_HOME="$WORK/helm/cache" HELM_CONFIG_HOME="$WORK/helm/config" HELM_DATA_HOME="$WORK/helm/data"
"$HELM" version --short
GITEA_IMAGE="$(awk '$1 == "image:" && $2 ~ /aegis-ci\/gitea:/ {print $2; exit}' tests/containers/local/compose.local-images.yml)"
POSTGRES_IMAGE="$(awk '$1 == "image:" && $2 ~ /aegis-ci\/postgres:/ {print $2; exit}' tests/containers/local/compose.local-images.yml)"
for image in "$GATEWAY_IMAGE" "$GITEA_IMAGE" "$POSTGRES_IMAGE"; do
  podman image exists "$image" || { echo "no image $image in $CACHE/storage: run tests/containers/run.sh first (AEGIS_CONTAINERS_IMAGE_ONLY=1 is enough)" >&2; exit 1; }
done
for port in 3000 8080; do
  if python3 -c 'import socket, sys; s = socket.socket(); s.connect(("127.0.0.1", int(sys.argv[1])))' "$port" 2>/dev/null; then
    echo "port $port on 127.0.0.1 is in use: the pods publish it" >&2
    exit 1
  fi
done
remove_everything
pass "images $GATEWAY_IMAGE, $GITEA_IMAGE, $POSTGRES_IMAGE; $("$HELM" version --short); 127.0.0.1:3000 and :8080 free"

# ---- helpers ------------------------------------------------------------------------------

pod_ip() { # <pod>
  local infra
  infra="$(podman pod inspect --format '{{.InfraContainerID}}' "$1")"
  podman inspect --format '{{range .NetworkSettings.Networks}}{{.IPAddress}}{{end}}' "$infra"
}
play() { # <file>
  PLAYED+=("$1")
  # (From the run's directory: podman builds an image itself when the
  # directory it runs in has a folder named like the image with a Containerfile.)
  (cd "$WORK" && podman kube play "$1") >"$WORK/play.out" 2>&1 || { cat "$WORK/play.out"; return 1; }
  grep -v -i -E "^(Pods?|Containers?|Volumes?|Secrets?):?$|^[0-9a-f]{64}$|^$|healthcheck|systemd|syslog" "$WORK/play.out" | sed 's/^/      /' || true
}
http_code() { curl -sS -o /dev/null -w '%{http_code}' --max-time 10 "$@" 2>/dev/null || echo 000; }
wait_http() { # <what> <seconds> <want code> <curl args...>
  local what="$1" seconds="$2" want="$3" deadline
  shift 3
  deadline=$(($(date +%s) + seconds))
  until [[ "$(http_code "$@")" == "$want" ]]; do
    (($(date +%s) < deadline)) || { log "$what: $(http_code "$@") after $seconds s"; return 1; }
    sleep 0.5
  done
}
wait_exited() { # <container> <seconds>: prints the exit code
  local deadline=$(($(date +%s) + $2)) state
  while :; do
    state="$(podman inspect --format '{{.State.Status}} {{.State.ExitCode}}' "$1" 2>/dev/null || echo "missing 0")"
    [[ "$state" == exited* ]] && { echo "${state#exited }"; return 0; }
    (($(date +%s) < deadline)) || { echo "timeout ($state)"; return 1; }
    sleep 0.5
  done
}
env_value() { sed -n "s/^$1=//p" "$WORK/aegis.env" | tail -n 1; }
# The podman secret the chart's secretKeyRefs read: a JSON object of base64
# values (what `kubectl create secret generic --from-env-file` stores).
make_secret() { # <name> <env file>
  python3 - "$2" >"$WORK/secret.json" <<'PY'
import base64, json, sys
values = {}
for line in open(sys.argv[1]):
    line = line.rstrip("\n")
    if line and not line.startswith("#") and "=" in line:
        key, value = line.split("=", 1)
        values[key] = base64.b64encode(value.encode()).decode()
print(json.dumps(values))
PY
  podman secret rm "$1" >/dev/null 2>&1 || true
  podman secret create "$1" "$WORK/secret.json" >/dev/null
  rm -f "$WORK/secret.json"
}
# helm template of a profile for this host, strictly decoded, and what podman plays.
render() { # <profile> <out dir>
  local profile="$1" out="$2"
  mkdir -p "$out"
  "$HELM" template "$RELEASE" "$CHART" --namespace aegis \
    -f "$CHART/ci/$profile-values.yaml" -f tests/kubernetes/kube-play-values.yaml \
    --set "image.repository=${GATEWAY_IMAGE%:*}" --set "image.tag=${GATEWAY_IMAGE##*:}" \
    --set-json "hostAliases=[{\"ip\":\"$GITEA_IP\",\"hostnames\":[\"gitea.localhost\"]}]" >"$out/rendered.yaml"
  "$VALIDATE" check "$out/rendered.yaml" >"$out/check.out" || { cat "$out/check.out"; return 1; }
  "$VALIDATE" kube-play -out "$out" "$out/rendered.yaml" | sed 's/^/      /'
  mapfile -t -O "${#VOLUMES[@]}" VOLUMES < <(python3 -c 'import json, sys; i = json.load(open(sys.argv[1])); print("\n".join((i["claims"] or []) + (i["volumes"] or [])))' "$out/probes.json")
}
info() { python3 -c 'import json, sys; v = json.load(open(sys.argv[1])); print(eval(sys.argv[2], {}, {"i": v}))' "$1/probes.json" "$2"; }

# What a kubelet does with the rendered probes: GET the path on the pod's
# address and port, with the probe's headers.
probe() { # <dir> <kind> <pod ip>: prints the status code
  local path port host
  path="$(info "$1" "[p for p in i['probes'] if p['kind'] == '$2'][0]['path']")"
  port="$(info "$1" "[p for p in i['probes'] if p['kind'] == '$2'][0]['port']")"
  host="$(info "$1" "[p for p in i['probes'] if p['kind'] == '$2'][0]['headers']['Host']")"
  http_code -H "Host: $host" "http://$3:$port$path"
}

# The checks both modes share, on a gateway pod that runs.
gateway_checks() { # <mode> <dir>
  local mode="$1" dir="$2" pod=aegis-gitea-mcp-pod-0 ctr=aegis-gitea-mcp-pod-0-gateway ip deadline code
  ip="$(pod_ip "$pod")"
  log "pod $pod at $ip"
  deadline=$(($(date +%s) + 60))
  until [[ "$(probe "$dir" startup "$ip")" == 200 ]]; do
    (($(date +%s) < deadline)) || fail "$mode: the startup probe (/health/live) answers 200 within 60 s"
    [[ "$(podman inspect --format '{{.State.Status}}' "$ctr" 2>/dev/null)" == running ]] || fail "$mode: the gateway container runs ($(podman inspect --format '{{.State.Status}} {{.State.ExitCode}}' "$ctr" 2>/dev/null))"
    sleep 0.5
  done
  pass "$mode: startup probe GET /health/live with Host: localhost at $ip:8080: 200"
  check "$mode: liveness probe GET /health/live: 200" test "$(probe "$dir" liveness "$ip")" == 200
  deadline=$(($(date +%s) + 30))
  until [[ "$(probe "$dir" readiness "$ip")" == 200 ]]; do
    (($(date +%s) < deadline)) || fail "$mode: the readiness probe (/health) answers 200 (the store, Gitea and the audit log ok)"
    sleep 1
  done
  pass "$mode: readiness probe GET /health: 200 (the store, Gitea through hostAliases, the audit log)"
  code="$(http_code "http://$ip:8080/health/live")"
  check "$mode: the same probe with the kubelet's default Host (the pod's address) gets 421, hence Host: localhost (got $code)" test "$code" == 421
  local health
  health="$(curl -sS --max-time 10 "$GATEWAY_URL/health")"
  log "/health through hostPort: $health"
  check "$mode: /health through the published port: status ok, store, gitea and audit ok" python3 -c '
import json, sys
d = json.loads(sys.argv[1]); c = d.get("checks") or {}
sys.exit(0 if d.get("status") == "ok" and all(c.get(k) == "ok" for k in ("store", "gitea", "audit")) else 1)' "$health"
  local metrics_port
  metrics_port="$(info "$dir" "i['metricsPort']")"
  curl -sS --max-time 10 "http://$ip:$metrics_port/metrics" >"$WORK/metrics.txt" || true
  check "$mode: metrics on the pod's address, port $metrics_port (a scraper's Host, an IP address, passes)" grep -q '^aegis_audit_writable 1' "$WORK/metrics.txt"
  # The image's promises, in the running container.
  local pid status caps
  pid="$(podman inspect --format '{{.State.Pid}}' "$ctr")"
  status="$(cat "/proc/$pid/status")"
  field_of() { awk -v k="$1:" '$1 == k {print $2, $3, $4, $5}' <<<"$status" | xargs; }
  caps="$(for f in CapPrm CapEff CapBnd CapAmb CapInh; do field_of "$f"; done | sort -u | xargs)"
  check "$mode: runs as 65532:65532 (runAsUser, runAsGroup)" test "$(field_of Uid)" == "65532 65532 65532 65532" -a "$(field_of Gid)" == "65532 65532 65532 65532"
  check "$mode: no capability in any set (drop ALL)" test "$caps" == "0000000000000000"
  check "$mode: no-new-privileges (allowPrivilegeEscalation: false)" test "$(field_of NoNewPrivs)" == 1
  check "$mode: a seccomp filter (Seccomp: $(field_of Seccomp))" test "$(field_of Seccomp)" == 2
  check "$mode: read-only root file system" grep -qE '(^|,)ro(,|$)' <<<"$(awk '$5 == "/" {print $6}' "/proc/$pid/mountinfo")"
  local data_stat
  data_stat="$(stat -c '%a %u:%g' "/proc/$pid/root/data")"
  check "$mode: /data is 0700, 65532:65532 ($data_stat)" test "$data_stat" == "700 65532:65532"
  check "$mode: the audit log is in /data, naming the replica $pod (REPLICA_ID from the pod's name)" grep -q "\"replica\":\"$pod\"" "/proc/$pid/root/data/audit.log"
  # A bearer tools/call, as an MCP client with the static bearer does.
  local call
  call="$(MCP_BEARER_TOKEN="$(env_value MCP_BEARER_TOKEN)" python3 - "$GATEWAY_URL" <<'PY'
import json, os, sys
sys.path.insert(0, "tests/e2e")
sys.dont_write_bytecode = True
from gateway import mcp_tool_call
status, envelope = mcp_tool_call(sys.argv[1], os.environ["MCP_BEARER_TOKEN"], "gitea_user_get_current")
print(json.dumps({"status": status, "login": ((envelope or {}).get("data") or {}).get("login") if status == 200 else None,
                  "identity": (envelope or {}).get("identity") if status == 200 else envelope}))
PY
)"
  log "tools/call gitea_user_get_current with the bearer: $call"
  check "$mode: a bearer tools/call over POST /mcp is answered by Gitea as aegis-admin" grep -q '"status": 200, "login": "aegis-admin"' <<<"$call"
  # One OAuth sign-in: the Python SDK, headless Chromium, the real Gitea.
  if AEGIS_ARTIFACTS_DIR="${AEGIS_ARTIFACTS_DIR:-$REPO/target/browser-artifacts}" ALICE_PASSWORD="$ALICE_PASSWORD" \
    timeout 300 python3 tests/containers/stack.py signin --gateway "$GATEWAY_URL" --gitea "$GITEA_URL" --login alice --label "kube-$mode" \
    >"$WORK/signin.log" 2>&1; then
    sed 's/^/      /' "$WORK/signin.log" | tail -8
    pass "$mode: the Python MCP SDK signed in through headless Chromium (consent, Gitea login and grant) and called tools as alice"
  else
    sed 's/^/      /' "$WORK/signin.log" | tail -40
    fail "$mode: the Python MCP SDK signs in through Chromium and calls tools as alice"
  fi
}

# ---- 2. Gitea, its users, setup --------------------------------------------------------

step "Gitea as a Pod (tests/kubernetes/gitea.yaml), an admin token and alice, setup in the image"
sed "s|@GITEA_IMAGE@|$GITEA_IMAGE|g" tests/kubernetes/gitea.yaml >"$WORK/gitea.yaml"
play "$WORK/gitea.yaml" || fail "podman kube play gitea.yaml"
wait_http "Gitea" 120 200 http://127.0.0.1:3000/api/healthz || fail "Gitea answers /api/healthz on 127.0.0.1:3000"
GITEA_IP="$(pod_ip aegis-kube-gitea)"
pass "Gitea plays, healthy at 127.0.0.1:3000 (pod address $GITEA_IP, the gateway's gitea.localhost)"
G=aegis-kube-gitea-gitea
podman exec "$G" gitea admin user create --admin --username aegis-admin --email admin@example.com \
  --random-password --must-change-password=false >"$WORK/admin.txt" 2>&1 || { cat "$WORK/admin.txt"; fail "gitea admin user create"; }
GITEA_TOKEN="$(podman exec "$G" gitea admin user generate-access-token --username aegis-admin --token-name aegis --scopes all --raw | tail -n 1)"
export GITEA_TOKEN
[[ "$GITEA_TOKEN" =~ ^[0-9a-f]{40}$ ]] || fail "an admin token"
ALICE_PASSWORD="Alice-$(python3 -c 'import secrets; print(secrets.token_urlsafe(12))')"
podman exec "$G" gitea admin user create --username alice --email alice@example.com \
  --password "$ALICE_PASSWORD" --must-change-password=false >/dev/null
pass "Gitea: admin aegis-admin with a token, user alice"
# `setup` in the image, as docs/kubernetes.md tells an operator to make the Secret.
podman run --rm --network "$NETWORK" --add-host "gitea.localhost:$GITEA_IP" -e GITEA_TOKEN \
  -v "$WORK:/out" --user 0:0 "$GATEWAY_IMAGE" setup --non-interactive --gitea-url "$GITEA_URL" \
  --bind 0.0.0.0 --output /out/aegis.env >"$WORK/setup.txt" 2>&1 || { cat "$WORK/setup.txt"; fail "setup in the image"; }
for key in MCP_BEARER_TOKEN TOKEN_ENCRYPTION_KEY AUDIT_HMAC_KEY GITEA_OAUTH_CLIENT_ID GITEA_OAUTH_CLIENT_SECRET GITEA_TOKEN; do
  [[ -n "$(env_value "$key")" ]] || fail "aegis.env sets $key"
done
check "setup wrote aegis.env: the OAuth applications (redirect $(env_value PUBLIC_BASE_URL)/oauth/callback), the bearer and the keys" \
  test "$(env_value PUBLIC_BASE_URL)" == "$GATEWAY_URL"
make_secret "$SECRET" "$WORK/aegis.env"
pass "the chart's existingSecret $SECRET from aegis.env (podman secret, base64 values)"

# ---- 3a. SQLite -------------------------------------------------------------------------------

step "sqlite: helm template, strict decoding, what podman plays"
render sqlite "$WORK/sqlite" || fail "sqlite: render and decode"
pass "sqlite: rendered ($(grep -c '^kind: ' "$WORK/sqlite/rendered.yaml") documents), decoded strictly, made playable"
check "sqlite: one replica, Recreate, grace $(info "$WORK/sqlite" "i['terminationGracePeriodSeconds']") s" \
  test "$(info "$WORK/sqlite" "(i['replicas'], i['strategy'])")" == "(1, 'Recreate')"

step "sqlite: podman kube play (ConfigMap, PersistentVolumeClaim, Deployment)"
play "$WORK/sqlite/gateway.yaml" || fail "sqlite: podman kube play"
claim="$(info "$WORK/sqlite" "i['claims'][0]")"
check "sqlite: the claim $claim is a podman volume" podman volume exists "$claim"
gateway_checks sqlite "$WORK/sqlite"

step "sqlite: SIGTERM with a request in flight, the drain, exit 0 within the grace; kube down; the claim's audit chain"
MCP_BEARER_TOKEN="$(env_value MCP_BEARER_TOKEN)" timeout 120 python3 tests/containers/stack.py drain \
  --gateway "$GATEWAY_URL" --container aegis-gitea-mcp-pod-0-gateway | sed 's/^/      /'
[[ "${PIPESTATUS[0]}" == 0 ]] || fail "sqlite: the drain"
pass "sqlite: SIGTERM: the request in flight got its 200, the gateway drained and exited 0 (grace $(info "$WORK/sqlite" "i['terminationGracePeriodSeconds']") s)"
podman kube down "$WORK/sqlite/gateway.yaml" >/dev/null
pod_gone_claim_kept() { ! podman pod exists aegis-gitea-mcp-pod-0 && podman volume exists "$claim"; }
check "sqlite: kube down removed the pod and kept the claim's volume, as a cluster keeps a PersistentVolumeClaim" pod_gone_claim_kept
# (podman's own complaint about the image's HEALTHCHECK without systemd goes to stderr.)
verify="$(podman run --rm --network none -v "$claim:/data:ro" -e AUDIT_HMAC_KEY="$(env_value AUDIT_HMAC_KEY)" \
  "$GATEWAY_IMAGE" audit verify 2>"$WORK/verify.err" || true)"
log "audit verify: $verify"
grep -q '^ok:' <<<"$verify" || cat "$WORK/verify.err"
check "sqlite: the audit log on the claim verifies (audit verify in the image)" grep -q '^ok:' <<<"$verify"
podman volume rm -f "$claim" >/dev/null

# ---- 3b. PostgreSQL --------------------------------------------------------------------------

step "postgres: PostgreSQL as a Pod (tests/kubernetes/postgres.yaml), DATABASE_URL in the secret"
PG_PASSWORD="$(python3 -c 'import secrets; print(secrets.token_hex(24))')"
printf 'POSTGRES_PASSWORD=%s\n' "$PG_PASSWORD" >"$WORK/postgres.env"
make_secret "$PG_SECRET" "$WORK/postgres.env"
sed "s|@POSTGRES_IMAGE@|$POSTGRES_IMAGE|g" tests/kubernetes/postgres.yaml >"$WORK/postgres.yaml"
play "$WORK/postgres.yaml" || fail "podman kube play postgres.yaml"
deadline=$(($(date +%s) + 60))
until podman exec aegis-kube-postgres-postgres pg_isready -q -U aegis -d aegis 2>/dev/null; do
  (($(date +%s) < deadline)) || fail "PostgreSQL ready"
  sleep 0.5
done
PG_IP="$(pod_ip aegis-kube-postgres)"
cp "$WORK/aegis.env" "$WORK/aegis-postgres.env"
echo "DATABASE_URL=postgres://aegis:$PG_PASSWORD@$PG_IP:5432/aegis" >>"$WORK/aegis-postgres.env"
make_secret "$SECRET" "$WORK/aegis-postgres.env"
pass "postgres: PostgreSQL ready at $PG_IP:5432; the secret now holds DATABASE_URL too"

step "postgres: helm template, strict decoding, what podman plays"
render postgres "$WORK/postgres" || fail "postgres: render and decode"
pass "postgres: rendered ($(grep -c '^kind: ' "$WORK/postgres/rendered.yaml") documents), decoded strictly, made playable"
job="$(info "$WORK/postgres" "i['jobs'][0]")"
check "postgres: the migration is the hook Job $job; the replicas run STORE_MIGRATE=$(info "$WORK/postgres" "i['configMap']['STORE_MIGRATE']")" \
  test "$(info "$WORK/postgres" "i['configMap']['STORE_MIGRATE']")" == never

step "postgres: the migration Job, then the replica"
MIGRATE_MISSING=0
if ! podman run --rm --network none "$GATEWAY_IMAGE" store migrate --help >/dev/null 2>&1; then
  MIGRATE_MISSING=1
  log "this image's binary has no \`store migrate\`: its replica will migrate at its own start; the Job is checked last"
else
  # Without the step: a replica (STORE_MIGRATE=never from the ConfigMap)
  # refuses the empty store, exit 3, and writes nothing.
  play "$WORK/postgres/gateway.yaml" || fail "postgres: podman kube play (before the migration)"
  deadline=$(($(date +%s) + 60))
  until [[ "$(podman inspect --format '{{.State.ExitCode}}' aegis-gitea-mcp-pod-0-gateway 2>/dev/null)" == 3 ]]; do
    (($(date +%s) < deadline)) || fail "postgres: before the migration, the replica refuses to serve (exit 3)"
    sleep 0.5
  done
  # (Through a file: a reader that stops early would SIGPIPE podman, which
  # ends the script under pipefail.)
  podman logs aegis-gitea-mcp-pod-0-gateway >"$WORK/refusal.log" 2>&1 || true
  refusal="$(grep -m1 -i 'pending' "$WORK/refusal.log" | cut -c1-300 || true)"
  log "$refusal"
  # The pod restarts its container as a kubelet would (restartPolicy
  # Always): stop it first, `kube down` can race a restart.
  for _ in 1 2 3 4 5; do
    podman pod stop -t 5 aegis-gitea-mcp-pod-0 >/dev/null 2>&1 || true
    podman pod rm -f aegis-gitea-mcp-pod-0 >/dev/null 2>&1 && break
    sleep 1
  done
  ! podman pod exists aegis-gitea-mcp-pod-0 || fail "postgres: the refusing replica's pod removed"
  tables="$(podman exec aegis-kube-postgres-postgres psql -U aegis -d aegis -Atc "select count(*) from information_schema.tables where table_schema = 'public'")"
  check "postgres: without the migration step the replica (STORE_MIGRATE=never) exits 3 and creates nothing ($tables tables)" test "$tables" == 0
  play "$WORK/postgres/job-$job.yaml" || fail "postgres: podman kube play of the Job's pod"
  code="$(wait_exited "$job-migrate" 120)" || fail "postgres: the migration Job's pod ends ($code)"
  podman logs "$job-migrate" 2>&1 | sed 's/^/      /' | tail -12
  check "postgres: the migration Job's pod ran \`store migrate\` and exited 0, before any replica (as Helm's pre-install hook)" test "$code" == 0
  podman kube down "$WORK/postgres/job-$job.yaml" >/dev/null
fi
play "$WORK/postgres/gateway.yaml" || fail "postgres: podman kube play"
gateway_checks postgres "$WORK/postgres"
rows="$(podman exec aegis-kube-postgres-postgres psql -U aegis -d aegis -Atc \
  "select (select count(*) from clients) || ' ' || (select count(*) from grants) || ' ' || (select count(*) from tokens)")"
read -r n_clients n_grants n_tokens <<<"$rows"
check "postgres: the sign-in is stored in PostgreSQL (clients $n_clients, grants $n_grants, tokens $n_tokens)" \
  test "$n_clients" -ge 1 -a "$n_grants" -ge 1 -a "$n_tokens" -ge 1
gw_pid="$(podman inspect --format '{{.State.Pid}}' aegis-gitea-mcp-pod-0-gateway)"
check "postgres: no SQLite store in /data (the emptyDir holds the audit log only)" test ! -e "/proc/$gw_pid/root/data/aegis.db"
grace="$(info "$WORK/postgres" "i['terminationGracePeriodSeconds']")"
stop_began=$(date +%s)
podman pod stop -t "$grace" aegis-gitea-mcp-pod-0 >/dev/null
code="$(podman inspect --format '{{.State.ExitCode}}' aegis-gitea-mcp-pod-0-gateway)"
check "postgres: the pod stopped with exit code $code in $(($(date +%s) - stop_began)) s, within its grace of $grace s" \
  test "$code" == 0 -a $(($(date +%s) - stop_began)) -lt "$grace"

step "postgres: the migration step (\`store migrate\`), last"
if [[ "$MIGRATE_MISSING" == 1 ]]; then
  if [[ "${AEGIS_KUBE_MIGRATE_OPTIONAL:-0}" == 1 ]]; then
    skipped=$((skipped + 1))
    echo "SKIP  postgres: the migration Job: the image's binary has no \`store migrate\` (AEGIS_KUBE_MIGRATE_OPTIONAL=1)"
  else
    fail "postgres: the migration Job: the image's binary has no \`store migrate\` (the chart's Job and STORE_MIGRATE=never need it)"
  fi
else
  # An upgrade with nothing new: the pre-upgrade hook runs again and applies nothing.
  podman pod rm -f aegis-gitea-mcp-migrate >/dev/null 2>&1 || true
  play "$WORK/postgres/job-$job.yaml" || fail "postgres: the Job again"
  code="$(wait_exited "$job-migrate" 120)" || fail "postgres: the second migration ends ($code)"
  again="$(podman logs "$job-migrate" 2>&1)"
  log "$(grep -m1 -i 'nothing to apply' <<<"$again" || tail -n 1 <<<"$again")"
  applied_nothing() { [[ "$1" == 0 ]] && grep -qi 'nothing to apply' <<<"$2"; }
  check "postgres: the Job run again (an upgrade with no new migration) exits 0 and applies nothing" \
    applied_nothing "$code" "$again"
fi
[[ "$failed" == 0 ]]
