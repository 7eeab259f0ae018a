package io.setats.flink.table;

import io.setats.flink.SetatsConnectorOptions.MergeEngine;
import io.setats.flink.sink.SetatsSink;
import io.setats.flink.sink.SetatsTableLayout;
import io.setats.proto.v1.Column;
import io.setats.proto.v1.TableSpec;

import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.sink.DynamicTableSink;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.factories.utils.FactoryMocks;
import org.apache.flink.types.RowKind;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.ValueSource;

import java.time.Duration;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Consumer;

import static org.apache.flink.core.testutils.FlinkAssertions.anyCauseMatches;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Option rules of the {@code setats} sink factory (SPEC sections 2-3), via FactoryMocks. */
class SetatsDynamicTableSinkFactoryTest {

    /** The seed's setats_sink schema: id, dt, name, address; PK (id, dt); PARTITIONED BY (dt). */
    private static final ResolvedSchema SEED_SCHEMA =
            new ResolvedSchema(
                    Arrays.asList(
                            org.apache.flink.table.catalog.Column.physical(
                                    "id", DataTypes.STRING().notNull()),
                            org.apache.flink.table.catalog.Column.physical(
                                    "dt", DataTypes.STRING().notNull()),
                            org.apache.flink.table.catalog.Column.physical("name", DataTypes.STRING()),
                            org.apache.flink.table.catalog.Column.physical(
                                    "address", DataTypes.STRING())),
                    Collections.emptyList(),
                    UniqueConstraint.primaryKey("PK_id_dt", Arrays.asList("id", "dt")));

    private static final List<String> DT = Collections.singletonList("dt");

    /** The seed's setats_sink options (catalog-type hive, with uri). */
    private static Map<String, String> seedOptions() {
        Map<String, String> o = new HashMap<>();
        o.put("connector", "setats");
        o.put("manager-url", "grpc://127.0.0.1:8815");
        o.put("catalog-type", "hive");
        o.put("catalog-name", "setats");
        o.put("catalog-database", "testdb");
        o.put("catalog-table", "setats_sink");
        o.put("warehouse", "cosn://bucket/warehouse");
        o.put("location", "cosn://bucket/warehouse/testdb/setats_sink");
        o.put("uri", "thrift://h1:7004,thrift://h2:7004");
        o.put("bucket", "10");
        o.put("bucket-key", "id");
        o.put("merge-engine", "PARTIAL_UPDATE");
        o.put("setats.sink.flush-interval", "5s");
        return o;
    }

    private static Map<String, String> with(Consumer<Map<String, String>> change) {
        Map<String, String> o = seedOptions();
        change.accept(o);
        return o;
    }

    @SuppressWarnings("unchecked")
    private static SetatsSink<RowData> sink(ResolvedSchema schema, List<String> partitionKeys, Map<String, String> options) {
        DynamicTableSink s = FactoryMocks.createTableSink(schema, partitionKeys, options);
        assertThat(s).isInstanceOf(SetatsDynamicTableSink.class);
        return ((SetatsDynamicTableSink) s).sink();
    }

    private static void assertInvalid(Map<String, String> options, String message) {
        assertInvalid(SEED_SCHEMA, DT, options, message);
    }

    private static void assertInvalid(
            ResolvedSchema schema, List<String> partitionKeys, Map<String, String> options, String message) {
        assertThatThrownBy(() -> FactoryMocks.createTableSink(schema, partitionKeys, options))
                .satisfies(anyCauseMatches(ValidationException.class, message));
    }

    @Test
    void seedOptionsGiveTheSeedTable() {
        SetatsSink<RowData> s = sink(SEED_SCHEMA, DT, seedOptions());
        assertThat(s.database()).isEqualTo("testdb");
        assertThat(s.table()).isEqualTo("setats_sink");
        assertThat(s.catalogContext().getCatalogType()).isEqualTo("hive");
        assertThat(s.catalogContext().getUri()).isEqualTo("thrift://h1:7004,thrift://h2:7004");
        assertThat(s.catalogContext().getWarehouse()).isEqualTo("cosn://bucket/warehouse");
        assertThat(s.mergeEngine()).isEqualTo(MergeEngine.PARTIAL_UPDATE);
        assertThat(s.flushInterval()).isEqualTo(Duration.ofSeconds(5));
        assertThat(s.bufferRows()).isEqualTo(10_000);
        assertThat(s.rowType().getFieldNames()).containsExactly("id", "dt", "name", "address");

        TableSpec spec = s.createIfAbsentSpec(new SetatsTableLayout(DT, 10, Collections.singletonList("id")));
        assertThat(spec.getColumnsList())
                .extracting(Column::getName, Column::getType, Column::getNotNull)
                .containsExactly(
                        org.assertj.core.groups.Tuple.tuple("id", "STRING", true),
                        org.assertj.core.groups.Tuple.tuple("dt", "STRING", true),
                        org.assertj.core.groups.Tuple.tuple("name", "STRING", false),
                        org.assertj.core.groups.Tuple.tuple("address", "STRING", false));
        assertThat(spec.getPrimaryKeyList()).containsExactly("id", "dt");
        assertThat(spec.getPartitionKeysList()).containsExactly("dt");
        assertThat(spec.getBucketCount()).isEqualTo(10);
        assertThat(spec.getBucketKeyList()).containsExactly("id");
        assertThat(spec.getMergeEngine()).isEqualTo("PARTIAL_UPDATE");
        assertThat(spec.getLocation()).isEqualTo("cosn://bucket/warehouse/testdb/setats_sink");
        assertThat(spec.getOptionsMap()).isEmpty();
    }

    @Test
    void upsertChangelogMode() {
        DynamicTableSink s = FactoryMocks.createTableSink(SEED_SCHEMA, DT, seedOptions());
        ChangelogMode mode = s.getChangelogMode(ChangelogMode.all());
        assertThat(mode.getContainedKinds())
                .containsExactlyInAnyOrder(RowKind.INSERT, RowKind.UPDATE_AFTER, RowKind.DELETE);
    }

    @Test
    void defaultsFollowTheSeeds() {
        Map<String, String> o = new HashMap<>();
        o.put("connector", "setats");
        o.put("manager-url", "127.0.0.1:8815");
        o.put("catalog-type", "hadoop");
        o.put("catalog-name", "setats");
        o.put("warehouse", "/data/wh");
        SetatsSink<RowData> s = sink(SEED_SCHEMA, DT, o);
        assertThat(s.database()).isEqualTo("default");
        assertThat(s.table()).isEqualTo(FactoryMocks.IDENTIFIER.getObjectName());
        assertThat(s.mergeEngine()).isEqualTo(MergeEngine.DEDUPLICATE);
        assertThat(s.flushInterval()).isEqualTo(Duration.ofSeconds(5));
        TableSpec spec = s.createIfAbsentSpec(new SetatsTableLayout(DT, 4, Collections.singletonList("id")));
        assertThat(spec.getLocation()).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"manager-url", "warehouse", "catalog-type", "catalog-name"})
    void requiredOptions(String key) {
        assertInvalid(with(o -> o.remove(key)), "Missing required options are:\n\n" + key);
    }

    @Test
    void unknownOptionIsRejected() {
        assertInvalid(with(o -> o.put("bukket", "3")), "bukket");
    }

    @Test
    void catalogTypeIsAnEnum() {
        assertThat(sink(SEED_SCHEMA, DT, with(o -> o.put("catalog-type", "HADOOP"))).catalogContext().getCatalogType())
                .isEqualTo("hadoop");
        assertInvalid(
                with(o -> o.put("catalog-type", "jdbc")),
                "Invalid value for option 'catalog-type'");
    }

    @Test
    void hiveNeedsUri() {
        assertInvalid(with(o -> o.remove("uri")), "Option 'uri' (Hive Metastore thrift URIs) is required when 'catalog-type' = 'hive'.");
        assertInvalid(with(o -> o.put("uri", " ")), "'uri'");
        Map<String, String> hadoop = with(o -> {
            o.remove("uri");
            o.put("catalog-type", "hadoop");
        });
        assertThat(sink(SEED_SCHEMA, DT, hadoop).catalogContext().getUri()).isEmpty();
    }

    @ParameterizedTest
    @ValueSource(strings = {"PARTIAL_UPDATE", "partial_update", "partial-update", "Partial-Update"})
    void mergeEngineAcceptsPartialUpdateSpellings(String value) {
        assertThat(sink(SEED_SCHEMA, DT, with(o -> o.put("merge-engine", value))).mergeEngine())
                .isEqualTo(MergeEngine.PARTIAL_UPDATE);
    }

    @Test
    void mergeEngineRejectsOthersNamingAllowedValues() {
        assertThat(sink(SEED_SCHEMA, DT, with(o -> o.put("merge-engine", "deduplicate"))).mergeEngine())
                .isEqualTo(MergeEngine.DEDUPLICATE);
        assertInvalid(
                with(o -> o.put("merge-engine", "aggregation")),
                "Invalid value for option 'merge-engine': 'aggregation'. Allowed: DEDUPLICATE, PARTIAL_UPDATE");
    }

    @Test
    void deliveryGuaranteeNamesKeyAndAllowedValues() {
        assertThat(sink(SEED_SCHEMA, DT, with(o -> {})).deliveryGuarantee())
                .isEqualTo(org.apache.flink.connector.base.DeliveryGuarantee.AT_LEAST_ONCE);
        assertThat(sink(SEED_SCHEMA, DT, with(o -> o.put("sink.delivery-guarantee", "exactly-once"))).deliveryGuarantee())
                .isEqualTo(org.apache.flink.connector.base.DeliveryGuarantee.EXACTLY_ONCE);
        assertThat(sink(SEED_SCHEMA, DT, with(o -> o.put("sink.delivery-guarantee", "AT_LEAST_ONCE"))).deliveryGuarantee())
                .isEqualTo(org.apache.flink.connector.base.DeliveryGuarantee.AT_LEAST_ONCE);
        assertInvalid(
                with(o -> o.put("sink.delivery-guarantee", "none")),
                "Invalid value for option 'sink.delivery-guarantee': 'none'. Allowed: 'at-least-once', 'exactly-once'.");
        assertThat(sink(SEED_SCHEMA, DT, with(o -> {})).transactionTimeout()).isEqualTo(Duration.ofHours(1));
        assertThat(sink(SEED_SCHEMA, DT, with(o -> o.put("sink.transaction-timeout", "10 min"))).transactionTimeout())
                .isEqualTo(Duration.ofMinutes(10));
        assertInvalid(
                with(o -> o.put("sink.transaction-timeout", "0s")),
                "Option 'sink.transaction-timeout' must be positive");
    }

    @Test
    void flushIntervalIsADuration() {
        assertThat(sink(SEED_SCHEMA, DT, with(o -> o.put("setats.sink.flush-interval", "250 ms"))).flushInterval())
                .isEqualTo(Duration.ofMillis(250));
        assertThat(sink(SEED_SCHEMA, DT, with(o -> o.put("setats.sink.flush-interval", "1min"))).flushInterval())
                .isEqualTo(Duration.ofMinutes(1));
        assertInvalid(with(o -> o.put("setats.sink.flush-interval", "soon")), "setats.sink.flush-interval");
        assertInvalid(
                with(o -> o.put("setats.sink.flush-interval", "0s")),
                "Option 'setats.sink.flush-interval' must be positive");
    }

    @Test
    void bufferOptions() {
        SetatsSink<RowData> s =
                sink(SEED_SCHEMA, DT, with(o -> {
                    o.put("setats.sink.buffer-rows", "500");
                    o.put("setats.sink.buffer-bytes", "1mb");
                    o.put("setats.sink.max-in-flight-batches", "2");
                }));
        assertThat(s.bufferRows()).isEqualTo(500);
        assertThat(s.bufferBytes()).isEqualTo(1024 * 1024);
        assertThat(s.maxInFlightBatches()).isEqualTo(2);
        assertInvalid(with(o -> o.put("setats.sink.buffer-rows", "0")), "'setats.sink.buffer-rows' must be positive");
        assertInvalid(with(o -> o.put("setats.sink.buffer-rows", "many")), "setats.sink.buffer-rows");
        assertInvalid(with(o -> o.put("setats.sink.buffer-bytes", "0b")), "'setats.sink.buffer-bytes' must be positive");
        assertInvalid(
                with(o -> o.put("setats.sink.max-in-flight-batches", "0")),
                "'setats.sink.max-in-flight-batches' must be positive");
    }

    @ParameterizedTest
    @ValueSource(strings = {"0", "-2"})
    void bucketIsPositiveOrMinusOne(String value) {
        assertInvalid(with(o -> o.put("bucket", value)), "Invalid value for option 'bucket': " + value);
    }

    @Test
    void bucketMustBeAnInteger() {
        assertInvalid(with(o -> o.put("bucket", "ten")), "bucket");
    }

    @Test
    void bucketKeyIsASubsetOfPrimaryKeyMinusPartitionKeys() {
        assertInvalid(
                with(o -> o.put("bucket-key", "name")),
                "column 'name' is not in the primary key minus the partition keys [id]");
        assertInvalid(
                with(o -> o.put("bucket-key", "id,dt")),
                "column 'dt' is not in the primary key minus the partition keys [id]");
        assertInvalid(with(o -> o.put("bucket-key", "id,id")), "names column 'id' twice");
        assertInvalid(with(o -> o.put("bucket-key", " , ")), "'bucket-key' must not be empty");
        // Unpartitioned: the whole primary key is allowed, in any order.
        SetatsSink<RowData> s =
                sink(SEED_SCHEMA, Collections.emptyList(), with(o -> o.put("bucket-key", "dt, id")));
        assertThat(s.createIfAbsentSpec(new SetatsTableLayout(Collections.emptyList(), 3, Arrays.asList("dt", "id"))).getBucketKeyList())
                .containsExactly("dt", "id");
    }

    @Test
    void primaryKeyIsRequired() {
        ResolvedSchema noPk =
                new ResolvedSchema(
                        SEED_SCHEMA.getColumns(), Collections.emptyList(), null);
        assertInvalid(noPk, DT, seedOptions(), "needs a PRIMARY KEY");
    }

    @Test
    void partitionKeysMustBeInPrimaryKey() {
        assertInvalid(
                SEED_SCHEMA,
                Collections.singletonList("name"),
                with(o -> o.remove("bucket-key")),
                "Partition key 'name' must be part of the primary key [id, dt]");
    }

    @Test
    void primaryKeyOnlyOfPartitionKeysHasNoBucketKey() {
        ResolvedSchema pkDt =
                new ResolvedSchema(
                        SEED_SCHEMA.getColumns(),
                        Collections.emptyList(),
                        UniqueConstraint.primaryKey("pk", Collections.singletonList("dt")));
        assertInvalid(pkDt, DT, with(o -> o.remove("bucket-key")), "there is no bucket key");
    }

    @Test
    void unsupportedColumnTypeNamesTheColumn() {
        ResolvedSchema withArray =
                new ResolvedSchema(
                        Arrays.asList(
                                org.apache.flink.table.catalog.Column.physical("id", DataTypes.STRING().notNull()),
                                org.apache.flink.table.catalog.Column.physical("dt", DataTypes.STRING().notNull()),
                                org.apache.flink.table.catalog.Column.physical("tags", DataTypes.ARRAY(DataTypes.STRING()))),
                        Collections.emptyList(),
                        UniqueConstraint.primaryKey("pk", Arrays.asList("id", "dt")));
        assertInvalid(withArray, DT, seedOptions(), "Column 'tags' has type ARRAY<STRING>");
    }

    @Test
    void reservedColumnNames() {
        ResolvedSchema reserved =
                new ResolvedSchema(
                        Arrays.asList(
                                org.apache.flink.table.catalog.Column.physical("id", DataTypes.STRING().notNull()),
                                org.apache.flink.table.catalog.Column.physical("dt", DataTypes.STRING().notNull()),
                                org.apache.flink.table.catalog.Column.physical("_offset", DataTypes.BIGINT())),
                        Collections.emptyList(),
                        UniqueConstraint.primaryKey("pk", Arrays.asList("id", "dt")));
        assertInvalid(reserved, DT, seedOptions(), "Column '_offset': names starting with '_' are reserved");
    }

    @Test
    void managerUrlSyntax() {
        assertInvalid(
                with(o -> o.put("manager-url", "http://gw:8815")),
                "Invalid value for option 'manager-url': invalid manager-url 'http://gw:8815' (unknown scheme 'http')");
        assertInvalid(with(o -> o.put("manager-url", "gw:port")), "bad port 'port'");
        assertThat(sink(SEED_SCHEMA, DT, with(o -> o.put("manager-url", "grpc+tls://gw:443"))).managerUrl())
                .isEqualTo("grpc+tls://gw:443");
    }

    @Test
    void connectionOptions() {
        SetatsSink<RowData> s =
                sink(SEED_SCHEMA, DT, with(o -> {
                    o.put("manager-url", "grpc+tls://gw:443");
                    o.put("username", "etl");
                    o.put("password", "secret");
                    o.put("tls.ca-cert", "/etc/setats/ca.pem");
                }));
        assertThat(s.connection().username()).isEqualTo("etl");
        assertThat(s.connection().password()).isEqualTo("secret");
        assertThat(s.connection().tlsCaCert()).isEqualTo("/etc/setats/ca.pem");
        assertThat(s.toString()).doesNotContain("secret");
        assertInvalid(with(o -> o.put("username", "etl")), "'password'");
        assertInvalid(with(o -> o.put("tls.ca-cert", "/ca.pem")), "'tls.ca-cert'");
    }

    @Test
    void tableOptionsGoIntoTheCreatedTable() {
        SetatsSink<RowData> s =
                sink(SEED_SCHEMA, DT, with(o -> {
                    o.put("ignore-delete", "true");
                    o.put("changelog.retention.ms", "3600000");
                }));
        assertThat(s.createIfAbsentSpec(new SetatsTableLayout(DT, 10, Collections.singletonList("id"))).getOptionsMap())
                .containsEntry("ignore-delete", "true")
                .containsEntry("changelog.retention.ms", "3600000")
                .doesNotContainKey("partial-update.remove-record-on-delete");
        assertInvalid(with(o -> o.put("ignore-delete", "maybe")), "ignore-delete");
    }

    /** The binlog table options of SPEC section 8 reach the auto-created table; slot.ttl in ms. */
    @Test
    void binlogTableOptionsGoIntoTheCreatedTable() {
        SetatsSink<RowData> s =
                sink(SEED_SCHEMA, DT, with(o -> {
                    o.put("changelog.enabled", "false");
                    o.put("changelog.clean-on-consume", "true");
                    o.put("slot.ttl", "30 min");
                }));
        assertThat(s.createIfAbsentSpec(new SetatsTableLayout(DT, 10, Collections.singletonList("id"))).getOptionsMap())
                .containsEntry("changelog.enabled", "false")
                .containsEntry("changelog.clean-on-consume", "true")
                .containsEntry("slot.ttl", "1800000 ms");
        SetatsSink<RowData> none = sink(SEED_SCHEMA, DT, with(o -> {}));
        assertThat(none.createIfAbsentSpec(new SetatsTableLayout(DT, 10, Collections.singletonList("id"))).getOptionsMap())
                .doesNotContainKeys("changelog.enabled", "changelog.clean-on-consume", "slot.ttl");
        assertInvalid(with(o -> o.put("slot.ttl", "soon")), "slot.ttl");
    }

    @Test
    void emptyDatabaseOrTableIsRejected() {
        assertInvalid(with(o -> o.put("catalog-database", "")), "'catalog-database' must not be empty");
        assertInvalid(with(o -> o.put("catalog-table", " ")), "'catalog-table' must not be empty");
    }
}
