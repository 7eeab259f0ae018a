#!/usr/bin/env bash
# Data subscription end to end (SPEC section 11, seed dts-flink-connector.txt):
#
#   1. PostgreSQL 15 (wal_level=logical) and MariaDB (binlog ROW/FULL) in temp dirs on free ports,
#      run as the postgres / mysql user when this runs as root; `pgbench -i -s 1`
#   2. a gateway; channels created with `setats subscription create` (PostgreSQL: pgbench_accounts
#      and pgbench_history; MariaDB: shop.orders) and consumer groups with `create-group`
#   3. full load: e2e/pgbench/load.sql (Flink JDBC scan -> setats sink) copies pgbench_accounts into
#      the setats table pgbench.pgbench_accounts (one +I per account)
#   4. pgbench at a steady rate; the gateway is killed (kill -9) during it and restarted; then three
#      deterministic transactions on two accounts pgbench did not touch: one with delta 0
#      (abalance + 0), two that cancel out (+7, then -7), each with its pgbench_history row
#   5. a small deterministic workload on MariaDB
#   6. the seed's dts SQL job (e2e/dts/accounts.sql) reads the PostgreSQL channel from the time
#      pgbench started; check.py: folded -U/+U = pgbench_accounts, changed keys = pgbench_history,
#      one -U/+U pair per transaction (no change lost or repeated across the kill -9)
#   7. streaming CDC (e2e/dts/stream.sql, one job): the channel's pgbench_accounts changes (dts, own
#      consumer group) upserted by the setats sink into the loaded table, and that table's changelog
#      from earliest (setats-cdc) printed; check_stream.py, the streaming clause of
#      shared/cases/e2e-pgbench.md: one +I per account, then one -U/+U pair per transaction whose
#      delta is not 0 (none for delta 0, two for +7/-7), -U/+U keys = accounts with a non-zero
#      delta, the fold = pgbench_accounts
#   8. the seed's DataStream job (io.setats.flink.dts.DtsExample) prints the MariaDB channel:
#      HEARTBEATs, checkpoint strings, and exactly the workload's INSERT/UPDATE/DELETE records
# Ends with "dts: N passed, N failed"; exit 0 only when nothing failed. KEEP_WORK=1 keeps the temp dir.
set -euo pipefail
source "$(dirname "$0")/../lib.sh"
cd "$REPO_DIR"

RATE=${DTS_PGBENCH_RATE:-100}
SECONDS_RUN=${DTS_PGBENCH_SECONDS:-12}
TIMEOUT=${DTS_E2E_TIMEOUT:-300}
PGBIN=${PGBIN:-$(ls -d /usr/lib/postgresql/15/bin 2>/dev/null || true)}
[ -x "$PGBIN/initdb" ] || die "PostgreSQL 15 server binaries not found (apt-get install postgresql-15, or set PGBIN)"
command -v mariadbd >/dev/null || [ -x /usr/sbin/mariadbd ] || die "MariaDB not found (apt-get install mariadb-server)"
require_artifacts "$SETATS_BIN" "$CONNECTOR_JAR" "$RUNNER_JAR" || die "build first: make build"
e2e_t0=$(now_ms)

passed=0 failed=0
check() { # check NAME CMD...: runs CMD, counts it
  local name=$1; shift
  if "$@"; then passed=$((passed + 1)); log "ok   $name"; else failed=$((failed + 1)); log "FAIL $name"; fi
}

WORK=$(mktemp -d /tmp/setats-dts.XXXXXX)
chmod 755 "$WORK"
PGDATA=$WORK/pgdata; PGSOCK=$WORK/pgsock; MYDIR=$WORK/mariadb
mkdir -p "$PGDATA" "$PGSOCK" "$MYDIR"
as_pg=(); my_user=()
if [ "$(id -u)" -eq 0 ]; then
  chown postgres "$PGDATA" "$PGSOCK"
  chown mysql "$MYDIR"
  as_pg=(runuser -u postgres --)
  my_user=(--user=mysql)
fi

pg_started=0 my_pid=
cleanup() {
  local rc=$?
  stop_gateway >/dev/null 2>&1 || true
  [ -n "${GATEWAY_PID:-}" ] && kill -9 "$GATEWAY_PID" 2>/dev/null || true
  [ "$pg_started" = 1 ] && "${as_pg[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -m immediate -w stop >/dev/null 2>&1 || true
  [ -n "$my_pid" ] && kill -9 "$my_pid" 2>/dev/null || true
  if [ "${KEEP_WORK:-0}" = 1 ] || [ "$rc" -ne 0 ]; then log "work dir kept: $WORK"; else rm -rf "$WORK"; fi
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

free_port() { "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1", 0)); print(s.getsockname()[1]); s.close()'; }
PGPORT=$(free_port); MYPORT=$(free_port)
export PGHOST=127.0.0.1 PGPORT PGUSER=postgres PGDATABASE=bench
psql_() { "$PGBIN/psql" -X -q -At -v ON_ERROR_STOP=1 "$@"; }
mysql_() { mariadb --no-defaults -S "$MYDIR/sock" -u root -N -B "$@"; }

log "== 1/8 PostgreSQL 15 on 127.0.0.1:$PGPORT, MariaDB on 127.0.0.1:$MYPORT"
"${as_pg[@]}" "$PGBIN/initdb" -D "$PGDATA" -U postgres --auth=trust -E UTF8 --locale=C.UTF-8 >"$WORK/initdb.log" 2>&1 \
  || { cat "$WORK/initdb.log" >&2; die "initdb failed"; }
"${as_pg[@]}" "$PGBIN/pg_ctl" -D "$PGDATA" -l "$PGDATA/server.log" -w -t 60 \
  -o "-c listen_addresses=127.0.0.1 -p $PGPORT -k $PGSOCK -c wal_level=logical -c fsync=off -c full_page_writes=off" \
  start >/dev/null || { cat "$PGDATA/server.log" >&2; die "PostgreSQL did not start"; }
pg_started=1
"$PGBIN/createdb" bench
"$PGBIN/pgbench" -i -s 1 -q bench >"$WORK/pgbench-init.log" 2>&1 || { cat "$WORK/pgbench-init.log" >&2; die "pgbench -i failed"; }
psql_ -c 'ALTER TABLE pgbench_accounts REPLICA IDENTITY FULL; ALTER TABLE pgbench_history REPLICA IDENTITY FULL'
psql_ -F'|' -c 'SELECT aid, bid, abalance FROM pgbench_accounts ORDER BY aid' >"$WORK/before.txt"

mariadb-install-db --no-defaults --datadir="$MYDIR/data" --auth-root-authentication-method=socket --skip-test-db "${my_user[@]}" >"$WORK/mariadb-install.log" 2>&1 \
  || { cat "$WORK/mariadb-install.log" >&2; die "mariadb-install-db failed"; }
/usr/sbin/mariadbd --no-defaults --datadir="$MYDIR/data" --socket="$MYDIR/sock" --port="$MYPORT" --bind-address=127.0.0.1 \
  --log-bin=mysql-bin --binlog-format=ROW --binlog-row-image=FULL --server-id=1 --skip-name-resolve \
  --innodb-buffer-pool-size=32M --log-error="$MYDIR/error.log" --pid-file="$MYDIR/mariadb.pid" "${my_user[@]}" >/dev/null 2>&1 &
my_pid=$!
for _ in $(seq 1 300); do mysql_ -e 'SELECT 1' >/dev/null 2>&1 && break; sleep 0.1; done
mysql_ -e 'SELECT 1' >/dev/null || { cat "$MYDIR/error.log" >&2; die "MariaDB did not start"; }
mysql_ -e "CREATE USER 'setats'@'%' IDENTIFIED BY 'setats'; GRANT ALL PRIVILEGES ON *.* TO 'setats'@'%';
  CREATE DATABASE shop; CREATE TABLE shop.orders (id INT PRIMARY KEY, amount INT, note VARCHAR(20))"

log "== 2/8 gateway and channels"
FLIGHT_PORT=$(free_port); ADMIN_PORT=$(free_port)
export GATEWAY_FLIGHT_ADDR=127.0.0.1:$FLIGHT_PORT GATEWAY_ADMIN_ADDR=127.0.0.1:$ADMIN_PORT
start_gateway "$WORK/gateway/warehouse" "$WORK/gateway/gateway.log"
sub() { "$SETATS_BIN" subscription "$@" --manager-url "$SETATS_MANAGER_URL"; }
sub create --channel pgbench --source-url "postgres://postgres@127.0.0.1:$PGPORT/bench?sslmode=disable" \
  --tables public.pgbench_accounts,public.pgbench_history >"$WORK/create-pg.json"
sub create-group --channel pgbench --group dts_sql --group-user dtstest --group-password Test123456 >/dev/null
sub create-group --channel pgbench --group dts_stream --group-user dtstest --group-password Test123456 >/dev/null
sub create --channel shop --source-url "mysql://setats:setats@127.0.0.1:$MYPORT/shop" --tables shop.orders >"$WORK/create-my.json"
sub create-group --channel shop --group dts_ds --group-user dtstest --group-password Test123456 >/dev/null
sub list >"$WORK/list.json"
check "channels listed" grep -q '"shop"' "$WORK/list.json"
# A table without REPLICA IDENTITY FULL is refused, saying what to set.
psql_ -c 'CREATE TABLE plain (id int PRIMARY KEY)'
if sub create --channel bad --source-url "postgres://postgres@127.0.0.1:$PGPORT/bench?sslmode=disable" --tables public.plain 2>"$WORK/bad.err"; then
  check "REPLICA IDENTITY check" false
else
  check "REPLICA IDENTITY check names the fix" grep -q 'REPLICA IDENTITY FULL' "$WORK/bad.err"
fi

ACCOUNTS=$(psql_ -c 'SELECT count(*) FROM pgbench_accounts')
log "== 3/8 full load: pgbench_accounts ($ACCOUNTS rows) -> Flink JDBC scan -> setats pgbench.pgbench_accounts"
export PG_JDBC_URL="jdbc:postgresql://127.0.0.1:$PGPORT/bench" PG_ACCOUNTS=$ACCOUNTS PG_USER=postgres
t=$(now_ms)
load_rc=0
run_sql e2e/pgbench/load.sql --timeout "$TIMEOUT" >"$WORK/load.out" 2>"$WORK/load.log" || load_rc=$?
load_ms=$(( $(now_ms) - t ))
[ "$load_rc" -eq 0 ] || tail -30 "$WORK/load.log" >&2
check "full load ran (exit $load_rc)" test "$load_rc" -eq 0

log "== 4/8 pgbench -R $RATE -T $SECONDS_RUN; kill -9 of the gateway during it"
START_S=$(( $(date +%s) - 1 ))
t=$(now_ms)
"$PGBIN/pgbench" -n -c 2 -j 2 -R "$RATE" -T "$SECONDS_RUN" bench >"$WORK/pgbench-run.log" 2>&1 &
bench_pid=$!
sleep $(( SECONDS_RUN / 2 ))
kill -9 "$GATEWAY_PID"; wait "$GATEWAY_PID" 2>/dev/null || true
log "gateway killed (kill -9); restarting it on the same warehouse and ports"
start_gateway "$WORK/gateway/warehouse" "$WORK/gateway/gateway-2.log"
wait "$bench_pid" || { cat "$WORK/pgbench-run.log" >&2; die "pgbench failed"; }
bench_ms=$(( $(now_ms) - t ))
BENCH_TX=$(psql_ -c 'SELECT count(*) FROM pgbench_history')
log "pgbench: $BENCH_TX transactions in $bench_ms ms"
# The cases pgbench rarely produces, on two accounts it did not touch, one transaction each (as
# pgbench's: the account's UPDATE and its pgbench_history row): a delta of 0 (the merge must emit
# nothing), then +7 and -7 (a streaming source must give two -U/+U pairs; a bounded re-scan none).
{ read -r ZERO_AID; read -r CANCEL_AID; } < <(psql_ -c 'SELECT aid FROM pgbench_accounts a
  WHERE NOT EXISTS (SELECT 1 FROM pgbench_history h WHERE h.aid = a.aid) ORDER BY aid LIMIT 2')
delta_tx() { # delta_tx AID DELTA
  psql_ -c "BEGIN; UPDATE pgbench_accounts SET abalance = abalance + $2 WHERE aid = $1;
    INSERT INTO pgbench_history (tid, bid, aid, delta, mtime) SELECT 1, bid, aid, $2, now() FROM pgbench_accounts WHERE aid = $1;
    COMMIT"
}
delta_tx "$ZERO_AID" 0; delta_tx "$CANCEL_AID" 7; delta_tx "$CANCEL_AID" -7
log "deterministic: aid $ZERO_AID delta 0; aid $CANCEL_AID delta +7, then -7"
psql_ -F'|' -c 'SELECT aid, bid, abalance FROM pgbench_accounts ORDER BY aid' >"$WORK/after.txt"
psql_ -c 'SELECT aid FROM pgbench_history' >"$WORK/history.txt"
psql_ -F'|' -c 'SELECT aid, delta FROM pgbench_history' >"$WORK/history-delta.txt"
TX=$(wc -l <"$WORK/history.txt")
read -r TX_NONZERO KEYS_NONZERO < <(psql_ -F' ' -c \
  'SELECT count(*) FILTER (WHERE delta <> 0), count(DISTINCT aid) FILTER (WHERE delta <> 0) FROM pgbench_history')
STREAM_ROWS=$((ACCOUNTS + 2 * TX_NONZERO))

log "== 5/8 MariaDB workload"
mysql_ -e "$(for i in $(seq 1 20); do echo "INSERT INTO shop.orders VALUES ($i, $((i * 10)), 'n$i');"; done
  for i in $(seq 1 10); do echo "UPDATE shop.orders SET amount = amount + 1 WHERE id = $i;"; done
  for i in $(seq 16 20); do echo "DELETE FROM shop.orders WHERE id = $i;"; done)"

# Wait until the PostgreSQL channel holds every transaction (its source position caught up).
for _ in $(seq 1 120); do
  sub describe --channel pgbench >"$WORK/describe.json"
  up=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["sourceUp"])' "$WORK/describe.json")
  [ "$up" = True ] && break; sleep 0.5
done
sleep 2

log "== 6/8 the seed's dts SQL job on public.pgbench_accounts (expects $((2 * TX)) rows)"
export DTS_TOPIC=pgbench DTS_SID=dts_sql DTS_USER=dtstest DTS_PASSWORD=Test123456 DTS_CHECKPOINT=$START_S
t=$(now_ms)
sql_rc=0
run_sql e2e/dts/accounts.sql --stop-after-rows $((2 * TX)) --stop-grace-ms 3000 --timeout "$TIMEOUT" \
  >"$WORK/accounts.out" 2>"$WORK/accounts.log" || sql_rc=$?
sql_ms=$(( $(now_ms) - t ))
[ "$sql_rc" -eq 0 ] || tail -30 "$WORK/accounts.log" >&2
check "SQL job ran (exit $sql_rc)" test "$sql_rc" -eq 0
"$PYTHON" e2e/dts/check.py --changelog "$WORK/accounts.out" --before "$WORK/before.txt" --after "$WORK/after.txt" \
  --history "$WORK/history.txt" >"$WORK/check.txt" || true
cat "$WORK/check.txt" >&2
while read -r status rest; do
  if [ "$status" = ok ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done <"$WORK/check.txt"

log "== 7/8 streaming CDC: dts -> setats sink -> setats-cdc (earliest), expects $STREAM_ROWS rows"
log "   = $ACCOUNTS +I + 2 x $TX_NONZERO transactions with a non-zero delta ($((TX - TX_NONZERO)) of $TX with delta 0) on $KEYS_NONZERO accounts"
export DTS_STREAM_SID=dts_stream
t=$(now_ms)
stream_rc=0
if [ "$load_rc" -eq 0 ]; then
  run_sql e2e/dts/stream.sql --stop-after-rows "$STREAM_ROWS" --stop-grace-ms 3000 --timeout "$TIMEOUT" \
    >"$WORK/stream.out" 2>"$WORK/stream.log" || stream_rc=$?
  [ "$stream_rc" -eq 0 ] || tail -30 "$WORK/stream.log" >&2
else
  log "not run: the full load failed"; stream_rc=1; : >"$WORK/stream.out"
fi
stream_ms=$(( $(now_ms) - t ))
check "streaming job ran (exit $stream_rc)" test "$stream_rc" -eq 0
"$PYTHON" e2e/dts/check_stream.py --changelog "$WORK/stream.out" --before "$WORK/before.txt" --after "$WORK/after.txt" \
  --history "$WORK/history-delta.txt" --zero "$ZERO_AID" --cancel "$CANCEL_AID" >"$WORK/check-stream.txt" || true
cat "$WORK/check-stream.txt" >&2
while read -r status rest; do
  if [ "$status" = ok ]; then passed=$((passed + 1)); else failed=$((failed + 1)); fi
done <"$WORK/check-stream.txt"

log "== 8/8 the seed's DataStream job (DtsExample) on the MariaDB channel"
# The README's command: only Arrow's java.nio is opened (DtsRecord has its own Flink serializer,
# so no Kryo reflecting into java.util).
java ${SQL_RUNNER_JAVA_OPTS:-} --add-opens=java.base/java.nio=ALL-UNNAMED -cp "$RUNNER_JAR:$CONNECTOR_JAR" io.setats.flink.dts.DtsExample \
  --broker-url "$SETATS_MANAGER_URL" --topic shop --sid dts_ds --user dtstest --password Test123456 --checkpoint "$START_S" \
  --seconds "${DTS_DATASTREAM_SECONDS:-12}" >"$WORK/datastream.out" 2>"$WORK/datastream.log" || { tail -30 "$WORK/datastream.log" >&2; }
grep -E '^DtsRecord' "$WORK/datastream.out" | head -5 >&2 || true
count() { grep -cE "^DtsRecord \{operationType \[$1\], checkpoint \[0@[0-9]+@.*@[0-9]+\]\}$" "$WORK/datastream.out" || true; }
check "DataStream: HEARTBEATs printed ($(count HEARTBEAT))" test "$(count HEARTBEAT)" -ge 3
check "DataStream: 20 INSERT, 10 UPDATE, 5 DELETE ($(count INSERT)/$(count UPDATE)/$(count DELETE))" \
  test "$(count INSERT)/$(count UPDATE)/$(count DELETE)" = 20/10/5
check "DataStream: 35 transactions (BEGIN $(count BEGIN), COMMIT $(count COMMIT))" test "$(count BEGIN)/$(count COMMIT)" = 35/35
check "gateway stops cleanly" stop_gateway

records=$("$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))["nextId"])' "$WORK/describe.json")
cat <<EOF >&2
dts e2e figures (load average $(cut -d' ' -f1-3 /proc/loadavg)):
  full load        $ACCOUNTS rows PostgreSQL -> Flink JDBC scan -> setats in $load_ms ms including JVM and planner start-up
  pgbench          $BENCH_TX transactions at -R $RATE in $bench_ms ms (gateway killed and restarted during it), then 3 deterministic ones
  capture          $records channel records for $TX transactions of $bench_ms ms of pgbench and after (each: BEGIN, the pgbench_accounts UPDATE and the pgbench_history INSERT, COMMIT: $((TX * 4)) records; + HEARTBEATs)
  SQL job          $(grep -c '\[' "$WORK/accounts.out" || true) rows in $sql_ms ms including JVM and planner start-up
  streaming job    $(grep -c '\[' "$WORK/stream.out" || true) changelog rows (expected $STREAM_ROWS: $ACCOUNTS +I, $TX_NONZERO -U/+U pairs) in $stream_ms ms including JVM, planner start-up and 3 s grace
  whole run        $(( $(now_ms) - e2e_t0 )) ms
EOF
echo "dts: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
