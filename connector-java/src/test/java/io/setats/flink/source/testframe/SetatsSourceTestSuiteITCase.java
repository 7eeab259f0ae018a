package io.setats.flink.source.testframe;

import io.setats.flink.SetatsConnectorOptions.StartupMode;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.source.SetatsCdcSource;
import io.setats.flink.source.deserializer.ChangelogRecord;
import io.setats.flink.source.deserializer.SetatsDeserializationSchema;
import io.setats.flink.testutils.SetatsGatewayProcess;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.connector.testframe.environment.MiniClusterTestEnvironment;
import org.apache.flink.connector.testframe.external.ExternalContextFactory;
import org.apache.flink.connector.testframe.external.ExternalSystemSplitDataWriter;
import org.apache.flink.connector.testframe.external.source.DataStreamSourceExternalContext;
import org.apache.flink.connector.testframe.external.source.TestingSourceSettings;
import org.apache.flink.connector.testframe.junit.annotations.TestContext;
import org.apache.flink.connector.testframe.junit.annotations.TestEnv;
import org.apache.flink.connector.testframe.junit.annotations.TestExternalSystem;
import org.apache.flink.connector.testframe.junit.annotations.TestSemantics;
import org.apache.flink.connector.testframe.testsuites.SourceTestSuiteBase;
import org.apache.flink.core.execution.CheckpointingMode;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;

import java.net.URL;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.List;
import java.util.Random;
import java.util.concurrent.atomic.AtomicInteger;

import static io.setats.flink.source.SourceTestTables.create;
import static io.setats.flink.source.SourceTestTables.insert;
import static io.setats.flink.source.SourceTestTables.spec;
import static io.setats.flink.source.SourceTestTables.write;

/**
 * Flink's connector testing framework ({@code flink-connector-test-utils} 1.20) run against the
 * {@code setats-cdc} source: {@link SourceTestSuiteBase} on a {@link MiniClusterTestEnvironment}
 * with EXACTLY_ONCE semantics and a real gateway.
 *
 * <p>A test "split" is one partition of a table partitioned by {@code p} with one bucket per
 * partition, so each data writer the framework creates is a new (partition, bucket): a new Setats
 * split. Records are unique strings written as rows {@code (id = record, p = partition, v =
 * record)}; the source emits {@code v}.
 *
 * <p>The source is unbounded only (a changelog never ends). Tests that need a bounded source
 * (single split, multiple splits, idle reader: they wait for the job to FINISH) are skipped by the
 * framework's own mechanism: {@code createSource} throws UnsupportedOperationException for {@link
 * Boundedness#BOUNDED}, which {@code SourceTestSuiteBase#tryCreateSource} turns into an aborted
 * (skipped) test. The unbounded ones run: savepoint restart, scale up, scale down, metrics, and
 * TaskManager failover.
 */
class SetatsSourceTestSuiteITCase extends SourceTestSuiteBase<String> {

    private static final String DB = "suitedb";

    @TestEnv MiniClusterTestEnvironment flink = new MiniClusterTestEnvironment();

    @TestExternalSystem SetatsGatewayProcess gateway = new SetatsGatewayProcess();

    @TestContext
    ExternalContextFactory<SetatsExternalContext> contexts = testName -> new SetatsExternalContext(gateway, testName);

    @TestSemantics CheckpointingMode[] semantics = new CheckpointingMode[] {CheckpointingMode.EXACTLY_ONCE};

    /** One Setats table per test; each split writer adds a partition. */
    static final class SetatsExternalContext implements DataStreamSourceExternalContext<String> {

        private static final AtomicInteger TABLES = new AtomicInteger();
        private static final RowType TYPE =
                (RowType)
                        DataTypes.ROW(
                                        DataTypes.FIELD("id", DataTypes.STRING().notNull()),
                                        DataTypes.FIELD("p", DataTypes.STRING().notNull()),
                                        DataTypes.FIELD("v", DataTypes.STRING()))
                                .getLogicalType();
        private static final RowType READ =
                (RowType) DataTypes.ROW(DataTypes.FIELD("v", DataTypes.STRING())).getLogicalType();

        private final SetatsGatewayProcess gateway;
        private final String table;
        private final AtomicInteger partitions = new AtomicInteger();

        SetatsExternalContext(SetatsGatewayProcess gateway, String testName) {
            this.gateway = gateway;
            this.table = "t" + TABLES.incrementAndGet() + "_" + testName.replaceAll("[^A-Za-z0-9]", "_").toLowerCase();
            try (GatewayClient c = gateway.client()) {
                create(c, spec(DB, table, TYPE, Arrays.asList("id", "p"), Collections.singletonList("p"), 1, Collections.emptyMap()));
            }
        }

        static String value(ChangelogRecord r) {
            return r.row().getString(0).toString();
        }

        @Override
        public Source<String, ?, ?> createSource(TestingSourceSettings settings) {
            if (settings.getBoundedness() == Boundedness.BOUNDED) {
                throw new UnsupportedOperationException("setats-cdc reads an unbounded changelog only");
            }
            return SetatsCdcSource.builder()
                    .setManagerUrl(gateway.managerUrl())
                    .setWarehouse(gateway.warehouse().toString())
                    .setTable(DB, table)
                    .setReadType(READ)
                    .setStartupMode(StartupMode.EARLIEST)
                    .setDiscoveryInterval(Duration.ofSeconds(1))
                    .setDeserializer(SetatsDeserializationSchema.of(SetatsExternalContext::value, Types.STRING))
                    .build();
        }

        @Override
        public ExternalSystemSplitDataWriter<String> createSourceSplitDataWriter(TestingSourceSettings settings) {
            String partition = "split-" + partitions.getAndIncrement();
            return new ExternalSystemSplitDataWriter<String>() {
                @Override
                public void writeRecords(List<String> records) {
                    List<RowData> rows = new ArrayList<>();
                    for (String r : records) {
                        rows.add(insert(r, partition, r));
                    }
                    try (GatewayClient c = gateway.client()) {
                        write(c, DB, table, TYPE, rows);
                    } catch (InterruptedException e) {
                        Thread.currentThread().interrupt();
                        throw new IllegalStateException(e);
                    }
                }

                @Override
                public void close() {}
            };
        }

        @Override
        public List<String> generateTestData(TestingSourceSettings settings, int splitIndex, long seed) {
            Random random = new Random(seed);
            int n = 50 + random.nextInt(100);
            List<String> out = new ArrayList<>(n);
            for (int i = 0; i < n; i++) {
                out.add("split" + splitIndex + "-" + Long.toHexString(seed) + "-" + i + "-" + random.nextInt(1_000_000));
            }
            return out;
        }

        @Override
        public TypeInformation<String> getProducedType() {
            return Types.STRING;
        }

        @Override
        public List<URL> getConnectorJarPaths() {
            return Collections.emptyList();
        }

        @Override
        public void close() {}

        @Override
        public String toString() {
            return "Setats table " + DB + "." + table;
        }
    }
}
