#!/bin/sh
# The entrypoint of localhost/aegis-ci/postgres:15-bookworm (postgres.Containerfile):
# the official postgres image's first-start behaviour, reduced to what
# docker-compose.yml uses. Runs as root, then as postgres.
set -eu

as_postgres() { setpriv --reuid=postgres --regid=postgres --init-groups "$@"; }

if [ "${1:-}" != postgres ]; then
  exec "$@"
fi

mkdir -p "$PGDATA"
chown postgres:postgres /var/lib/postgresql "$PGDATA"
chmod 0700 "$PGDATA"

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  if [ -z "${POSTGRES_PASSWORD:-}" ]; then
    echo 'Error: Database is uninitialized and superuser password is not specified (POSTGRES_PASSWORD).' >&2
    exit 1
  fi
  user="${POSTGRES_USER:-postgres}"
  db="${POSTGRES_DB:-$user}"
  pwfile="$(mktemp)"
  printf '%s\n' "$POSTGRES_PASSWORD" >"$pwfile"
  chown postgres "$pwfile"
  as_postgres initdb --username="$user" --pwfile="$pwfile" --auth-local=trust --auth-host=scram-sha-256 -D "$PGDATA"
  rm -f "$pwfile"
  echo 'host all all all scram-sha-256' >>"$PGDATA/pg_hba.conf"
  as_postgres pg_ctl -D "$PGDATA" -o "-c listen_addresses=''" -w start
  if [ "$db" != postgres ]; then
    as_postgres psql -v ON_ERROR_STOP=1 --username="$user" --dbname=postgres \
      -c "CREATE DATABASE \"$db\""
  fi
  as_postgres pg_ctl -D "$PGDATA" -m fast -w stop
  echo 'PostgreSQL init process complete; ready for start up.'
fi

shift
exec setpriv --reuid=postgres --regid=postgres --init-groups postgres -D "$PGDATA" -c listen_addresses='*' "$@"
