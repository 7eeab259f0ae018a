package io.setats.flink.catalog;

import io.setats.flink.testutils.SetatsGatewayProcess;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.RestartStrategyOptions;
import org.apache.flink.runtime.minicluster.MiniCluster;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.util.TestStreamEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.api.bridge.java.StreamTableEnvironment;
import org.apache.flink.table.catalog.CatalogBaseTable;
import org.apache.flink.table.catalog.CatalogTable;
import org.apache.flink.table.catalog.ObjectPath;
import org.apache.flink.table.catalog.exceptions.DatabaseAlreadyExistException;
import org.apache.flink.table.catalog.exceptions.DatabaseNotEmptyException;
import org.apache.flink.table.catalog.exceptions.DatabaseNotExistException;
import org.apache.flink.table.catalog.exceptions.TableAlreadyExistException;
import org.apache.flink.table.catalog.exceptions.TableNotExistException;
import org.apache.flink.test.junit5.InjectMiniCluster;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
import org.apache.flink.util.CollectionUtil;
import org.apache.flink.util.ExceptionUtils;
import org.assertj.core.api.ThrowableAssert.ThrowingCallable;
import org.junit.jupiter.api.Assumptions;
import org.junit.jupiter.api.Timeout;
import org.junit.jupiter.api.extension.RegisterExtension;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import java.util.UUID;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The Flink catalog {@code 'type' = 'setats'} (SPEC section 12) against a real gateway in a
 * MiniCluster: CREATE CATALOG, CREATE/SHOW/DROP DATABASE, CREATE TABLE with table options, SHOW
 * TABLES, DESCRIBE, INSERT INTO (the setats sink), a batch SELECT (the snapshot scan), SELECT with an OPTIONS hint (the setats-cdc
 * source, streaming), DROP TABLE and the catalog exceptions naming the object; over catalog-type
 * hadoop, and hive against the Hive Metastores 3.1.3 and 4.0.1 that e2e/hive/run.sh starts
 * (SETATS_TEST_HMS3_URI / SETATS_TEST_HMS4_URI; those cases skip without them).
 */
@Timeout(value = 300, unit = TimeUnit.SECONDS)
class SetatsCatalogITCase {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(4)
                            .build());

    static StreamTableEnvironment tableEnv(MiniCluster cluster) {
        Configuration conf = new Configuration();
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        StreamExecutionEnvironment env =
                new TestStreamEnvironment(cluster, conf, 1, Collections.emptyList(), Collections.emptyList());
        return StreamTableEnvironment.create(env);
    }

    static Configuration batchConf() {
        Configuration conf = new Configuration();
        conf.set(RestartStrategyOptions.RESTART_STRATEGY, "none");
        conf.set(org.apache.flink.configuration.ExecutionOptions.RUNTIME_MODE, org.apache.flink.api.common.RuntimeExecutionMode.BATCH);
        return conf;
    }

    /** The catalog-type and uri of a case; skips a hive case without its metastore. */
    static String[] target(String name) {
        switch (name) {
            case "hadoop":
                return new String[] {"hadoop", ""};
            case "hms3":
            case "hms4":
                String env = "SETATS_TEST_" + name.toUpperCase() + "_URI";
                String uri = System.getenv(env);
                Assumptions.assumeTrue(uri != null && !uri.isEmpty(),
                        env + " not set (e2e/hive/run.sh starts real Hive Metastores and sets it)");
                return new String[] {"hive", uri};
            default:
                throw new IllegalArgumentException(name);
        }
    }

    /** The call fails with a cause of type (a Flink catalog exception) naming what. */
    static void assertCause(ThrowingCallable call, Class<? extends Throwable> type, String what) {
        assertThatThrownBy(call).satisfies(e -> assertThat(ExceptionUtils.findThrowable(e, type))
                .as("a %s in %s", type.getSimpleName(), ExceptionUtils.stringifyException(e))
                .hasValueSatisfying(c -> assertThat(c).hasMessageContaining(what)));
    }

    static List<String> rows(TableResult r) {
        return CollectionUtil.iteratorToList(r.collect()).stream().map(Row::toString).collect(Collectors.toList());
    }

    static List<String> take(CloseableIterator<Row> it, int n) {
        List<String> out = new ArrayList<>();
        while (out.size() < n && it.hasNext()) {
            out.add(it.next().toString());
        }
        return out;
    }

    @ParameterizedTest
    @ValueSource(strings = {"hadoop", "hms3", "hms4"})
    void ddlShowDescribeInsertSelect(String name, @InjectMiniCluster MiniCluster cluster) throws Exception {
        String[] t = target(name);
        String db = "cat_" + UUID.randomUUID().toString().replace("-", "").substring(0, 8);
        StreamTableEnvironment tEnv = tableEnv(cluster);
        tEnv.executeSql("CREATE CATALOG setats_catalog WITH ("
                + "'type' = 'setats',"
                + "'manager-url' = '" + GATEWAY.managerUrl() + "',"
                + "'warehouse' = '" + GATEWAY.warehouse() + "',"
                + "'catalog-type' = '" + t[0] + "',"
                + (t[1].isEmpty() ? "" : "'uri' = '" + t[1] + "',")
                + "'catalog-name' = 'setats')");
        tEnv.executeSql("USE CATALOG setats_catalog");
        assertThat(rows(tEnv.executeSql("SHOW CURRENT DATABASE"))).containsExactly("+I[default]");

        tEnv.executeSql("CREATE DATABASE " + db);
        assertThat(rows(tEnv.executeSql("SHOW DATABASES"))).contains("+I[" + db + "]", "+I[default]");
        assertCause(() -> tEnv.executeSql("CREATE DATABASE " + db), DatabaseAlreadyExistException.class, db);

        tEnv.executeSql("CREATE TABLE " + db + ".orders ("
                + " id STRING, dt STRING, name STRING COMMENT 'who', amount DECIMAL(10, 2),"
                + " PRIMARY KEY (id, dt) NOT ENFORCED) PARTITIONED BY (dt) WITH ("
                + " 'bucket' = '2', 'bucket-key' = 'id', 'merge-engine' = 'partial-update',"
                + " 'changelog.retention.ms' = '3600000')");
        assertThat(rows(tEnv.executeSql("SHOW TABLES FROM " + db))).containsExactly("+I[orders]");
        assertCause(() -> tEnv.executeSql("CREATE TABLE " + db + ".orders (id STRING, PRIMARY KEY (id) NOT ENFORCED)"), TableAlreadyExistException.class, db + ".orders");
        assertThatThrownBy(() -> tEnv.executeSql("CREATE TABLE " + db + ".other (id STRING, PRIMARY KEY (id) NOT ENFORCED)"
                        + " WITH ('connector' = 'datagen')"))
                .satisfies(e -> assertThat(ExceptionUtils.stringifyException(e)).contains("leave out 'connector'", db + ".other"));

        List<String> describe = rows(tEnv.executeSql("DESCRIBE " + db + ".orders"));
        assertThat(describe).containsExactly(
                "+I[id, STRING, false, PRI(id, dt), null, null, null]",
                "+I[dt, STRING, false, PRI(id, dt), null, null, null]",
                "+I[name, STRING, true, null, null, null, who]",
                "+I[amount, DECIMAL(10, 2), true, null, null, null, null]");
        CatalogBaseTable table = tEnv.getCatalog("setats_catalog").get().getTable(new ObjectPath(db, "orders"));
        assertThat(((CatalogTable) table).getPartitionKeys()).containsExactly("dt");
        assertThat(table.getOptions())
                .containsEntry("bucket", "2").containsEntry("bucket-key", "id")
                .containsEntry("merge-engine", "PARTIAL_UPDATE").containsEntry("changelog.retention.ms", "3600000")
                .doesNotContainKey("connector");

        tEnv.executeSql("INSERT INTO " + db + ".orders VALUES"
                + " ('1', '20261201', 'alice', 1.50), ('2', '20261201', 'bob', 2.00)").await();
        // Partial update: only name for key 1; amount keeps its value.
        tEnv.executeSql("INSERT INTO " + db + ".orders /*+ OPTIONS('setats.sink.flush-interval' = '100ms') */"
                + " VALUES ('1', '20261201', 'alice2', CAST(NULL AS DECIMAL(10, 2)))").await();

        try (CloseableIterator<Row> it = tEnv.executeSql("SELECT id, dt, name, amount FROM " + db + ".orders"
                + " /*+ OPTIONS('startup.mode' = 'earliest') */").collect()) {
            List<String> got = take(it, 4);
            assertThat(got).containsExactlyInAnyOrder(
                    "+I[1, 20261201, alice, 1.50]", "+I[2, 20261201, bob, 2.00]",
                    "-U[1, 20261201, alice, 1.50]", "+U[1, 20261201, alice2, 1.50]");
        }
        assertThatThrownBy(() -> tEnv.executeSql("SELECT * FROM " + db + ".orders /*+ OPTIONS('startup.mode' = 'sideways') */").collect())
                .satisfies(e -> assertThat(ExceptionUtils.stringifyException(e)).contains("startup.mode", "sideways"));

        // Batch mode: a catalog table is the snapshot scan (merged rows, +I only, SPEC section 13).
        StreamTableEnvironment bEnv =
                StreamTableEnvironment.create(
                        new TestStreamEnvironment(cluster, batchConf(), 1, Collections.emptyList(), Collections.emptyList()),
                        org.apache.flink.table.api.EnvironmentSettings.inBatchMode());
        bEnv.registerCatalog("setats_catalog", tEnv.getCatalog("setats_catalog").get());
        assertThat(rows(bEnv.executeSql("SELECT id, name, amount FROM setats_catalog." + db + ".orders WHERE dt = '20261201'")))
                .containsExactlyInAnyOrder("+I[1, alice2, 1.50]", "+I[2, bob, 2.00]");
        // A sink option on a read is refused, naming it.
        assertThatThrownBy(() -> bEnv.executeSql("SELECT * FROM setats_catalog." + db + ".orders"
                        + " /*+ OPTIONS('setats.sink.flush-interval' = '1s') */").collect())
                .satisfies(e -> assertThat(ExceptionUtils.stringifyException(e)).contains("used as a source: [setats.sink.flush-interval]"));

        tEnv.executeSql("DROP TABLE " + db + ".orders");
        assertThat(rows(tEnv.executeSql("SHOW TABLES FROM " + db))).isEmpty();
        // Flink checks existence itself before DROP TABLE; the catalog's own answer follows.
        assertThatThrownBy(() -> tEnv.executeSql("DROP TABLE " + db + ".orders"))
                .hasMessageContaining("setats_catalog." + db + ".orders").hasMessageContaining("does not exist");
        assertThatThrownBy(() -> tEnv.getCatalog("setats_catalog").get().dropTable(new ObjectPath(db, "orders"), false))
                .isInstanceOf(TableNotExistException.class).hasMessageContaining(db + ".orders");
        tEnv.getCatalog("setats_catalog").get().dropTable(new ObjectPath(db, "orders"), true);
        assertThatThrownBy(() -> tEnv.getCatalog("setats_catalog").get().getTable(new ObjectPath(db, "orders")))
                .isInstanceOf(TableNotExistException.class).hasMessageContaining(db + ".orders");
        assertThatThrownBy(() -> tEnv.getCatalog("setats_catalog").get().listTables(db + "_missing"))
                .isInstanceOf(DatabaseNotExistException.class).hasMessageContaining(db + "_missing");

        tEnv.executeSql("CREATE TABLE " + db + ".kept (id INT, PRIMARY KEY (id) NOT ENFORCED)");
        assertCause(() -> tEnv.executeSql("DROP DATABASE " + db), DatabaseNotEmptyException.class, db);
        tEnv.executeSql("DROP DATABASE " + db + " CASCADE");
        assertThat(rows(tEnv.executeSql("SHOW DATABASES"))).doesNotContain("+I[" + db + "]");
    }
}
