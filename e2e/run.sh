#!/usr/bin/env bash
# make test-e2e: the end-to-end suites, each against real processes, then one summary line.
#   pytest    e2e/tests: the pyarrow Flight client against a gateway, the README's pyarrow example,
#             docker-compose/Dockerfile checks, check.py on hand-made inputs
#   pgbench   e2e/pgbench/run.sh: PostgreSQL + pgbench -> Flink -> setats -> setats-cdc, checked
#   demo      e2e/demo.sh: the README's `make demo` pipeline, its changelog counted
#   dts       e2e/dts/run.sh: PostgreSQL + MariaDB -> subscription channels -> dts SQL and DataStream jobs,
#             and pgbench's changes streamed (dts -> setats sink -> setats-cdc) into a loaded table, checked
#   hive      e2e/hive/run.sh: real Hive Metastores 3.1.3 and 4.0.1 (from Maven Central), the Go
#             catalog conformance suite and the connector's Hive ITCases against them
# A suite whose parts are not built yet (gateway, connector, SQL runner) is skipped with a message.
# The last line is `e2e: N passed, N failed` (checks and tests, summed over the suites).
set -uo pipefail
source "$(dirname "$0")/lib.sh"
cd "$REPO_DIR"

passed=0 failed=0 skipped=0
summary=()
WORK=$REPO_DIR/e2e/.work
mkdir -p "$WORK"

# add_counts NAME LOGFILE EXIT_CODE: takes "N passed" / "N failed" from the suite's last summary line.
add_counts() {
  local name=$1 logf=$2 rc=$3 line p f
  line=$(grep -E '([0-9]+ passed|[0-9]+ failed)' "$logf" | tail -1 || true)
  p=$(grep -oE '[0-9]+ passed' <<<"$line" | grep -oE '[0-9]+' || true); p=${p:-0}
  f=$(grep -oE '[0-9]+ failed' <<<"$line" | grep -oE '[0-9]+' || true); f=${f:-0}
  if [ "$rc" -ne 0 ] && [ "$f" -eq 0 ]; then f=1; fi  # a suite that died before its checks counts as one failure
  passed=$((passed + p)); failed=$((failed + f))
  summary+=("$(printf '%-8s %s passed, %s failed (exit %s, %s)' "$name" "$p" "$f" "$rc" "$logf")")
}

skip() { skipped=$((skipped + 1)); summary+=("$(printf '%-8s skipped: %s' "$1" "$2")"); log "skip $1: $2"; }

have_gateway=0; [ -x "$SETATS_BIN" ] && have_gateway=1
have_flink=0; [ -f "$CONNECTOR_JAR" ] && [ -f "$RUNNER_JAR" ] && have_flink=1

log "== e2e: pytest e2e/tests (pyarrow client, README example, docker-compose, pgbench check rules)"
if [ "$have_gateway" = 1 ]; then
  rc=0
  "$PYTHON" -m pytest -q -p no:cacheprovider e2e/tests 2>&1 | tee "$WORK/pytest.log" || rc=$?
  add_counts pytest "$WORK/pytest.log" "$rc"
else
  skip pytest "$SETATS_BIN not built (gateway/cmd/setats missing)"
fi

log "== e2e: pgbench through Flink (e2e/pgbench/run.sh)"
if [ "$have_gateway" = 1 ] && [ "$have_flink" = 1 ]; then
  rc=0
  bash e2e/pgbench/run.sh 2>&1 | tee "$WORK/pgbench.log" || rc=$?
  add_counts pgbench "$WORK/pgbench.log" "$rc"
else
  skip pgbench "needs $SETATS_BIN, $CONNECTOR_JAR and $RUNNER_JAR"
fi

log "== e2e: data subscription (e2e/dts/run.sh)"
if [ "$have_gateway" = 1 ] && [ "$have_flink" = 1 ]; then
  rc=0
  bash e2e/dts/run.sh 2>&1 | tee "$WORK/dts.log" || rc=$?
  add_counts dts "$WORK/dts.log" "$rc"
else
  skip dts "needs $SETATS_BIN, $CONNECTOR_JAR and $RUNNER_JAR"
fi

log "== e2e: demo (e2e/demo.sh)"
if [ "$have_gateway" = 1 ] && [ "$have_flink" = 1 ]; then
  rc=0
  bash e2e/demo.sh 2>&1 | tee "$WORK/demo.log" || rc=$?
  if [ "$rc" -eq 0 ] && grep -q '^demo: OK' "$WORK/demo.log"; then p=1; f=0; else p=0; f=1; fi
  passed=$((passed + p)); failed=$((failed + f))
  summary+=("$(printf '%-8s %s passed, %s failed (exit %s, %s)' demo "$p" "$f" "$rc" "$WORK/demo.log")")
else
  skip demo "needs $SETATS_BIN, $CONNECTOR_JAR and $RUNNER_JAR"
fi

log "== e2e: Hive Metastore catalog (e2e/hive/run.sh)"
if [ "$have_gateway" = 1 ]; then
  rc=0
  bash e2e/hive/run.sh 2>&1 | tee "$WORK/hive.log" || rc=$?
  add_counts hive "$WORK/hive.log" "$rc"
else
  skip hive "$SETATS_BIN not built (gateway/cmd/setats missing)"
fi

echo
echo "e2e suites:"
printf '  %s\n' "${summary[@]}"
if [ $((passed + failed)) -eq 0 ]; then
  echo "e2e: nothing to run yet ($skipped suites skipped)"
  exit 0
fi
if [ "$skipped" -gt 0 ]; then
  echo "e2e: $passed passed, $failed failed, $skipped skipped"
else
  echo "e2e: $passed passed, $failed failed"
fi
[ "$failed" -eq 0 ]
