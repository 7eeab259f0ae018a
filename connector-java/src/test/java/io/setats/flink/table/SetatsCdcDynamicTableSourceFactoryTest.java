package io.setats.flink.table;

import io.setats.flink.SetatsConnectorOptions.StartupMode;
import io.setats.flink.source.SetatsCdcSource;
import io.setats.flink.source.SetatsSourceConfig;

import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.connector.source.ScanTableSource;
import org.apache.flink.table.connector.source.SourceProvider;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.runtime.connector.source.ScanRuntimeProviderContext;
import org.apache.flink.table.runtime.typeutils.InternalTypeInfo;
import org.apache.flink.table.types.DataType;
import org.apache.flink.table.types.logical.RowType;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.Map;

import static org.apache.flink.table.factories.utils.FactoryMocks.createTableSource;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Every option rule of the setats-cdc factory (SPEC section 2, read-case R2). */
class SetatsCdcDynamicTableSourceFactoryTest {

    /** The seed's table: id, dt, name, address; primary key (id, dt). */
    private static final ResolvedSchema SCHEMA =
            new ResolvedSchema(
                    Arrays.asList(
                            Column.physical("id", DataTypes.STRING().notNull()),
                            Column.physical("dt", DataTypes.STRING().notNull()),
                            Column.physical("name", DataTypes.STRING()),
                            Column.physical("address", DataTypes.STRING())),
                    Collections.emptyList(),
                    UniqueConstraint.primaryKey("pk", Arrays.asList("id", "dt")));

    /** The seed's WITH clause (setats-cdc-read.txt), placeholders filled. */
    private static Map<String, String> seedOptions() {
        Map<String, String> o = new HashMap<>();
        o.put("connector", "setats-cdc");
        o.put("warehouse", "/tmp/warehouse");
        o.put("catalog-type", "hive");
        o.put("catalog-name", "setats");
        o.put("catalog-database", "testdb");
        o.put("catalog-table", "demo_setats_table1");
        o.put("uri", "thrift://metastore-1:7004,thrift://metastore-2:7004");
        o.put("manager-url", "grpc://127.0.0.1:8815");
        o.put("bucket.discovery-interval", "30s");
        o.put("startup.mode", "earliest");
        return o;
    }

    private static Map<String, String> minimalOptions() {
        Map<String, String> o = new HashMap<>();
        o.put("connector", "setats-cdc");
        o.put("warehouse", "/tmp/warehouse");
        o.put("catalog-type", "hadoop");
        o.put("catalog-name", "setats");
        o.put("manager-url", "127.0.0.1:8815");
        return o;
    }

    private static SetatsCdcDynamicTableSource create(Map<String, String> options) {
        DynamicTableSource s = createTableSource(SCHEMA, options);
        assertThat(s).isInstanceOf(SetatsCdcDynamicTableSource.class);
        return (SetatsCdcDynamicTableSource) s;
    }

    private static void assertInvalid(Map<String, String> options, String... mustMention) {
        assertThatThrownBy(() -> createTableSource(SCHEMA, options))
                .satisfies(
                        e -> {
                            Throwable v = e;
                            while (v != null && !(v instanceof ValidationException && mentionsAll(v, mustMention))) {
                                v = v.getCause();
                            }
                            assertThat(v)
                                    .as("a ValidationException naming %s in %s", Arrays.toString(mustMention), e)
                                    .isNotNull();
                        });
    }

    private static boolean mentionsAll(Throwable t, String[] words) {
        for (String w : words) {
            if (t.getMessage() == null || !t.getMessage().contains(w)) {
                return false;
            }
        }
        return true;
    }

    @Test
    void connectionOptions() {
        Map<String, String> o = seedOptions();
        o.put("manager-url", "grpc+tls://gw:443");
        o.put("username", "reader");
        o.put("password", "secret");
        o.put("tls.ca-cert", "/etc/setats/ca.pem");
        SetatsSourceConfig c = create(o).config();
        assertThat(c.connection().username()).isEqualTo("reader");
        assertThat(c.connection().basicAuthorization()).startsWith("Basic ");
        assertThat(c.connection().tlsCaCert()).isEqualTo("/etc/setats/ca.pem");
        assertThat(c.toString()).doesNotContain("secret");
        Map<String, String> bad = seedOptions();
        bad.put("password", "x");
        assertInvalid(bad, "'username'");
    }

    @Test
    void seedOptionsAreAccepted() {
        SetatsCdcDynamicTableSource source = create(seedOptions());
        SetatsSourceConfig c = source.config();
        assertThat(c.managerUrl()).isEqualTo("grpc://127.0.0.1:8815");
        assertThat(c.database()).isEqualTo("testdb");
        assertThat(c.table()).isEqualTo("demo_setats_table1");
        assertThat(c.startupMode()).isEqualTo(StartupMode.EARLIEST);
        assertThat(c.startupTimestampMs()).isNull();
        assertThat(c.discoveryInterval()).isEqualTo(Duration.ofSeconds(30));
        assertThat(c.catalogContext().getCatalogType()).isEqualTo("hive");
        assertThat(c.catalogContext().getUri()).startsWith("thrift://metastore-1:7004");
        assertThat(c.catalogContext().getWarehouse()).isEqualTo("/tmp/warehouse");
        assertThat(source.getChangelogMode()).isEqualTo(ChangelogMode.all());
        assertThat(source.physicalType().getFieldNames()).containsExactly("id", "dt", "name", "address");
    }

    @Test
    void defaults() {
        SetatsSourceConfig c = create(minimalOptions()).config();
        assertThat(c.startupMode()).isEqualTo(StartupMode.LATEST);
        assertThat(c.discoveryInterval()).isEqualTo(Duration.ofSeconds(300));
        assertThat(c.database()).isEqualTo("default");
        assertThat(c.table()).isEqualTo("t1"); // the Flink table's name (FactoryMocks.IDENTIFIER)
        assertThat(c.expectedBucketCount()).isEqualTo(-1);
        assertThat(c.expectedBucketKey()).isNull();
    }

    @ParameterizedTest
    @ValueSource(strings = {"manager-url", "warehouse", "catalog-type", "catalog-name"})
    void requiredKeys(String key) {
        Map<String, String> o = minimalOptions();
        o.remove(key);
        assertInvalid(o, key);
    }

    @ParameterizedTest
    @ValueSource(strings = {"merge-engine", "location", "setats.sink.flush-interval", "scan.startup.mode"})
    void unknownKeysFail(String key) {
        Map<String, String> o = minimalOptions();
        o.put(key, "x");
        assertInvalid(o, key);
    }

    @Test
    void badManagerUrl() {
        Map<String, String> o = minimalOptions();
        o.put("manager-url", "http://gateway:8815");
        assertInvalid(o, "manager-url");
    }

    @Test
    void hiveNeedsUri() {
        Map<String, String> o = seedOptions();
        o.remove("uri");
        assertInvalid(o, "uri", "hive");
    }

    @Test
    void unknownCatalogType() {
        Map<String, String> o = minimalOptions();
        o.put("catalog-type", "jdbc");
        assertInvalid(o, "catalog-type");
    }

    @ParameterizedTest
    @ValueSource(strings = {"latest", "LATEST", "earliest", "Earliest"})
    void startupModes(String value) {
        Map<String, String> o = minimalOptions();
        o.put("startup.mode", value);
        assertThat(create(o).config().startupMode().toString()).isEqualToIgnoringCase(value);
    }

    @ParameterizedTest
    @ValueSource(strings = {"from-timestamp", "timestamp", "FROM-TIMESTAMP", "Timestamp"})
    void fromTimestampWithItsTimestamp(String value) {
        Map<String, String> o = minimalOptions();
        o.put("startup.mode", value);
        o.put("scan.timestamp-millis", "1767196800000");
        SetatsSourceConfig c = create(o).config();
        assertThat(c.startupMode()).isEqualTo(StartupMode.FROM_TIMESTAMP);
        assertThat(c.startupTimestampMs()).isEqualTo(1_767_196_800_000L);
    }

    @Test
    void unknownStartupModeNamesKeyAndAllowedValues() {
        Map<String, String> o = minimalOptions();
        o.put("startup.mode", "group-offsets");
        assertInvalid(o, "startup.mode", "latest", "earliest", "from-timestamp");
    }

    /** Read-case R2: a timestamp without the mode that uses it is an error, never another mode. */
    @ParameterizedTest
    @ValueSource(strings = {"latest", "earliest"})
    void timestampWithoutFromTimestampFails(String mode) {
        Map<String, String> o = minimalOptions();
        o.put("startup.mode", mode);
        o.put("scan.timestamp-millis", "1767196800000");
        assertInvalid(o, "scan.timestamp-millis");
    }

    @Test
    void timestampWithTheDefaultModeFails() {
        Map<String, String> o = minimalOptions();
        o.put("scan.timestamp-millis", "1767196800000");
        assertInvalid(o, "scan.timestamp-millis", "latest");
    }

    @Test
    void fromTimestampNeedsTheTimestamp() {
        Map<String, String> o = minimalOptions();
        o.put("startup.mode", "from-timestamp");
        assertInvalid(o, "scan.timestamp-millis", "required");
        o.put("scan.timestamp-millis", "-1");
        assertInvalid(o, "scan.timestamp-millis");
        o.put("scan.timestamp-millis", "yesterday");
        assertInvalid(o, "scan.timestamp-millis");
    }

    @ParameterizedTest
    @ValueSource(strings = {"30s", "300s", "1 min", "500ms"})
    void discoveryIntervals(String value) {
        Map<String, String> o = minimalOptions();
        o.put("bucket.discovery-interval", value);
        Duration d = create(o).config().discoveryInterval();
        assertThat(d).isPositive();
    }

    @ParameterizedTest
    @ValueSource(strings = {"0s", "soon", "-5s"})
    void badDiscoveryIntervals(String value) {
        Map<String, String> o = minimalOptions();
        o.put("bucket.discovery-interval", value);
        assertInvalid(o, "bucket.discovery-interval");
    }

    @Test
    void bucketAndBucketKeyAreCarriedForTheStartCheck() {
        Map<String, String> o = minimalOptions();
        o.put("bucket", "4");
        o.put("bucket-key", "id");
        SetatsSourceConfig c = create(o).config();
        assertThat(c.expectedBucketCount()).isEqualTo(4);
        assertThat(c.expectedBucketKey()).isEqualTo("id");
    }

    @ParameterizedTest
    @ValueSource(strings = {"0", "-2", "four"})
    void badBucket(String value) {
        Map<String, String> o = minimalOptions();
        o.put("bucket", value);
        assertInvalid(o, "bucket");
    }

    @Test
    void emptyBucketKey() {
        Map<String, String> o = minimalOptions();
        o.put("bucket-key", " , ");
        assertInvalid(o, "bucket-key");
    }

    @Test
    void unsupportedColumnType() {
        ResolvedSchema schema =
                ResolvedSchema.of(
                        Column.physical("id", DataTypes.INT().notNull()),
                        Column.physical("tags", DataTypes.ARRAY(DataTypes.STRING())));
        assertThatThrownBy(() -> createTableSource(schema, minimalOptions()))
                .hasStackTraceContaining("tags");
    }

    @Test
    void metadataColumnsAndRuntimeProvider() {
        SetatsCdcDynamicTableSource source = create(minimalOptions());
        assertThat(source.listReadableMetadata())
                .containsOnlyKeys("timestamp", "offset", "bucket", "partition");
        assertThat(source.listReadableMetadata().get("timestamp").getLogicalType().asSummaryString())
                .startsWith("TIMESTAMP_LTZ(3)");

        DataType produced =
                DataTypes.ROW(
                        DataTypes.FIELD("id", DataTypes.STRING().notNull()),
                        DataTypes.FIELD("dt", DataTypes.STRING().notNull()),
                        DataTypes.FIELD("name", DataTypes.STRING()),
                        DataTypes.FIELD("address", DataTypes.STRING()),
                        DataTypes.FIELD("offset", DataTypes.BIGINT().notNull()),
                        DataTypes.FIELD("timestamp", DataTypes.TIMESTAMP_LTZ(3).notNull()));
        source.applyReadableMetadata(Arrays.asList("offset", "timestamp"), produced);
        DynamicTableSource copy = source.copy();
        assertThat(copy).isEqualTo(source);

        ScanTableSource.ScanRuntimeProvider provider =
                source.getScanRuntimeProvider(ScanRuntimeProviderContext.INSTANCE);
        assertThat(provider).isInstanceOf(SourceProvider.class);
        assertThat(provider.isBounded()).isFalse();
        @SuppressWarnings("unchecked")
        SetatsCdcSource<RowData> cdc = (SetatsCdcSource<RowData>) ((SourceProvider) provider).createSource();
        assertThat(cdc.getBoundedness()).isEqualTo(Boundedness.CONTINUOUS_UNBOUNDED);
        assertThat(cdc.readType().getFieldNames()).containsExactly("id", "dt", "name", "address");
        assertThat(cdc.getProducedType())
                .isEqualTo(InternalTypeInfo.of((RowType) produced.getLogicalType()));
    }
}
