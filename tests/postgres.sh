#!/usr/bin/env bash
# A throwaway PostgreSQL cluster on loopback, for the store's PostgreSQL runs
# (tests/store.rs and other suites that read AEGIS_TEST_POSTGRES_URL).
#
#   postgres.sh start        init a cluster in $AEGIS_PG_DIR (unless one is there),
#                            start it, create the superuser role `aegis` (tests
#                            CREATE DATABASE), and print its URL on stdout:
#                              postgres://aegis@127.0.0.1:PORT/postgres
#   postgres.sh stop [--keep] stop it and delete $AEGIS_PG_DIR (--keep: leave it)
#   postgres.sh url          print the URL of the running cluster
#   postgres.sh restart      a fast restart (every session ended), as an
#                            operator's `pg_ctl restart -m fast` or a failover
#
# Trust authentication, on 127.0.0.1 and the cluster's own socket directory
# only. Uses Debian's server binaries (/usr/lib/postgresql/*/bin: the
# `postgresql` package; .ci/run installs it when missing). initdb refuses to
# run as root, so as root the cluster runs as the `postgres` system user
# (created if the package did not), which is given the directory.
#
# Env: AEGIS_PG_DIR (default /tmp/aegis-pg), AEGIS_PG_PORT (default 5433; when
# not set and 5433 is busy, the next free port is used), PG_BIN (directory of
# initdb/pg_ctl; default the newest /usr/lib/postgresql/*/bin),
# AEGIS_PG_USER (system user when run as root; default postgres).
set -euo pipefail

DIR="${AEGIS_PG_DIR:-/tmp/aegis-pg}"
DATA="$DIR/data"
LOG="$DIR/postgres.log"
PORTFILE="$DIR/port"
MARKER="$DIR/.aegis-pg"
PG_USER="${AEGIS_PG_USER:-postgres}"

log() { printf '[postgres.sh] %s\n' "$*" >&2; }
die() { log "ERROR: $*"; exit 1; }

find_bin() {
  if [[ -n "${PG_BIN:-}" ]]; then
    BIN="$PG_BIN"
  else
    BIN="$(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V | tail -n1 || true)"
  fi
  [[ -n "$BIN" && -x "$BIN/initdb" && -x "$BIN/pg_ctl" ]] \
    || die "PostgreSQL server binaries not found (apt-get install postgresql, or set PG_BIN)"
}

is_root() { [[ "$(id -u)" == 0 ]]; }

# Runs a command as the cluster's owner, from a directory it can read.
as_owner() {
  if is_root; then
    (cd "$DIR" && runuser -u "$PG_USER" -- "$@")
  else
    (cd "$DIR" && "$@")
  fi
}

ensure_user() {
  is_root || return 0
  if ! id -u "$PG_USER" >/dev/null 2>&1; then
    log "creating system user $PG_USER"
    useradd --system --no-create-home --shell /usr/sbin/nologin "$PG_USER"
  fi
}

port_busy() { (exec 3<>"/dev/tcp/127.0.0.1/$1") 2>/dev/null; }

pick_port() {
  if [[ -n "${AEGIS_PG_PORT:-}" ]]; then
    port_busy "$AEGIS_PG_PORT" && die "port $AEGIS_PG_PORT (AEGIS_PG_PORT) is in use"
    echo "$AEGIS_PG_PORT"
    return
  fi
  local port
  for port in $(seq 5433 5533); do
    if ! port_busy "$port"; then
      echo "$port"
      return
    fi
  done
  die "no free port in 5433-5533"
}

running() { [[ -d "$DATA" ]] && as_owner "$BIN/pg_ctl" -D "$DATA" status >/dev/null 2>&1; }

url() { echo "postgres://aegis@127.0.0.1:$(cat "$PORTFILE")/postgres"; }

prepare_dir() {
  if [[ -e "$DIR" && ! -f "$MARKER" && -n "$(ls -A "$DIR")" ]]; then
    die "$DIR exists and is not a cluster dir of this script (no $MARKER); refusing to use it"
  fi
  mkdir -p "$DIR"
  touch "$MARKER"
  chmod 700 "$DIR"
  if is_root; then chown -R "$PG_USER" "$DIR"; fi
}

init_cluster() {
  local port="$1"
  log "initdb in $DATA"
  as_owner "$BIN/initdb" -D "$DATA" -U postgres -E UTF8 --locale=C.UTF-8 \
    --auth=trust --no-instructions >"$DIR/initdb.log" 2>&1 \
    || { cat "$DIR/initdb.log" >&2; die "initdb failed"; }
  cat >>"$DATA/postgresql.conf" <<EOF

# tests/postgres.sh: a throwaway test cluster on loopback
listen_addresses = '127.0.0.1'
port = $port
unix_socket_directories = '$DIR'
max_connections = 300
# nothing here must survive a crash: trade durability for speed
fsync = off
synchronous_commit = off
full_page_writes = off
EOF
  cat >"$DATA/pg_hba.conf" <<EOF
# tests/postgres.sh: trust, loopback only
local all all trust
host  all all 127.0.0.1/32 trust
EOF
  echo "$port" >"$PORTFILE"
}

do_start() {
  find_bin
  ensure_user
  if running; then
    log "already running"
    url
    return
  fi
  prepare_dir
  if [[ ! -f "$DATA/PG_VERSION" ]]; then
    init_cluster "$(pick_port)"
  fi
  local port; port="$(cat "$PORTFILE")"
  port_busy "$port" && die "port $port is in use (set AEGIS_PG_PORT, or stop what holds it)"
  log "starting on 127.0.0.1:$port"
  as_owner "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -w -t 60 start >/dev/null \
    || { tail -n 30 "$LOG" >&2 || true; die "pg_ctl start failed"; }
  as_owner "$BIN/psql" -X -q -h 127.0.0.1 -p "$port" -U postgres -d postgres -v ON_ERROR_STOP=1 \
    -c "DO \$\$ BEGIN IF NOT EXISTS (SELECT FROM pg_roles WHERE rolname = 'aegis') THEN CREATE ROLE aegis LOGIN SUPERUSER; END IF; END \$\$;" \
    >/dev/null || die "could not create role aegis"
  url
}

do_stop() {
  find_bin
  if running; then
    log "stopping"
    as_owner "$BIN/pg_ctl" -D "$DATA" -m fast -w -t 60 stop >/dev/null || true
  else
    log "not running"
  fi
  if [[ "${1:-}" != "--keep" && -f "$MARKER" ]]; then
    rm -rf "$DIR"
  fi
}

do_restart() {
  find_bin
  running || die "no cluster running in $DIR"
  log "fast restart"
  as_owner "$BIN/pg_ctl" -D "$DATA" -l "$LOG" -m fast -w -t 60 restart >/dev/null \
    || { tail -n 30 "$LOG" >&2 || true; die "pg_ctl restart failed"; }
}

case "${1:-}" in
  start) do_start ;;
  stop) shift; do_stop "$@" ;;
  restart) do_restart ;;
  url) [[ -f "$PORTFILE" ]] || die "no cluster in $DIR"; url ;;
  *) echo "usage: $0 start | stop [--keep] | url | restart" >&2; exit 2 ;;
esac
