#!/usr/bin/env bash
# pgbench end to end: PostgreSQL -> Flink (JDBC scan) -> setats -> Flink (setats-cdc) -> check.
#
#   1. PostgreSQL 15 (Debian's postgresql-15) in a temp dir on a free loopback port, run as the
#      postgres user when this runs as root; `pgbench -i -s $PGBENCH_SCALE` (scale 1 = 100,000 accounts)
#   2. a gateway on a fresh warehouse (free ports, embedded NATS)
#   3. load: e2e/pgbench/load.sql in the SQL runner: pgbench_accounts -> setats pgbench.pgbench_accounts
#   4. `pgbench -c $PGBENCH_CLIENTS -t $PGBENCH_TX` (TPC-B-like transactions on the accounts)
#   5. re-scan: load.sql again; the merge emits -U/+U only for accounts whose balance changed
#   6. e2e/pgbench/cdc.sql (setats-cdc, earliest) prints the whole changelog; it is stopped once
#      the expected row count was printed (plus a grace period for extra rows) or after a timeout
#   7. check.py: folded changelog = pgbench_accounts; -U/+U keys = accounts with non-zero summed
#      delta in pgbench_history (shared/cases/e2e-pgbench.md); figures: rows moved, time taken.
# Needs bin/setats, the connector jar and the SQL runner jar (make build). Exit 0 only when every
# check passed. Everything it started is stopped on exit; KEEP_WORK=1 keeps the temp dir.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
cd "$REPO_DIR"

SCALE=${PGBENCH_SCALE:-1}
CLIENTS=${PGBENCH_CLIENTS:-2}
TX=${PGBENCH_TX:-1000}
TIMEOUT=${PGBENCH_E2E_TIMEOUT:-900}
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/15/bin 2>/dev/null || true)}
[ -x "$PGBIN/initdb" ] || die "PostgreSQL 15 server binaries not found (apt-get install postgresql-15, or set PGBIN)"
require_artifacts "$SETATS_BIN" "$CONNECTOR_JAR" "$RUNNER_JAR" || die "build first: make build"

WORK=$(mktemp -d /tmp/setats-pgbench.XXXXXX)
chmod 755 "$WORK"
PGDATA=$WORK/pgdata
PGSOCK=$WORK/pgsock
mkdir -p "$PGDATA" "$PGSOCK"

# PostgreSQL refuses to run as root: run its server commands as the postgres user (created by the
# Debian package), or as a dedicated user when that one is missing.
as_pg=()
if [ "$(id -u)" -eq 0 ]; then
  pguser=postgres
  if ! id "$pguser" >/dev/null 2>&1; then
    pguser=setats-pg
    id "$pguser" >/dev/null 2>&1 || useradd --system --no-create-home --shell /usr/sbin/nologin "$pguser"
  fi
  chown "$pguser" "$PGDATA" "$PGSOCK"
  as_pg=(runuser -u "$pguser" --)
fi

pg_started=0
cleanup() {
  local rc=$?
  stop_gateway || true
  if [ "$pg_started" = 1 ]; then
    "${as_pg[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -m fast -w stop >/dev/null 2>&1 || true
  fi
  if [ "${KEEP_WORK:-0}" = 1 ] || [ "$rc" -ne 0 ]; then
    log "work dir kept: $WORK"
  else
    rm -rf "$WORK"
  fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
PGPORT=$(free_port)
export PGHOST=127.0.0.1 PGPORT PGUSER=postgres PGDATABASE=bench

log "== 1/7 PostgreSQL 15 on 127.0.0.1:$PGPORT ($PGDATA)"
"${as_pg[@]}" "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$WORK/initdb.log" 2>&1 \
  || { cat "$WORK/initdb.log" >&2; die "initdb failed"; }
"${as_pg[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -l "$PGDATA/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $PGPORT -k $PGSOCK -c fsync=off -c synchronous_commit=off -c full_page_writes=off" \
  start >/dev/null || { cat "$PGDATA/server.log" >&2; die "PostgreSQL did not start"; }
pg_started=1
"$PGBIN/createdb" bench
t=$(now_ms)
"$PGBIN/pgbench" -i -s "$SCALE" -q bench >"$WORK/pgbench-init.log" 2>&1 || { cat "$WORK/pgbench-init.log" >&2; die "pgbench -i failed"; }
ACCOUNTS=$("$PGBIN/psql" -At -c 'SELECT count(*) FROM pgbench_accounts')
log "pgbench -i -s $SCALE: $ACCOUNTS accounts in $(( $(now_ms) - t )) ms"
export PG_JDBC_URL="jdbc:postgresql://127.0.0.1:$PGPORT/bench" PG_ACCOUNTS=$ACCOUNTS PG_USER=postgres

log "== 2/7 gateway"
start_gateway "$WORK/gateway/warehouse" "$WORK/gateway/gateway.log"

changelog_rows() { "$PYTHON" - <<'EOF'
import os, sys
sys.path.insert(0, os.path.join(os.environ["REPO_DIR"], "e2e"))
from pyarrow_client import SetatsClient
with SetatsClient(os.environ["SETATS_MANAGER_URL"]) as c:
    print(c.changelog_rows("pgbench", "pgbench_accounts"))
EOF
}
export REPO_DIR

log "== 3/7 load: pgbench_accounts -> Flink JDBC scan -> setats (log: load-1.log)"
t=$(now_ms)
run_sql e2e/pgbench/load.sql --timeout "$TIMEOUT" >"$WORK/load-1.out" 2>"$WORK/load-1.log" \
  || { tail -40 "$WORK/load-1.log" >&2; die "load job failed"; }
load1_ms=$(( $(now_ms) - t ))
rows1=$(changelog_rows)
log "load: $ACCOUNTS rows scanned and upserted in $load1_ms ms; changelog rows now $rows1"

log "== 4/7 pgbench -c $CLIENTS -t $TX"
t=$(now_ms)
"$PGBIN/pgbench" -n -c "$CLIENTS" -j "$CLIENTS" -t "$TX" bench >"$WORK/pgbench-run.log" 2>&1 \
  || { cat "$WORK/pgbench-run.log" >&2; die "pgbench run failed"; }
bench_ms=$(( $(now_ms) - t ))
tps=$(sed -nE 's/^tps = ([0-9.]+).*/\1/p' "$WORK/pgbench-run.log" | tail -n 1)
"$PGBIN/psql" -At -F'|' -c 'SELECT aid, sum(delta) FROM pgbench_history GROUP BY aid ORDER BY aid' >"$WORK/history.txt"
read -r history_rows touched changed < <("$PGBIN/psql" -At -F' ' -c \
  'SELECT (SELECT count(*) FROM pgbench_history), count(*), count(*) FILTER (WHERE s <> 0) FROM (SELECT aid, sum(delta) s FROM pgbench_history GROUP BY aid) h')
log "pgbench: $history_rows transactions in $bench_ms ms ($tps tps); $touched accounts touched, $changed with a non-zero summed delta"

log "== 5/7 re-scan: load.sql again (log: load-2.log)"
t=$(now_ms)
run_sql e2e/pgbench/load.sql --timeout "$TIMEOUT" >"$WORK/load-2.out" 2>"$WORK/load-2.log" \
  || { tail -40 "$WORK/load-2.log" >&2; die "re-scan job failed"; }
load2_ms=$(( $(now_ms) - t ))
rows2=$(changelog_rows)
log "re-scan: $ACCOUNTS rows scanned and upserted in $load2_ms ms; changelog rows now $rows2 (+$((rows2 - rows1)))"

"$PGBIN/psql" -At -F'|' -c 'SELECT aid, bid, abalance, filler FROM pgbench_accounts ORDER BY aid' >"$WORK/accounts.txt"
expected=$((ACCOUNTS + 2 * changed))

log "== 6/7 setats-cdc from earliest (expects $expected rows; log: cdc.log)"
t=$(now_ms)
cdc_rc=0
run_sql e2e/pgbench/cdc.sql --stop-after-rows "$expected" --stop-grace-ms 3000 --timeout "$TIMEOUT" \
  >"$WORK/cdc.out" 2>"$WORK/cdc.log" || cdc_rc=$?
cdc_ms=$(( $(now_ms) - t ))
printed=$(grep -c '\[' "$WORK/cdc.out" || true)
if [ "$cdc_rc" -ne 0 ]; then
  tail -30 "$WORK/cdc.log" >&2
  log "CDC job ended with exit $cdc_rc after printing $printed rows (3 = timeout); checking what it printed"
fi
log "cdc: $printed rows read in $cdc_ms ms (includes the 3 s grace period after the last expected row)"

log "== 7/7 checks"
stop_gateway || die "gateway did not exit 0 on SIGTERM"
check_rc=0
"$PYTHON" e2e/pgbench/check.py --changelog "$WORK/cdc.out" --accounts "$WORK/accounts.txt" --history "$WORK/history.txt" \
  | tee "$WORK/check.txt" || check_rc=$?

# job_ms LOG: the job's own run time as the SQL runner logged it (without JVM and planner start-up).
job_ms() { grep -oE '(finished in|rows in) [0-9]+ ms' "$1" | tail -1 | grep -oE '[0-9]+' || echo '?'; }
load1_job=$(job_ms "$WORK/load-1.log"); load2_job=$(job_ms "$WORK/load-2.log"); cdc_job=$(job_ms "$WORK/cdc.log")
rate() { awk -v n="$1" -v ms="$2" 'BEGIN { if (ms > 0) printf "%.0f", n * 1000 / ms; else print "-" }'; }
cat <<EOF

pgbench e2e figures (scale $SCALE, $CLIENTS clients x $TX transactions):
  initial load   $ACCOUNTS rows PostgreSQL -> Flink -> setats: job $load1_job ms ($(rate "$ACCOUNTS" "$load1_job") rows/s); $load1_ms ms with JVM and planner start-up
  pgbench        $history_rows transactions in $bench_ms ms ($tps tps); $changed accounts with a non-zero summed delta
  re-scan        $ACCOUNTS rows: job $load2_job ms ($(rate "$ACCOUNTS" "$load2_job") rows/s); $load2_ms ms in all; $((rows2 - rows1)) changelog rows added
  changelog      $rows2 rows in setats; $printed read back through setats-cdc: $cdc_job ms from submission to the last expected row ($(rate "$printed" "$cdc_job") rows/s); $cdc_ms ms in all
EOF
[ "$cdc_rc" -eq 0 ] || die "CDC job exit $cdc_rc"
[ "$check_rc" -eq 0 ] || die "checks failed (work dir $WORK)"
