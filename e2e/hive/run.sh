#!/usr/bin/env bash
# e2e/hive: the Hive Metastore catalog (SPEC section 12) against real metastores.
# Fetches HMS 3.1.3 and 4.0.1 (and the Hadoop client jars) from Maven Central once, starts both on
# free loopback ports with embedded Derby databases initialised by schematool, then runs
#   - go test ./catalog/hive/ -run Conformance   (hadoop, hms3, hms4)
#   - the connector's ITCases of io.setats.flink.catalog (SeedDdlHiveITCase: the seeds' DDL with
#     catalog-type = hive; SetatsCatalogITCase: the Flink catalog over hadoop, HMS 3, HMS 4) with
#     mvn verify (which builds the connector), unless HIVE_JAVA=0
# with SETATS_TEST_HMS3_URI / SETATS_TEST_HMS4_URI set. Closes with `hive: N passed, N failed`.
set -uo pipefail
source "$(dirname "$0")/../lib.sh"
source "$(dirname "$0")/hms.sh"
cd "$REPO_DIR"

WORK=$REPO_DIR/e2e/.work/hive-run
mkdir -p "$WORK"
rm -f "$WORK"/hms*.started
passed=0 failed=0
pids=()
cleanup() { for p in "${pids[@]}"; do stop_hms "$p"; done; }
trap cleanup EXIT

fetch_hms || die "could not fetch the Hive Metastore distributions"
# Both metastores start at once (schematool and the JVM start take most of this suite's time).
for v in 3.1.3 4.0.1; do
  d=$WORK/hms${v%%.*}
  ( start_hms "$v" "$d" && echo "$HMS_PORT $HMS_PID" >"$d.started" ) &
done
wait
for n in 3 4; do
  [ -s "$WORK/hms$n.started" ] || die "HMS $n did not start"
  read -r port pid <"$WORK/hms$n.started"
  pids+=("$pid")
  export "SETATS_TEST_HMS${n}_URI=thrift://127.0.0.1:$port"
done

# count_go LOG: passed / failed top-level and sub tests of `go test -v`.
count_go() {
  local p f
  p=$(grep -cE '^\s*--- PASS' "$1" || true); f=$(grep -cE '^\s*--- FAIL' "$1" || true)
  passed=$((passed + p)); failed=$((failed + f))
}

log "== hive: go test ./catalog/hive/ (conformance over hadoop, HMS 3.1.3, HMS 4.0.1)"
rc=0
go test -count=1 -v ./catalog/hive/ 2>&1 | tee "$WORK/go.log" | grep -E '^(=== RUN|\s*--- |ok|FAIL|PASS)' || true
rc=${PIPESTATUS[0]}
count_go "$WORK/go.log"
if [ "$rc" -ne 0 ] && ! grep -qE '^\s*--- FAIL' "$WORK/go.log"; then failed=$((failed + 1)); fi
if grep -qE -- '--- SKIP: TestConformance.*/hms' "$WORK/go.log"; then
  log "hive: a metastore case skipped although both URIs are set"; failed=$((failed + 1))
fi

if [ "${HIVE_JAVA:-1}" != 0 ] && [ -f connector-java/pom.xml ] && ls connector-java/src/test/java/io/setats/flink/catalog/*Hive*ITCase.java >/dev/null 2>&1; then
  log "== hive: connector ITCases over the metastores"
  [ -x "$SETATS_BIN" ] || die "$SETATS_BIN not built"
  its=$(cd connector-java/src/test/java && ls io/setats/flink/catalog/*ITCase.java | xargs -n1 basename | sed 's/\.java$//' | paste -sd,)
  rc=0
  mvn -B -ntp -f connector-java/pom.xml verify -Dit.test="$its" -Dtest=NoUnitTests -Dsurefire.failIfNoSpecifiedTests=false \
    -Dfailsafe.failIfNoSpecifiedTests=false -Djacoco.skip=true 2>&1 | tee "$WORK/java.log" | grep -E 'Tests run|ERROR|FAIL' || true
  rc=${PIPESTATUS[0]}
  line=$(grep -E 'Tests run: [0-9]+, Failures' "$WORK/java.log" | tail -1 || true)
  run=$(sed -nE 's/.*Tests run: ([0-9]+).*/\1/p' <<<"$line"); fl=$(sed -nE 's/.*Failures: ([0-9]+), Errors: ([0-9]+).*/\1 \2/p' <<<"$line")
  run=${run:-0}; set -- $fl; nf=$(( ${1:-0} + ${2:-0} ))
  sk=$(sed -nE 's/.*Skipped: ([0-9]+).*/\1/p' <<<"$line"); sk=${sk:-0}
  passed=$((passed + run - nf - sk)); failed=$((failed + nf))
  if [ "$rc" -ne 0 ] && [ "$nf" -eq 0 ]; then failed=$((failed + 1)); fi
  # Both metastore URIs are set: a skipped case means a test did not see them.
  if [ "$sk" -ne 0 ]; then log "hive: $sk connector ITCases skipped although both URIs are set"; failed=$((failed + 1)); fi
fi

echo "hive: $passed passed, $failed failed"
[ "$failed" -eq 0 ]
