#!/bin/sh
# Entry of every plb server container (run as user postgres). The first boot makes the data
# directory: initdb on the primary, pg_basebackup -R -S <slot> from the primary on a standby.
# Later boots (docker start after kill/stop) only start the server, so a standby rejoins and
# catches up from WAL kept by its slot. Works on the official postgres images and on the
# offline Debian image (which has no entrypoint of its own).
#
# Env: PLB_ROLE primary|standby, PLB_ID (primary, r1..), PLB_PORT, PLB_PRIMARY_PORT (standby),
# PLB_SLOT (standby), PLB_CREATE_SLOT (1: create the slot on the primary first), PLB_USER,
# PLB_DB, PLB_PASSWORD_FILE, PLB_MAX_SENDERS, PLB_SHARED_BUFFERS, PLB_MAX_CONNECTIONS, PLB_FSYNC.
# The password is read from the file and never echoed.
set -eu

: "${PLB_ROLE:?}" "${PLB_ID:?}" "${PLB_PORT:?}"
PLB_USER=${PLB_USER:-plb}
PLB_DB=${PLB_DB:-plb}
PLB_PASSWORD_FILE=${PLB_PASSWORD_FILE:-/plb/secret}
PLB_MAX_SENDERS=${PLB_MAX_SENDERS:-10}
PLB_SHARED_BUFFERS=${PLB_SHARED_BUFFERS:-64MB}
PLB_MAX_CONNECTIONS=${PLB_MAX_CONNECTIONS:-200}
# fsync off by default: the faults plb injects kill processes, not the host, so the OS page
# cache survives them; it also spares a shared machine's disk. PLB_FSYNC=on for durability.
PLB_FSYNC=${PLB_FSYNC:-off}
PLB_HOME=${PLB_HOME:-/var/lib/postgresql/plb}
PGDATA=$PLB_HOME/data

log() { echo "plb-entry[$PLB_ID]: $*" >&2; }

# Server binaries: pg_config when on PATH, else the newest Debian-layout folder, else PATH dirs.
BIN=$(pg_config --bindir 2>/dev/null || true)
if [ -z "$BIN" ] || [ ! -x "$BIN/postgres" ]; then
  BIN=
  for d in /usr/bin /usr/local/bin $(ls -d /usr/lib/postgresql/*/bin 2>/dev/null | sort -V); do
    if [ -x "$d/postgres" ]; then BIN=$d; fi
  done
fi
if [ -z "$BIN" ]; then
  log "no postgres binaries found (pg_config, /usr/lib/postgresql/*/bin, /usr/local/bin)"
  exit 1
fi

if [ ! -r "$PLB_PASSWORD_FILE" ]; then
  log "password file $PLB_PASSWORD_FILE is not readable"
  exit 1
fi

umask 077
mkdir -p "$PLB_HOME"
# libpq (pg_basebackup, the walreceiver) reads the password from here.
{
  printf '*:*:*:%s:' "$PLB_USER"
  head -n 1 "$PLB_PASSWORD_FILE" | tr -d '\r\n'
  printf '\n'
} >"$PLB_HOME/pgpass"
export PGPASSFILE="$PLB_HOME/pgpass"

if [ ! -s "$PGDATA/PG_VERSION" ]; then
  rm -rf "$PGDATA" "$PGDATA.tmp"
  if [ "$PLB_ROLE" = primary ]; then
    log "initdb"
    "$BIN/initdb" -D "$PGDATA.tmp" -U "$PLB_USER" --pwfile="$PLB_PASSWORD_FILE" \
      --auth=scram-sha-256 --no-locale -E UTF8 --no-sync >/dev/null
    echo "CREATE DATABASE $PLB_DB" | "$BIN/postgres" --single -c fsync=off -D "$PGDATA.tmp" postgres >/dev/null
  else
    : "${PLB_PRIMARY_PORT:?}" "${PLB_SLOT:?}"
    log "pg_basebackup from 127.0.0.1:$PLB_PRIMARY_PORT, slot $PLB_SLOT"
    n=0
    # plb creates the slots itself; compose (no driver) asks for it here, idempotently.
    if [ "${PLB_CREATE_SLOT:-0}" = 1 ]; then
      until "$BIN/psql" -qAt -w -d "host=127.0.0.1 port=$PLB_PRIMARY_PORT user=$PLB_USER dbname=$PLB_DB" \
        -c "select pg_create_physical_replication_slot('$PLB_SLOT', true)
            where not exists (select 1 from pg_replication_slots where slot_name = '$PLB_SLOT')" >/dev/null; do
        n=$((n + 1))
        if [ "$n" -ge 60 ]; then
          log "could not create slot $PLB_SLOT on the primary, giving up"
          exit 1
        fi
        sleep 1
      done
      n=0
    fi
    until "$BIN/pg_basebackup" -D "$PGDATA.tmp" -R -S "$PLB_SLOT" -X stream -c fast --no-sync -w \
      -d "host=127.0.0.1 port=$PLB_PRIMARY_PORT user=$PLB_USER application_name=$PLB_ID"; do
      n=$((n + 1))
      if [ "$n" -ge 60 ]; then
        log "pg_basebackup failed $n times, giving up"
        exit 1
      fi
      rm -rf "$PGDATA.tmp"
      sleep 1
    done
  fi
  mv "$PGDATA.tmp" "$PGDATA"
fi

log "starting postgres ($BIN) on 127.0.0.1:$PLB_PORT"
exec "$BIN/postgres" -D "$PGDATA" \
  -c port="$PLB_PORT" \
  -c listen_addresses=127.0.0.1 \
  -c unix_socket_directories=/tmp \
  -c cluster_name="plb-$PLB_ID" \
  -c hot_standby=on \
  -c wal_level=replica \
  -c max_wal_senders="$PLB_MAX_SENDERS" \
  -c max_replication_slots="$PLB_MAX_SENDERS" \
  -c wal_receiver_status_interval=1s \
  -c shared_buffers="$PLB_SHARED_BUFFERS" \
  -c max_connections="$PLB_MAX_CONNECTIONS" \
  -c password_encryption=scram-sha-256 \
  -c fsync="$PLB_FSYNC"
