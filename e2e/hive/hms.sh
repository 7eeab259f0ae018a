# Hive Metastore helpers for e2e/hive/run.sh (source it after e2e/lib.sh; bash).
#
#   fetch_hms            mvn -f e2e/hive/pom.xml: the HMS 3.1.3 and 4.0.1 bin tarballs and the Hadoop
#                        client jars from Maven Central, unpacked under $HIVE_WORK (cached: e2e/.work
#                        is ignored by git, the downloads stay in ~/.m2)
#   start_hms VERSION DIR   schematool -initSchema on an embedded Derby database in DIR (once per
#                        version and $HIVE_WORK: the initialised database is kept as a template and
#                        copied for the next start), then the metastore on a free loopback port;
#                        waits until it answers; sets HMS_PORT, HMS_PID
#   stop_hms PID         SIGTERM, then SIGKILL after 20 s

HIVE_WORK=${HIVE_WORK:-$REPO_DIR/e2e/.work/hive}
HADOOP_VERSION=3.3.6
# Short-lived JVMs on a busy 2-core machine: C1 only, the serial collector, and Derby without
# fsync (a test metastore need not survive a power cut). This halves schematool's CPU time.
HMS_JAVA_OPTS=(-XX:TieredStopAtLevel=1 -XX:+UseSerialGC -Dderby.system.durability=test)

fetch_hms() {
  if [ -d "$HIVE_WORK/dist/apache-hive-metastore-3.1.3-bin/lib" ] && [ -d "$HIVE_WORK/dist/apache-hive-metastore-4.0.1-bin/lib" ] &&
     [ -f "$HIVE_WORK/hadoop-$HADOOP_VERSION/hadoop-hdfs-$HADOOP_VERSION.jar" ]; then
    log "hive: metastore distributions cached in $HIVE_WORK"
    return 0
  fi
  log "hive: fetching Hive Metastore 3.1.3 / 4.0.1 and Hadoop $HADOOP_VERSION client jars (Maven Central)"
  mvn -B -ntp -q -f "$REPO_DIR/e2e/hive/pom.xml" -Dhive.work="$HIVE_WORK" process-resources
}

# free_port: a free loopback TCP port.
free_port() { "$PYTHON" -c 'import socket; s=socket.socket(); s.bind(("127.0.0.1",0)); print(s.getsockname()[1]); s.close()'; }

start_hms() {
  local v=$1 d=$2 home st
  home=$HIVE_WORK/dist/apache-hive-metastore-$v-bin
  case $v in
    3.1.3) st=org.apache.hadoop.hive.metastore.tools.MetastoreSchemaTool ;;
    *) st=org.apache.hadoop.hive.metastore.tools.schematool.MetastoreSchemaTool ;;
  esac
  rm -rf "$d"; mkdir -p "$d/conf"
  HMS_PORT=$(free_port)
  cat >"$d/conf/metastore-site.xml" <<XML
<configuration>
  <property><name>javax.jdo.option.ConnectionURL</name><value>jdbc:derby:;databaseName=$d/metastore_db;create=true</value></property>
  <property><name>javax.jdo.option.ConnectionDriverName</name><value>org.apache.derby.jdbc.EmbeddedDriver</value></property>
  <property><name>metastore.warehouse.dir</name><value>file://$d/hive-warehouse</value></property>
  <property><name>metastore.warehouse.external.dir</name><value>file://$d/hive-external</value></property>
  <property><name>metastore.thrift.port</name><value>$HMS_PORT</value></property>
  <property><name>metastore.thrift.bind.host</name><value>127.0.0.1</value></property>
  <property><name>metastore.task.threads.always</name><value>org.apache.hadoop.hive.metastore.events.EventCleanerTask</value></property>
  <property><name>metastore.expression.proxy</name><value>org.apache.hadoop.hive.metastore.DefaultPartitionExpressionProxy</value></property>
  <property><name>metastore.schema.verification</name><value>true</value></property>
  <property><name>metastore.event.db.notification.api.auth</name><value>false</value></property>
  <property><name>metastore.async.log.enabled</name><value>false</value></property>
  <property><name>metastore.hmshandler.retry.attempts</name><value>1</value></property>
</configuration>
XML
  cp "$home/conf/metastore-log4j2.properties" "$d/conf/"
  local cp="$d/conf:$home/lib/*:$HIVE_WORK/hadoop-$HADOOP_VERSION/*"
  local tmpl=$HIVE_WORK/derby-$v
  if [ -d "$tmpl/metastore_db" ]; then
    log "hive: HMS $v: Derby database from the schematool template $tmpl"
    cp -a "$tmpl/metastore_db" "$d/metastore_db"
  else
    log "hive: HMS $v: schematool -initSchema (Derby in $d)"
    METASTORE_HOME=$home METASTORE_CONF_DIR=$d/conf java "${JAVA_OPENS[@]}" "${HMS_JAVA_OPTS[@]}" -Dderby.stream.error.file="$d/derby-schematool.log" -Xmx256m -cp "$cp" "$st" \
      -dbType derby -initSchema >"$d/schematool.log" 2>&1 </dev/null ||
      { tail -20 "$d/schematool.log" >&2; die "schematool of HMS $v failed ($d/schematool.log)"; }
    rm -rf "$tmpl.tmp" && mkdir -p "$tmpl.tmp" && cp -a "$d/metastore_db" "$tmpl.tmp/" && mv "$tmpl.tmp" "$tmpl"
  fi
  METASTORE_HOME=$home METASTORE_CONF_DIR=$d/conf java "${JAVA_OPENS[@]}" "${HMS_JAVA_OPTS[@]}" -Dderby.stream.error.file="$d/derby.log" -Xmx512m -Dmetastore.log.dir="$d" -cp "$cp" \
    org.apache.hadoop.hive.metastore.HiveMetaStore -p "$HMS_PORT" >"$d/hms.log" 2>&1 </dev/null &
  HMS_PID=$!
  local i
  for i in $(seq 1 600); do
    if ! kill -0 "$HMS_PID" 2>/dev/null; then tail -20 "$d/hms.log" >&2; die "HMS $v exited while starting ($d/hms.log)"; fi
    if "$PYTHON" -c 'import socket,sys; socket.create_connection(("127.0.0.1", int(sys.argv[1])), 1).close()' "$HMS_PORT" 2>/dev/null; then
      log "hive: HMS $v serves thrift://127.0.0.1:$HMS_PORT (pid $HMS_PID)"
      return 0
    fi
    sleep 0.5
  done
  die "HMS $v did not listen on port $HMS_PORT within 300 s ($d/hms.log)"
}

stop_hms() {
  local pid=$1 i
  kill "$pid" 2>/dev/null || return 0
  for i in $(seq 1 40); do kill -0 "$pid" 2>/dev/null || return 0; sleep 0.5; done
  kill -9 "$pid" 2>/dev/null || true
}
