# shellcheck shell=bash
# Start a throwaway PostgreSQL cluster for the Bees Cloud tests and export its URL.
#
# Source it (`. .ci/postgres.sh`); on success it exports
#   BEES_TEST_POSTGRES_URL=postgresql+psycopg://postgres@127.0.0.1:PORT/bees_test
#   BEES_TEST_POSTGRES_DIR=<temp dir holding the cluster>
# and defines `bees_postgres_stop` (stops the cluster, removes the temp dir); call it
# when done. `BEES_PG_ACTION=stop BEES_TEST_POSTGRES_DIR=DIR bash .ci/postgres.sh`
# stops a cluster from another process.
#
# Server binaries are looked up on PATH and in /usr/lib/postgresql/*/bin; when none
# are found Debian's `postgresql` package is installed (apt-get, needs root), unless
# BEES_PG_NO_INSTALL=1. PostgreSQL refuses to run as root, so as root the cluster runs
# as the `postgres` user (created with useradd when missing). BEES_PG_FSYNC=on keeps
# fsync (default off: a throwaway cluster needs no crash safety of its own).
# Returns non-zero (never exits the caller) when anything fails.

bees_postgres_bindir() {
    local dir candidate
    candidate="$(command -v initdb 2>/dev/null || true)"
    for dir in ${candidate:+"$(dirname "$(readlink -f "$candidate")")"} /usr/lib/postgresql/*/bin; do
        if [ -x "$dir/initdb" ] && [ -x "$dir/postgres" ] && [ -x "$dir/pg_ctl" ]; then
            echo "$dir"
            return 0
        fi
    done
    return 1
}

bees_postgres_start() {
    local bindir user root port run fsync
    if ! bindir="$(bees_postgres_bindir)"; then
        if [ "${BEES_PG_NO_INSTALL:-0}" = "1" ]; then
            echo "postgres.sh: no PostgreSQL server binaries found" >&2
            return 1
        fi
        echo "postgres.sh: installing Debian's postgresql package" >&2
        export DEBIAN_FRONTEND=noninteractive
        apt-get update -qq >/dev/null || return 1
        apt-get install -y -qq --no-install-recommends postgresql >/dev/null || return 1
        bindir="$(bees_postgres_bindir)" || { echo "postgres.sh: install found no initdb" >&2; return 1; }
    fi

    root="$(mktemp -d "${TMPDIR:-/tmp}/bees-pg.XXXXXX")" || return 1
    chmod 0755 "$root"
    run=()
    if [ "$(id -u)" = "0" ]; then
        user=postgres
        if ! id -u "$user" >/dev/null 2>&1; then
            useradd --system --user-group --no-create-home --shell /usr/sbin/nologin "$user" || return 1
        fi
        chown "$user" "$root"
        if command -v runuser >/dev/null 2>&1; then
            run=(runuser -u "$user" --)
        else
            run=(su -s /bin/sh "$user" -c '"$0" "$@"')
        fi
    fi

    port="$(python3 - <<'PY' 2>/dev/null || echo 55432
import socket
s = socket.socket()
s.bind(("127.0.0.1", 0))
print(s.getsockname()[1])
s.close()
PY
)"
    fsync="${BEES_PG_FSYNC:-off}"

    "${run[@]}" "$bindir/initdb" -D "$root/data" -U postgres -A trust -E UTF8 --locale=C \
        --no-sync >"$root/initdb.log" 2>&1 || { cat "$root/initdb.log" >&2; return 1; }
    echo "CREATE DATABASE bees_test" | "${run[@]}" "$bindir/postgres" --single -D "$root/data" \
        -F postgres >"$root/createdb.log" 2>&1 || { cat "$root/createdb.log" >&2; return 1; }
    "${run[@]}" "$bindir/pg_ctl" -D "$root/data" -l "$root/server.log" -w -t 60 \
        -o "-p $port -k $root -c listen_addresses=127.0.0.1 -c fsync=$fsync -c max_connections=300" \
        start >/dev/null || { cat "$root/server.log" >&2; return 1; }

    export BEES_TEST_POSTGRES_DIR="$root"
    export BEES_TEST_POSTGRES_URL="postgresql+psycopg://postgres@127.0.0.1:$port/bees_test"
    echo "postgres.sh: PostgreSQL ($("$bindir/postgres" --version)) on 127.0.0.1:$port" >&2
}

bees_postgres_stop() {
    local dir="${1:-${BEES_TEST_POSTGRES_DIR:-}}" bindir owner
    if [ -n "$dir" ] && [ -d "$dir/data" ]; then
        bindir="$(bees_postgres_bindir)" || return 1
        owner="$(stat -c %U "$dir/data")"
        if [ "$(id -u)" = "0" ] && [ "$owner" != "root" ]; then
            runuser -u "$owner" -- "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
        else
            "$bindir/pg_ctl" -D "$dir/data" -m fast -w stop >/dev/null 2>&1 || true
        fi
        rm -rf "$dir"
    fi
    if [ -z "${1:-}" ]; then
        unset BEES_TEST_POSTGRES_DIR BEES_TEST_POSTGRES_URL
    fi
}

if [ "${BEES_PG_ACTION:-start}" = "stop" ]; then
    bees_postgres_stop "${BEES_TEST_POSTGRES_DIR:?}"
else
    bees_postgres_start
fi
