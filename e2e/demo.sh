#!/usr/bin/env bash
# make demo: the seeds' pipeline on this machine, end to end.
#   1. starts the gateway with its defaults (Flight :8815, admin :8816, embedded NATS :4222; free
#      ports instead when those are taken) on a fresh local warehouse under .demo/warehouse
#   2. runs the seed's write job (e2e/sql/demo-write.sql) in an embedded Flink: 20 rows
#   3. starts the seed's CDC job (e2e/sql/demo-cdc.sql, startup.mode earliest) and prints the
#      changelog as it arrives: DebugData> +I[...], -U[...], +U[...]
#   4. once the CDC job has caught up, runs the update pass (e2e/sql/demo-update.sql, the seed's
#      partial-update sink): 10 names change, whose -U/+U rows the CDC job prints as they come
#   5. stops the CDC job once every expected row was printed (or after DEMO_TIMEOUT s), then the
#      gateway (SIGTERM), and checks the counts.
# Running it again starts from scratch: a gateway or SQL runner left by an earlier demo is stopped and
# .demo/ is removed first. Build first with `make build` (make demo does).
set -euo pipefail
source "$(dirname "$0")/lib.sh"
cd "$REPO_DIR"

DEMO_DIR=$REPO_DIR/.demo
export DEMO_ROWS=${DEMO_ROWS:-20} DEMO_UPDATES=${DEMO_UPDATES:-10} DEMO_DT=${DEMO_DT:-$(date +%Y%m%d)}
DEMO_TIMEOUT=${DEMO_TIMEOUT:-240}
expected=$((DEMO_ROWS + 2 * DEMO_UPDATES))

require_artifacts "$SETATS_BIN" "$CONNECTOR_JAR" "$RUNNER_JAR" || die "build first: make build"

# Processes left by an earlier demo that was killed (kill -9 skips its clean-up): the gateway and
# SQL runners it recorded in .demo/pids are stopped first, if they are still those processes.
if [ -f "$DEMO_DIR/pids" ]; then
  while read -r old; do
    if kill -0 "$old" 2>/dev/null && grep -qa -e 'setats' "/proc/$old/cmdline" 2>/dev/null; then
      log "stopping pid $old, left by an earlier demo"
      kill -TERM "$old" 2>/dev/null || true
      for _ in $(seq 1 100); do kill -0 "$old" 2>/dev/null || break; sleep 0.1; done
      kill -KILL "$old" 2>/dev/null || true
    fi
  done <"$DEMO_DIR/pids"
fi
rm -rf "$DEMO_DIR"
mkdir -p "$DEMO_DIR"

port_free() { "$PYTHON" -c 'import socket,sys; s=socket.socket(); s.setsockopt(socket.SOL_SOCKET, socket.SO_REUSEADDR, 1); s.bind(("127.0.0.1", int(sys.argv[1]))); s.close()' "$1" 2>/dev/null; }
if port_free 8815 && port_free 8816 && port_free 4222; then
  # The defaults (what `setats serve` does with no flag), on loopback.
  export GATEWAY_FLIGHT_ADDR=127.0.0.1:8815 GATEWAY_ADMIN_ADDR=127.0.0.1:8816 GATEWAY_NATS_LISTEN=127.0.0.1:4222
else
  log "a default port (8815, 8816 or 4222) is taken on this machine: the gateway uses free ports instead"
fi

cdc_pid=
write_pid=
# record_java PID: notes PID's java child (a background run_sql) in .demo/pids.
record_java() {
  local child=
  for _ in $(seq 1 50); do child=$(pgrep -P "$1" java || true); [ -n "$child" ] && break; sleep 0.1; done
  [ -n "$child" ] && echo "$child" >>"$DEMO_DIR/pids"
  return 0
}
cleanup() {
  local rc=$?
  [ -n "$write_pid" ] && kill_tree "$write_pid"
  [ -n "$cdc_pid" ] && kill_tree "$cdc_pid"
  stop_gateway || true
  rm -f "$DEMO_DIR/pids"
  exit $rc
}
trap cleanup EXIT
trap 'exit 130' INT TERM

log "== 1/5 gateway (embedded NATS, warehouse $DEMO_DIR/warehouse)"
start_gateway "$DEMO_DIR/warehouse" "$DEMO_DIR/gateway.log"
echo "$GATEWAY_PID" >>"$DEMO_DIR/pids"

log "== 2/5 write job: e2e/sql/demo-write.sql ($DEMO_ROWS rows; runner log: .demo/write.log)"
t0=$(now_ms)
run_sql e2e/sql/demo-write.sql --timeout "$DEMO_TIMEOUT" >"$DEMO_DIR/write.out" 2>"$DEMO_DIR/write.log" &
write_pid=$!
record_java "$write_pid"
rc=0; wait "$write_pid" || rc=$?; write_pid=
[ "$rc" -eq 0 ] || { tail -30 "$DEMO_DIR/write.log" >&2; die "write job failed (exit $rc); see .demo/write.log"; }
log "write job done in $(( $(now_ms) - t0 )) ms"

log "== 3/5 CDC job: e2e/sql/demo-cdc.sql (earliest; stops after $expected rows; runner log: .demo/cdc.log)"
log "changelog rows as they arrive:"
: >"$DEMO_DIR/changelog.txt"
run_sql e2e/sql/demo-cdc.sql --stop-after-rows "$expected" --stop-grace-ms 2000 --timeout "$DEMO_TIMEOUT" \
  >"$DEMO_DIR/changelog.txt" 2>"$DEMO_DIR/cdc.log" &
cdc_pid=$!
record_java "$cdc_pid"
tail -n +1 -s 0.2 -f --pid="$cdc_pid" "$DEMO_DIR/changelog.txt" &
tail_pid=$!

# The update pass starts once the CDC job has caught up with the inserts, so that its -U/+U rows
# are seen arriving.
for _ in $(seq 1 "$((DEMO_TIMEOUT * 5))"); do
  [ "$(grep -c '\[' "$DEMO_DIR/changelog.txt" || true)" -ge "$DEMO_ROWS" ] && break
  kill -0 "$cdc_pid" 2>/dev/null || break
  sleep 0.2
done

log "== 4/5 update job: e2e/sql/demo-update.sql ($DEMO_UPDATES names changed with the seed's partial-update sink; runner log: .demo/update.log)"
run_sql e2e/sql/demo-update.sql --timeout "$DEMO_TIMEOUT" >"$DEMO_DIR/update.out" 2>"$DEMO_DIR/update.log" &
write_pid=$!
record_java "$write_pid"
rc=0; wait "$write_pid" || rc=$?; write_pid=
[ "$rc" -eq 0 ] || { tail -30 "$DEMO_DIR/update.log" >&2; die "update job failed (exit $rc); see .demo/update.log"; }

cdc_rc=0
wait "$cdc_pid" || cdc_rc=$?
cdc_pid=
wait "$tail_pid" || true # the tail printing the changelog ends with the CDC job
if [ "$cdc_rc" -ne 0 ]; then
  tail -30 "$DEMO_DIR/cdc.log" >&2
  die "CDC job failed (exit $cdc_rc); see .demo/cdc.log"
fi

log "== 5/5 stopping the gateway (SIGTERM)"
stop_gateway || die "gateway did not exit 0 on SIGTERM; see .demo/gateway.log"

count() { grep -c -E "> \\$1\\[" "$DEMO_DIR/changelog.txt" || true; }
ins=$(count '+I'); ub=$(count '-U'); ua=$(count '+U'); del=$(count '-D')
total=$((ins + ub + ua + del))
echo
echo "demo changelog: $total rows: $ins +I, $ub -U, $ua +U, $del -D (expected $DEMO_ROWS +I, $DEMO_UPDATES -U, $DEMO_UPDATES +U)"
echo "demo took $(( $(now_ms) - t0 )) ms from the write job's start; files in .demo/ (gateway.log, write.log, write.out, update.log, update.out, cdc.log, changelog.txt)"
if [ "$ins" -ne "$DEMO_ROWS" ] || [ "$ub" -ne "$DEMO_UPDATES" ] || [ "$ua" -ne "$DEMO_UPDATES" ] || [ "$del" -ne 0 ]; then
  die "the changelog does not have the expected rows"
fi
echo "demo: OK"
