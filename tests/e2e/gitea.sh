#!/usr/bin/env bash
# Boot a real, headless Gitea on loopback for end-to-end tests, seed it, and write
# $AEGIS_E2E_DIR/fixture.json.
#
#   gitea.sh start [--keep]   stop a running/stale instance, then
#                               (default) wipe the state dir, migrate, create the admin,
#                               boot, run seed.py, write fixture.json;
#                               --keep (or AEGIS_E2E_KEEP=1): boot on the existing state
#                               (same port, same fixture.json), no migrate and no seeding.
#   gitea.sh stop             stop it (state is left in place)
#   gitea.sh status           exit 0 if it is running and answering
#
# Env: AEGIS_E2E_DIR (state dir, default /tmp/aegis-e2e), AEGIS_E2E_GITEA_PORT (default 3300;
# when not set and 3300 is busy a free port is picked), GATEWAY_URL (OAuth redirect base,
# default http://127.0.0.1:8080), GITEA_VERSION (default 1.27.1), GITEA_BIN (use this binary
# instead of building/caching one), GITEA_STATIC_DIR (templates/options/public for GITEA_BIN),
# AEGIS_CACHE_DIR, GITEA_START_TIMEOUT (seconds, default 90).
set -euo pipefail

HERE="$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)"
STATE="${AEGIS_E2E_DIR:-/tmp/aegis-e2e}"
GITEA_VERSION="${GITEA_VERSION:-1.27.1}"; GITEA_VERSION="${GITEA_VERSION#v}"
CACHE_DIR="${AEGIS_CACHE_DIR:-${HOME}/.cache/aegis-gitea-mcp}"
ADMIN_USER="aegis-admin"
ADMIN_EMAIL="aegis-admin@example.com"
TIMEOUT="${GITEA_START_TIMEOUT:-90}"

CONF="$STATE/custom/conf/app.ini"
PIDFILE="$STATE/gitea.pid"
MARKER="$STATE/.aegis-e2e-state"
FIXTURE="$STATE/fixture.json"

log() { printf '[gitea.sh] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }
now_ms() { date +%s%3N; }
secs_since() { local d=$(( $(now_ms) - $1 )); printf '%d.%03d' $((d / 1000)) $((d % 1000)); }

for tool in curl python3; do
  command -v "$tool" >/dev/null 2>&1 || die "$tool is required"
done

resolve_binary() {
  if [[ -n "${GITEA_BIN:-}" ]]; then
    BIN="$GITEA_BIN"
    STATIC="${GITEA_STATIC_DIR:-}"
  else
    BIN="$CACHE_DIR/gitea-$GITEA_VERSION"
    STATIC="$CACHE_DIR/gitea-$GITEA_VERSION-static"
    if [[ ! -x "$BIN" || ! -d "$STATIC/templates" ]]; then
      log "no cached Gitea $GITEA_VERSION: building it (takes a while)"
      GITEA_VERSION="$GITEA_VERSION" "$HERE/build-gitea.sh" >/dev/null
    fi
  fi
  [[ -x "$BIN" ]] || die "Gitea binary not found: $BIN"
}

# pid of our Gitea if it is running, else nothing
running_pid() {
  [[ -f "$PIDFILE" ]] || return 0
  local pid; pid="$(cat "$PIDFILE" 2>/dev/null || true)"
  [[ "$pid" =~ ^[0-9]+$ ]] || return 0
  # guard against pid reuse: it must be a `gitea web` on our config
  if [[ -r "/proc/$pid/cmdline" ]] && tr '\0' ' ' < "/proc/$pid/cmdline" | grep -qF -- "$CONF"; then
    echo "$pid"
  fi
}

port_free() {
  python3 - "$1" <<'PY'
import socket, sys
s = socket.socket()
s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1)
try:
    s.bind(("127.0.0.1", int(sys.argv[1])))
except OSError:
    sys.exit(1)
PY
}

pick_port() {
  if [[ -n "${AEGIS_E2E_GITEA_PORT:-}" ]]; then
    port_free "$AEGIS_E2E_GITEA_PORT" || die "port $AEGIS_E2E_GITEA_PORT (AEGIS_E2E_GITEA_PORT) is in use"
    echo "$AEGIS_E2E_GITEA_PORT"
  elif port_free 3300; then
    echo 3300
  else
    python3 -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1])'
  fi
}

conf_url() { # ROOT_URL from app.ini, without trailing slash
  awk -F' *= *' '$1=="ROOT_URL"{print $2; exit}' "$CONF" | sed 's:/*$::'
}

do_stop() {
  local pid; pid="$(running_pid)"
  if [[ -z "$pid" ]]; then
    rm -f "$PIDFILE"
    log "not running"
    return 0
  fi
  log "stopping Gitea (pid $pid)"
  kill -TERM "$pid" 2>/dev/null || true
  for _ in $(seq 1 100); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "still alive after 10 s: SIGKILL"
    kill -KILL "$pid" 2>/dev/null || true
    sleep 0.2
  fi
  rm -f "$PIDFILE"
  log "stopped"
}

wipe_state() {
  if [[ -e "$STATE" ]]; then
    # only ever delete a directory this script created (or an empty one)
    if [[ -f "$MARKER" ]] || [[ -z "$(ls -A "$STATE")" ]]; then
      rm -rf "$STATE"
    else
      die "$STATE exists and is not an aegis e2e state dir (no $MARKER); refusing to wipe it"
    fi
  fi
  mkdir -p "$STATE"/{custom/conf,data,log}
  touch "$MARKER"
}

write_config() { # <port>
  local port="$1" url="http://127.0.0.1:$1"
  local secret_key internal_token jwt_secret
  secret_key="$("$BIN" generate secret SECRET_KEY)"
  internal_token="$("$BIN" generate secret INTERNAL_TOKEN)"
  jwt_secret="$("$BIN" generate secret JWT_SECRET)"
  local static_line=""
  [[ -n "$STATIC" ]] && static_line="STATIC_ROOT_PATH = $STATIC"
  # Webhooks may only call loopback hosts. 1.27 deprecated [webhook] ALLOWED_HOST_LIST in
  # favour of [security] ALLOWED_HOST_LIST (which older releases do not read).
  local bin_version security_hosts="" webhook_hosts=""
  bin_version="$("$BIN" --version | awk '{print $3}')"
  if [[ "$(printf '%s\n1.27.0\n' "${bin_version%%[-+]*}" | sort -V | head -n1)" == 1.27.0 ]]; then
    security_hosts="ALLOWED_HOST_LIST = loopback"
  else
    webhook_hosts="ALLOWED_HOST_LIST = loopback"
  fi
  cat > "$CONF" <<EOF
; Generated by tests/e2e/gitea.sh for end-to-end tests. Throw-away instance.
APP_NAME = Aegis E2E Gitea
RUN_MODE = prod
RUN_USER = $(id -un)
WORK_PATH = $STATE
I_AM_BEING_UNSAFE_RUNNING_AS_ROOT = true

[server]
PROTOCOL = http
HTTP_ADDR = 127.0.0.1
HTTP_PORT = $port
DOMAIN = 127.0.0.1
ROOT_URL = $url/
LOCAL_ROOT_URL = $url/
APP_DATA_PATH = $STATE/data
$static_line
DISABLE_SSH = true
START_SSH_SERVER = false
OFFLINE_MODE = true
LFS_START_SERVER = false
LANDING_PAGE = explore

[database]
DB_TYPE = sqlite3
PATH = $STATE/data/gitea.db
SQLITE_JOURNAL_MODE = WAL

[repository]
ROOT = $STATE/data/repos
DEFAULT_BRANCH = main

[security]
INSTALL_LOCK = true
$security_hosts
SECRET_KEY = $secret_key
INTERNAL_TOKEN = $internal_token
; fast password hashing on purpose: throw-away test instance
PASSWORD_HASH_ALGO = pbkdf2_v1

[oauth2]
ENABLED = true
JWT_SECRET = $jwt_secret
; a used refresh token is dead, as in production: a second refresh of one grant must fail
INVALIDATE_REFRESH_TOKENS = true

[service]
DISABLE_REGISTRATION = true
REQUIRE_SIGNIN_VIEW = false
ENABLE_NOTIFY_MAIL = false
DEFAULT_KEEP_EMAIL_PRIVATE = false

[mailer]
ENABLED = false

[webhook]
$webhook_hosts
DELIVER_TIMEOUT = 5

[actions]
ENABLED = true

[indexer]
ISSUE_INDEXER_TYPE = db
REPO_INDEXER_ENABLED = false

[session]
PROVIDER = memory

[cache]
ADAPTER = memory

[queue]
TYPE = level

[cron]
ENABLED = false

[cron.update_checker]
ENABLED = false

[log]
MODE = file
LEVEL = info
ROOT_PATH = $STATE/log
EOF
}

gitea_cmd() { # runs a gitea CLI subcommand against our config
  GITEA_WORK_DIR="$STATE" GITEA_CUSTOM="$STATE/custom" \
    "$BIN" --config "$CONF" --work-path "$STATE" "$@"
}

launch_and_wait() { # <url>
  local url="$1" t0; t0="$(now_ms)"
  (
    cd "$STATE"
    export GITEA_WORK_DIR="$STATE" GITEA_CUSTOM="$STATE/custom"
    exec setsid "$BIN" --config "$CONF" --work-path "$STATE" web \
      >>"$STATE/log/stdout.log" 2>&1 </dev/null
  ) &
  local pid=$!
  echo "$pid" > "$PIDFILE"
  local deadline=$(( $(date +%s) + TIMEOUT ))
  until curl -fsS -o /dev/null --max-time 2 "$url/api/v1/version" 2>/dev/null; do
    if ! kill -0 "$pid" 2>/dev/null; then
      rm -f "$PIDFILE"
      log "Gitea exited during boot; last log lines:"
      tail -n 30 "$STATE/log/stdout.log" >&2 || true
      tail -n 30 "$STATE/log/gitea.log" >&2 2>/dev/null || true
      die "Gitea failed to start"
    fi
    if (( $(date +%s) > deadline )); then
      tail -n 30 "$STATE/log/gitea.log" >&2 2>/dev/null || true
      do_stop
      die "Gitea did not answer $url/api/v1/version within ${TIMEOUT}s"
    fi
    sleep 0.2
  done
  BOOT_SECS="$(secs_since "$t0")"
  log "Gitea up at $url (pid $pid): boot took ${BOOT_SECS} s"
}

do_start() {
  local keep="${AEGIS_E2E_KEEP:-0}"
  [[ "${1:-}" == "--keep" ]] && keep=1
  local t_total; t_total="$(now_ms)"
  resolve_binary
  do_stop

  if [[ "$keep" == 1 ]]; then
    [[ -f "$CONF" && -f "$FIXTURE" ]] || die "--keep: no existing state in $STATE (run 'start' first)"
    local url; url="$(conf_url)"
    port_free "${url##*:}" || die "--keep: port ${url##*:} is in use"
    log "restarting on existing state in $STATE"
    launch_and_wait "$url"
    log "ready in $(secs_since "$t_total") s (boot ${BOOT_SECS} s); fixture: $FIXTURE"
    return 0
  fi

  local port url
  port="$(pick_port)"; url="http://127.0.0.1:$port"
  wipe_state
  write_config "$port"

  local t0; t0="$(now_ms)"
  gitea_cmd migrate >>"$STATE/log/setup.log" 2>&1 || { tail -n 30 "$STATE/log/setup.log" >&2; die "gitea migrate failed"; }
  local admin_pw
  admin_pw="$(python3 -c 'import secrets; print("Adm1n-" + secrets.token_urlsafe(12))')"
  gitea_cmd admin user create --admin --username "$ADMIN_USER" --email "$ADMIN_EMAIL" \
    --password "$admin_pw" --must-change-password=false >>"$STATE/log/setup.log" 2>&1 \
    || { tail -n 30 "$STATE/log/setup.log" >&2; die "admin user create failed"; }
  local admin_token
  admin_token="$(gitea_cmd admin user generate-access-token --username "$ADMIN_USER" \
    --token-name aegis-e2e-admin --scopes all --raw 2>>"$STATE/log/setup.log" | tail -n1)"
  [[ "$admin_token" =~ ^[0-9a-f]{40}$ ]] || die "unexpected admin token output: '$admin_token' (see $STATE/log/setup.log)"
  log "migrated + admin user + token in $(secs_since "$t0") s"

  launch_and_wait "$url"

  local t_seed; t_seed="$(now_ms)"
  GITEA_URL="$url" AEGIS_E2E_DIR="$STATE" \
  AEGIS_E2E_ADMIN_USER="$ADMIN_USER" AEGIS_E2E_ADMIN_EMAIL="$ADMIN_EMAIL" \
  AEGIS_E2E_ADMIN_PASSWORD="$admin_pw" AEGIS_E2E_ADMIN_TOKEN="$admin_token" \
  AEGIS_E2E_BOOT_SECONDS="$BOOT_SECS" \
    python3 "$HERE/seed.py" || { do_stop; die "seeding failed (Gitea stopped; logs in $STATE/log)"; }
  log "seeded in $(secs_since "$t_seed") s"
  log "ready in $(secs_since "$t_total") s total (boot ${BOOT_SECS} s); fixture: $FIXTURE"
}

do_status() {
  local pid; pid="$(running_pid)"
  if [[ -z "$pid" ]]; then
    echo "stopped (state dir: $STATE)"
    return 1
  fi
  local url; url="$(conf_url)"
  local ver
  if ver="$(curl -fsS --max-time 5 "$url/api/v1/version")"; then
    echo "running: pid $pid, $url, version $ver, fixture $FIXTURE"
  else
    echo "pid $pid alive but $url/api/v1/version does not answer"
    return 1
  fi
}

case "${1:-}" in
  start) shift; do_start "$@" ;;
  stop) do_stop ;;
  status) do_status ;;
  *) echo "usage: $0 start [--keep] | stop | status" >&2; exit 2 ;;
esac
