# Shared helpers of the e2e scripts and the demo (source it; bash). Nothing here runs on its own.
#
#   start_gateway WAREHOUSE_DIR LOG_FILE [extra serve flags]
#       starts bin/setats serve on free loopback ports (Flight, admin, embedded NATS) and waits
#       until it serves; sets GATEWAY_PID, SETATS_MANAGER_URL (grpc://127.0.0.1:PORT),
#       SETATS_ADMIN_URL (http://127.0.0.1:PORT), SETATS_WAREHOUSE (as the gateway reports it) and
#       exports them, so that ${SETATS_MANAGER_URL} etc. fill SQL files; GATEWAY_NATS_URL (not
#       exported: SETATS_NATS_URL would make the next gateway started from here use that NATS).
#   stop_gateway      SIGTERM, wait (30 s at most), fail unless it exited 0
#   run_sql FILE [runner options]   the SQL runner with the connector jar on its class path

E2E_DIR=$(cd "$(dirname "${BASH_SOURCE[0]}")" && pwd)
REPO_DIR=$(cd "$E2E_DIR/.." && pwd)
SETATS_BIN=${SETATS_BIN:-$REPO_DIR/bin/setats}
RUNNER_JAR=${RUNNER_JAR:-$REPO_DIR/e2e/sql-runner/target/setats-sql-runner-0.1.0.jar}
CONNECTOR_JAR=${CONNECTOR_JAR:-$REPO_DIR/connector-java/target/setats-flink-connector-0.1.0.jar}
PYTHON=${PYTHON:-python3}

# Flink 1.20 on Java 17 reflects into these packages (the JDK options Flink's own scripts pass).
JAVA_OPENS=(
  --add-opens=java.base/java.nio=ALL-UNNAMED --add-opens=java.base/java.lang=ALL-UNNAMED
  --add-opens=java.base/java.util=ALL-UNNAMED --add-opens=java.base/java.lang.reflect=ALL-UNNAMED
  --add-opens=java.base/java.io=ALL-UNNAMED --add-opens=java.base/sun.nio.ch=ALL-UNNAMED
  --add-opens=java.base/java.net=ALL-UNNAMED --add-opens=java.base/java.util.concurrent=ALL-UNNAMED
  --add-opens=java.base/java.util.concurrent.atomic=ALL-UNNAMED --add-opens=java.base/java.text=ALL-UNNAMED
  --add-opens=java.base/java.time=ALL-UNNAMED --add-opens=java.sql/java.sql=ALL-UNNAMED
)

log() { printf '[%s] %s\n' "$(date +%H:%M:%S)" "$*" >&2; }
die() { log "FAIL: $*"; exit 1; }

# now_ms: wall clock in ms.
now_ms() { date +%s%3N; }

require_artifacts() {
  local missing=0 f
  for f in "$@"; do
    if [ ! -e "$f" ]; then log "missing $f (run 'make build')"; missing=1; fi
  done
  return $missing
}

# json_field FILE KEY: a top-level string field of a JSON file.
json_field() { "$PYTHON" -c 'import json,sys; print(json.load(open(sys.argv[1]))[sys.argv[2]])' "$1" "$2"; }

start_gateway() {
  local wh=$1 logf=$2; shift 2
  local ready
  ready="$(dirname "$logf")/gateway.ready.json"
  rm -f "$ready"
  mkdir -p "$wh" "$(dirname "$logf")"
  "$SETATS_BIN" serve --warehouse "$wh" \
    --flight-addr "${GATEWAY_FLIGHT_ADDR:-127.0.0.1:0}" --admin-addr "${GATEWAY_ADMIN_ADDR:-127.0.0.1:0}" \
    --nats-listen "${GATEWAY_NATS_LISTEN:-127.0.0.1:-1}" --ready-file "$ready" "$@" >"$logf" 2>&1 </dev/null &
  GATEWAY_PID=$!
  local i
  for i in $(seq 1 600); do
    if [ -s "$ready" ]; then break; fi
    if ! kill -0 "$GATEWAY_PID" 2>/dev/null; then
      wait "$GATEWAY_PID" || true
      tail -20 "$logf" >&2
      die "gateway exited during start-up (log: $logf)"
    fi
    sleep 0.1
  done
  [ -s "$ready" ] || { tail -20 "$logf" >&2; die "gateway not ready after 60 s (log: $logf)"; }
  local flight admin
  flight=$(json_field "$ready" flight_addr)
  admin=$(json_field "$ready" admin_addr)
  GATEWAY_NATS_URL=$(json_field "$ready" nats_url)
  SETATS_WAREHOUSE=$(json_field "$ready" warehouse)
  SETATS_MANAGER_URL="grpc://${flight/#:/127.0.0.1:}"
  SETATS_ADMIN_URL="http://${admin/#:/127.0.0.1:}"
  export SETATS_MANAGER_URL SETATS_ADMIN_URL SETATS_WAREHOUSE GATEWAY_PID
  log "gateway pid $GATEWAY_PID: flight $SETATS_MANAGER_URL, admin $SETATS_ADMIN_URL, nats $GATEWAY_NATS_URL, warehouse $SETATS_WAREHOUSE"
}

stop_gateway() {
  [ -n "${GATEWAY_PID:-}" ] || return 0
  local pid=$GATEWAY_PID rc=0 i
  GATEWAY_PID=
  kill -TERM "$pid" 2>/dev/null || return 0
  for i in $(seq 1 300); do
    kill -0 "$pid" 2>/dev/null || break
    sleep 0.1
  done
  if kill -0 "$pid" 2>/dev/null; then
    log "gateway pid $pid still running 30 s after SIGTERM: killing it"
    kill -KILL "$pid" 2>/dev/null || true
    wait "$pid" 2>/dev/null || true
    return 1
  fi
  wait "$pid" || rc=$?
  log "gateway pid $pid stopped (exit $rc)"
  return $rc
}

# kill_tree PID [SIGNAL]: signals PID's descendants, then PID (a background `run_sql &` is a
# subshell whose child is the java process).
kill_tree() {
  local pid=$1 sig=${2:-TERM} child
  for child in $(pgrep -P "$pid" 2>/dev/null); do kill_tree "$child" "$sig"; done
  kill "-$sig" "$pid" 2>/dev/null || true
}

run_sql() {
  java ${SQL_RUNNER_JAVA_OPTS:-} "${JAVA_OPENS[@]}" -cp "$RUNNER_JAR:$CONNECTOR_JAR" io.setats.sqlrunner.SqlRunner "$@"
}
