package io.setats.flink.table;

import org.apache.flink.api.common.RuntimeExecutionMode;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.configuration.ExecutionOptions;
import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.catalog.CatalogTable;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedCatalogTable;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.connector.ChangelogMode;
import org.apache.flink.table.connector.source.DynamicTableSource;
import org.apache.flink.table.factories.FactoryUtil;
import org.apache.flink.table.factories.utils.FactoryMocks;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.types.RowKind;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

import static org.apache.flink.core.testutils.FlinkAssertions.anyCauseMatches;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The {@code setats} factory used as a source (SPEC section 13) and the per-use option rules of the
 * shared factory (SPEC section 2): streaming mode gives the changelog (as {@code setats-cdc}),
 * batch mode the snapshot scan with its push-downs; a sink refuses source-only options and a
 * source refuses sink-only ones, naming them.
 */
class SetatsDynamicTableSourceFactoryTest {

    private static final ResolvedSchema SCHEMA =
            new ResolvedSchema(
                    Arrays.asList(
                            Column.physical("id", DataTypes.INT().notNull()),
                            Column.physical("dt", DataTypes.STRING().notNull()),
                            Column.physical("v", DataTypes.BIGINT())),
                    Collections.emptyList(),
                    UniqueConstraint.primaryKey("pk", Arrays.asList("id", "dt")));

    private static final List<String> DT = Collections.singletonList("dt");

    private static Map<String, String> common() {
        Map<String, String> o = new HashMap<>();
        o.put("connector", "setats");
        o.put("manager-url", "grpc://127.0.0.1:8815");
        o.put("warehouse", "/data/wh");
        o.put("catalog-type", "hadoop");
        o.put("catalog-name", "setats");
        o.put("catalog-database", "db");
        o.put("catalog-table", "t");
        return o;
    }

    private static Map<String, String> with(String... kv) {
        Map<String, String> o = common();
        for (int i = 0; i < kv.length; i += 2) {
            o.put(kv[i], kv[i + 1]);
        }
        return o;
    }

    private static DynamicTableSource source(RuntimeExecutionMode mode, Map<String, String> options) {
        Configuration conf = new Configuration();
        conf.set(ExecutionOptions.RUNTIME_MODE, mode);
        ResolvedCatalogTable table =
                new ResolvedCatalogTable(
                        CatalogTable.newBuilder()
                                .schema(org.apache.flink.table.api.Schema.newBuilder().fromResolvedSchema(SCHEMA).build())
                                .partitionKeys(DT)
                                .options(options)
                                .build(),
                        SCHEMA);
        return FactoryUtil.createDynamicTableSource(
                null, FactoryMocks.IDENTIFIER, table, Collections.emptyMap(), conf,
                SetatsDynamicTableSourceFactoryTest.class.getClassLoader(), false);
    }

    @Test
    void streamingModeIsTheChangelogAsSetatsCdc() {
        DynamicTableSource s = source(RuntimeExecutionMode.STREAMING, common());
        assertThat(s).isInstanceOf(SetatsDynamicTableSource.class);
        assertThat(((SetatsDynamicTableSource) s).getChangelogMode().getContainedKinds())
                .containsExactlyInAnyOrder(RowKind.INSERT, RowKind.UPDATE_BEFORE, RowKind.UPDATE_AFTER, RowKind.DELETE);
        Map<String, String> cdc = common();
        cdc.put("connector", "setats-cdc");
        SetatsCdcDynamicTableSource expected =
                (SetatsCdcDynamicTableSource) source(RuntimeExecutionMode.STREAMING, cdc);
        assertThat(s).isEqualTo(new SetatsDynamicTableSource(expected, Arrays.asList("id", "dt"), DT, null));
    }

    @Test
    void streamingModeTakesTheChangelogOptions() {
        DynamicTableSource s = source(RuntimeExecutionMode.STREAMING, with("startup.mode", "earliest"));
        Map<String, String> cdc = with("startup.mode", "earliest");
        cdc.put("connector", "setats-cdc");
        SetatsCdcDynamicTableSource expected =
                (SetatsCdcDynamicTableSource) source(RuntimeExecutionMode.STREAMING, cdc);
        assertThat(s).isEqualTo(new SetatsDynamicTableSource(expected, Arrays.asList("id", "dt"), DT, null));
    }

    @Test
    void batchModeIsTheSnapshotScanWithPushDowns() {
        DynamicTableSource s = source(RuntimeExecutionMode.BATCH, common());
        assertThat(s).isInstanceOf(SetatsBatchTableSource.class);
        SetatsBatchTableSource b = (SetatsBatchTableSource) s;
        assertThat(b.getChangelogMode()).isEqualTo(ChangelogMode.insertOnly());
        assertThat(b.producedType().getFieldNames()).containsExactly("id", "dt", "v");
        assertThat(b.partitions()).isNull();
        assertThat(b.limit()).isEqualTo(-1);

        b.applyProjection(new int[][] {{2}, {0}}, DataTypes.ROW(
                DataTypes.FIELD("v", DataTypes.BIGINT()), DataTypes.FIELD("id", DataTypes.INT().notNull())));
        Map<String, String> p1 = new LinkedHashMap<>();
        p1.put("dt", "2026-12-01");
        Map<String, String> p2 = new LinkedHashMap<>();
        p2.put("dt", "a/b");
        b.applyPartitions(Arrays.asList(p1, p2));
        b.applyLimit(7);
        SetatsBatchTableSource c = (SetatsBatchTableSource) b.copy();
        for (SetatsBatchTableSource x : Arrays.asList(b, c)) {
            assertThat(x.producedType().getFieldNames()).containsExactly("v", "id");
            assertThat(x.partitions()).containsExactly("dt=2026-12-01", "dt=a%2Fb");
            assertThat(x.limit()).isEqualTo(7);
        }
        assertThat(c).isEqualTo(b);
        assertThat(b.supportsNestedProjection()).isFalse();
    }

    @Test
    void aTableWithCommonOptionsOnlyIsBothSourceAndSink() {
        assertThat(source(RuntimeExecutionMode.STREAMING, with("bucket", "4", "bucket-key", "id")))
                .isInstanceOf(SetatsDynamicTableSource.class);
        assertThat(FactoryMocks.createTableSink(SCHEMA, DT, with("bucket", "4", "bucket-key", "id")))
                .isInstanceOf(SetatsDynamicTableSink.class);
    }

    /** A sink refuses the options only a source takes, naming them (SPEC section 2). */
    @ParameterizedTest
    @CsvSource({
        "startup.mode, earliest",
        "scan.timestamp-millis, 1",
        "bucket.discovery-interval, 10s",
        "slot.name, s1",
        "lookup.cache, PARTIAL",
        "lookup.partial-cache.max-rows, 10",
    })
    void sinkRefusesSourceOptions(String key, String value) {
        assertThatThrownBy(() -> FactoryMocks.createTableSink(SCHEMA, DT, with(key, value)))
                .satisfies(anyCauseMatches(ValidationException.class, "used as a sink: [" + key + "]"));
    }

    /** A source refuses the options only a sink takes, naming them, in both modes. */
    @ParameterizedTest
    @CsvSource({
        "merge-engine, PARTIAL_UPDATE, STREAMING",
        "setats.sink.flush-interval, 1s, STREAMING",
        "sink.parallelism, 2, BATCH",
        "location, /data/wh/db.db/t, BATCH",
        "ignore-delete, true, STREAMING",
    })
    void sourceRefusesSinkOptions(String key, String value, RuntimeExecutionMode mode) {
        assertThatThrownBy(() -> source(mode, with(key, value)))
                .satisfies(anyCauseMatches(ValidationException.class, "used as a source: [" + key + "]"));
    }

    @Test
    void theMessageNamesEveryRefusedOptionAndTheHint() {
        assertThatThrownBy(
                        () -> FactoryMocks.createTableSink(
                                SCHEMA, DT, with("startup.mode", "earliest", "lookup.cache", "PARTIAL")))
                .satisfies(anyCauseMatches(ValidationException.class, "[lookup.cache, startup.mode]"))
                .satisfies(anyCauseMatches(ValidationException.class, "/*+ OPTIONS("));
    }

    @Test
    void unknownKeysStillFailAsInEveryFactory() {
        assertThatThrownBy(() -> source(RuntimeExecutionMode.BATCH, with("no.such", "1")))
                .satisfies(anyCauseMatches(ValidationException.class, "no.such"));
    }

    @Test
    void sourceRowTypeIsThePhysicalRow() {
        RowType t = ((SetatsBatchTableSource) source(RuntimeExecutionMode.BATCH, common())).producedType();
        assertThat(t.getTypeAt(0).isNullable()).isFalse();
    }
}
