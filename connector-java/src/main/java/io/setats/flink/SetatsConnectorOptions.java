package io.setats.flink;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;
import org.apache.flink.configuration.DescribedEnum;
import org.apache.flink.configuration.MemorySize;
import org.apache.flink.configuration.description.InlineElement;

import java.time.Duration;
import java.util.Arrays;
import java.util.Locale;
import java.util.stream.Collectors;

import static org.apache.flink.configuration.description.TextElement.text;

/**
 * SetatsConnectorOptions holds every {@code WITH (...)} option of the {@code setats} sink and the
 * {@code setats-cdc} source (SPEC section 2), with its default and description.
 *
 * <p>Options marked "Setats addition" are not in the seeds; everything else follows them. Checks
 * that need more than one option live in {@link SetatsOptionsUtil}.
 */
public final class SetatsConnectorOptions {

    private SetatsConnectorOptions() {}

    // --------------------------------------------------------------------------------------------
    // Common options (setats and setats-cdc)
    // --------------------------------------------------------------------------------------------

    /** Gateway address: {@code grpc://host:port}, {@code grpc+tls://host:port} or {@code host:port}. */
    public static final ConfigOption<String> MANAGER_URL =
            ConfigOptions.key("manager-url")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "Address of the Setats gateway (the 'Setats Manager'): grpc://host:port, "
                                    + "grpc+tls://host:port or host:port.");

    /** User of the gateway's users file (SPEC section 14); with {@link #PASSWORD}. */
    public static final ConfigOption<String> USERNAME =
            ConfigOptions.key("username")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "User of the gateway's --users-file; sent as HTTP Basic credentials on "
                                    + "every call, with 'password'. Unset: anonymous (only a "
                                    + "gateway without users file accepts that).");

    /** Password of {@link #USERNAME}. */
    public static final ConfigOption<String> PASSWORD =
            ConfigOptions.key("password")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "Password of 'username'. Use grpc+tls:// so that it never crosses the "
                                    + "network in clear.");

    /** PEM file of CA certificates for grpc+tls:// (default: the JVM's trust store). */
    public static final ConfigOption<String> TLS_CA_CERT =
            ConfigOptions.key("tls.ca-cert")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "Path of a PEM file with the CA certificate(s) that signed the "
                                    + "gateway's --tls-cert, on every TaskManager and the client. "
                                    + "Only with 'manager-url' = 'grpc+tls://...'. Default: the "
                                    + "JVM's trust store.");

    /** Warehouse URI; must equal the gateway's warehouse. */
    public static final ConfigOption<String> WAREHOUSE =
            ConfigOptions.key("warehouse")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "Warehouse URI (file:///abs/path or a plain path). Must equal the "
                                    + "gateway's warehouse; a mismatch fails the job naming both.");

    /** Catalog type: {@code hadoop} or {@code hive}. */
    public static final ConfigOption<CatalogType> CATALOG_TYPE =
            ConfigOptions.key("catalog-type")
                    .enumType(CatalogType.class)
                    .noDefaultValue()
                    .withDescription(
                            "Where table metadata lives: 'hadoop' (under the warehouse) or 'hive' "
                                    + "(Hive Metastore at 'uri').");

    /** Catalog namespace. */
    public static final ConfigOption<String> CATALOG_NAME =
            ConfigOptions.key("catalog-name")
                    .stringType()
                    .noDefaultValue()
                    .withDescription("Catalog namespace.");

    /** Database of the table; default {@code default}. */
    public static final ConfigOption<String> CATALOG_DATABASE =
            ConfigOptions.key("catalog-database")
                    .stringType()
                    .defaultValue("default")
                    .withDescription("Database of the Setats table.");

    /** Table name; default: the Flink table's name. */
    public static final ConfigOption<String> CATALOG_TABLE =
            ConfigOptions.key("catalog-table")
                    .stringType()
                    .noDefaultValue()
                    .withDescription("Setats table name. Default: the name of the Flink table.");

    /** Hive Metastore thrift URIs (catalog-type hive only, required there). */
    public static final ConfigOption<String> URI =
            ConfigOptions.key("uri")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "Hive Metastore thrift URIs, comma separated. Required when "
                                    + "'catalog-type' = 'hive'.");

    // --------------------------------------------------------------------------------------------
    // Table layout (sink: used to create the table; source: optional, must match the table)
    // --------------------------------------------------------------------------------------------

    /** Bucket count; -1 = the gateway's default bucket count. */
    public static final ConfigOption<Integer> BUCKET =
            ConfigOptions.key("bucket")
                    .intType()
                    .defaultValue(-1)
                    .withDescription(
                            "Buckets per partition. -1 means the gateway's default bucket count "
                                    + "(GatewayInfo.default_bucket_count). An existing table keeps "
                                    + "its bucket count; a different explicit value is an error.");

    /** Bucket key: comma list, a subset of primary key minus partition keys. */
    public static final ConfigOption<String> BUCKET_KEY =
            ConfigOptions.key("bucket-key")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "Comma-separated bucket-key columns: a subset of the primary key minus "
                                    + "the partition keys. Default: primary key minus partition keys.");

    // --------------------------------------------------------------------------------------------
    // Sink options (setats)
    // --------------------------------------------------------------------------------------------

    /** Table directory; default {@code <warehouse>/<database>.db/<table>}. */
    public static final ConfigOption<String> LOCATION =
            ConfigOptions.key("location")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "Directory of the table's data when the sink creates the table. "
                                    + "Default: <warehouse>/<database>.db/<table>.");

    /** Merge engine; parsed by {@link SetatsOptionsUtil#mergeEngine}. */
    public static final ConfigOption<String> MERGE_ENGINE =
            ConfigOptions.key("merge-engine")
                    .stringType()
                    .defaultValue(MergeEngine.DEDUPLICATE.toString())
                    .withDescription(
                            "Merge engine of the table: "
                                    + MergeEngine.allowedValues()
                                    + " (case-insensitive; 'partial-update' accepted).");

    /** Longest time a row waits in the sink before it is sent. */
    public static final ConfigOption<Duration> SINK_FLUSH_INTERVAL =
            ConfigOptions.key("setats.sink.flush-interval")
                    .durationType()
                    .defaultValue(Duration.ofSeconds(5))
                    .withDescription(
                            "Longest time a row waits in the sink buffer before it is sent to the "
                                    + "gateway, e.g. '5s'. Must be positive.");

    /** Rows per Arrow batch before it is sent (Setats addition). */
    public static final ConfigOption<Integer> SINK_BUFFER_ROWS =
            ConfigOptions.key("setats.sink.buffer-rows")
                    .intType()
                    .defaultValue(10_000)
                    .withDescription(
                            "Setats addition: a writer sends its buffer as one Arrow record batch "
                                    + "once it holds this many rows. Must be positive.");

    /** Bytes per Arrow batch before it is sent (Setats addition). */
    public static final ConfigOption<MemorySize> SINK_BUFFER_BYTES =
            ConfigOptions.key("setats.sink.buffer-bytes")
                    .memoryType()
                    .defaultValue(MemorySize.parse("16mb"))
                    .withDescription(
                            "Setats addition: a writer sends its buffer as one Arrow record batch "
                                    + "once its Arrow vectors hold this many bytes. Must be positive.");

    /** Record batches sent but not yet acknowledged, per writer (Setats addition). */
    public static final ConfigOption<Integer> SINK_MAX_IN_FLIGHT_BATCHES =
            ConfigOptions.key("setats.sink.max-in-flight-batches")
                    .intType()
                    .defaultValue(4)
                    .withDescription(
                            "Setats addition: record batches a writer may have sent without a "
                                    + "WriteAck; more blocks the writer (back pressure). Must be positive.");

    /**
     * Delivery guarantee of the sink (SPEC section 10), in Flink's {@code DeliveryGuarantee}
     * words: {@code at-least-once} (default) or {@code exactly-once}.
     */
    public static final ConfigOption<String> SINK_DELIVERY_GUARANTEE =
            ConfigOptions.key("sink.delivery-guarantee")
                    .stringType()
                    .defaultValue("at-least-once")
                    .withDescription(
                            "'at-least-once': rows are merged as they arrive; a batch retried "
                                    + "after a lost acknowledgement or a reconnect is applied once, "
                                    + "but rows replayed after a failover are merged again. "
                                    + "'exactly-once': rows are staged per checkpoint and merged "
                                    + "when the checkpoint completes (needs checkpointing); the "
                                    + "changelog equals that of a run without failures.");

    /** How long staged exactly-once rows of a job that never comes back are kept. */
    public static final ConfigOption<Duration> SINK_TRANSACTION_TIMEOUT =
            ConfigOptions.key("sink.transaction-timeout")
                    .durationType()
                    .defaultValue(Duration.ofHours(1))
                    .withDescription(
                            "exactly-once only: staged rows not written to for this long "
                                    + "(a job that failed and never came back) are dropped by the "
                                    + "gateway. Keep it well above the checkpoint interval and the "
                                    + "longest restart time.");

    /** Longest wait for a sent batch's WriteAck before the job fails (Setats addition). */
    public static final ConfigOption<Duration> SINK_ACK_TIMEOUT =
            ConfigOptions.key("setats.sink.ack-timeout")
                    .durationType()
                    .defaultValue(Duration.ofSeconds(60))
                    .withDescription(
                            "Setats addition: a record batch the gateway has not acknowledged this "
                                    + "long after it was sent fails the job with an error naming "
                                    + "the table, the gateway and the batch (no silent hang), "
                                    + "e.g. '60s'. Must be positive.");

    /**
     * How long an idle writer waits for more rows before it sends (Setats addition; 0: at once).
     */
    public static final ConfigOption<Duration> SINK_LINGER =
            ConfigOptions.key("setats.sink.linger")
                    .durationType()
                    .defaultValue(Duration.ZERO)
                    .withDescription(
                            "Setats addition: while none of its batches awaits a WriteAck, a "
                                    + "writer sends its buffer once its first row has waited this "
                                    + "long (0: at once); while batches are in flight it keeps "
                                    + "buffering until their acks come back, the buffer is full "
                                    + "or 'setats.sink.flush-interval' passed. So rows are sent at "
                                    + "once at low rates and in large batches under load. Must "
                                    + "not be negative.");

    /**
     * The output-flush timeout (ms) of the shuffle that feeds the sink's writers (Setats addition;
     * Flink's {@code execution.buffer-timeout} for that one edge), carried by a pass-through
     * operator chained to the operator before the sink ({@code SetatsSink#withShuffleBufferTimeout}).
     * No default: unset, the edge keeps the job's buffer timeout and there is no pass-through. Set,
     * it costs throughput under load: a 1M-row DataStream ingest ran at ~0.84x of its rate without
     * the pass-through at 20 ms, ~0.72x at 5 ms (docs/PERF-NOTES.md, "The shuffle timeout that
     * never applied").
     */
    public static final ConfigOption<Duration> SINK_SHUFFLE_BUFFER_TIMEOUT =
            ConfigOptions.key("setats.sink.shuffle-buffer-timeout")
                    .durationType()
                    .noDefaultValue()
                    .withDescription(
                            "Setats addition: the longest a row waits in a network buffer of the "
                                    + "shuffle that routes rows to the sink's writers (Flink's "
                                    + "buffer timeout, 'execution.buffer-timeout', 100 ms by "
                                    + "default, for that edge only; a full buffer is sent at once "
                                    + "whatever this is). Unset (the default): the job's buffer "
                                    + "timeout. Set: a pass-through operator 'Setats shuffle flush "
                                    + "<N> ms', chained to the operator before the sink (so in that "
                                    + "operator's task, named after the sink as Flink names a "
                                    + "sink's pre-write operators), carries it; it is added only "
                                    + "when this is below the job's buffer timeout and the operator "
                                    + "before the sink is not a partitioning and has no buffer "
                                    + "timeout of its own. Lower values lower the latency at low "
                                    + "rates and cost throughput under load (more half-full "
                                    + "buffers; without object reuse, one copy of each row into the "
                                    + "pass-through). 0: flush after every row. Must not be negative.");

    /** Table option passed on when the sink creates the table (SPEC section 4). */
    public static final ConfigOption<Boolean> IGNORE_DELETE =
            ConfigOptions.key("ignore-delete")
                    .booleanType()
                    .defaultValue(false)
                    .withDescription(
                            "Table option used when the sink creates the table: drop deletes "
                                    + "(PARTIAL_UPDATE tables).");

    /** Table option passed on when the sink creates the table (SPEC section 4). */
    public static final ConfigOption<Boolean> PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE =
            ConfigOptions.key("partial-update.remove-record-on-delete")
                    .booleanType()
                    .defaultValue(false)
                    .withDescription(
                            "Table option used when the sink creates the table: a delete removes "
                                    + "the row of a PARTIAL_UPDATE table.");

    /** Table option passed on when the sink creates the table (SPEC section 4). */
    public static final ConfigOption<Long> CHANGELOG_RETENTION_MS =
            ConfigOptions.key("changelog.retention.ms")
                    .longType()
                    .noDefaultValue()
                    .withDescription(
                            "Table option used when the sink creates the table: changelog "
                                    + "retention in ms. Default: the gateway's retention.");

    /** Table option passed on when the sink creates the table (SPEC section 8, DWS enable_binlog). */
    public static final ConfigOption<Boolean> CHANGELOG_ENABLED =
            ConfigOptions.key("changelog.enabled")
                    .booleanType()
                    .defaultValue(true)
                    .withDescription(
                            "Table option used when the sink creates the table: false keeps no "
                                    + "changelog (a pure upsert table; DWS enable_binlog off).");

    /** Table option passed on when the sink creates the table (SPEC section 8). */
    public static final ConfigOption<Boolean> CHANGELOG_CLEAN_ON_CONSUME =
            ConfigOptions.key("changelog.clean-on-consume")
                    .booleanType()
                    .defaultValue(false)
                    .withDescription(
                            "Table option used when the sink creates the table: remove changelog "
                                    + "rows every live slot consumed (consume-then-clean).");

    /** Table option passed on when the sink creates the table (SPEC section 8, DWS binlog_ttl). */
    public static final ConfigOption<Duration> SLOT_TTL =
            ConfigOptions.key("slot.ttl")
                    .durationType()
                    .noDefaultValue()
                    .withDescription(
                            "Table option used when the sink creates the table: a slot whose "
                                    + "checkpoint sync point is not registered for this long "
                                    + "expires (DWS binlog_ttl). Default 24 h.");

    // --------------------------------------------------------------------------------------------
    // Source options (setats-cdc)
    // --------------------------------------------------------------------------------------------

    /** Slot the source keeps its position in (SPEC section 9, DWS binlogSlotName). */
    public static final ConfigOption<String> SLOT_NAME =
            ConfigOptions.key("slot.name")
                    .stringType()
                    .noDefaultValue()
                    .withDescription(
                            "Slot on the gateway in which the source registers its sync points "
                                    + "(DWS binlogSlotName); one running job per slot. A job "
                                    + "without Flink state starts at the slot's checkpoint sync "
                                    + "points. Default: none.");

    /** Rows between running sync points (SPEC section 8, DWS binlogSyncPointSize). */
    public static final ConfigOption<Integer> SLOT_SYNC_POINT_SIZE =
            ConfigOptions.key("slot.sync-point-size")
                    .intType()
                    .defaultValue(5000)
                    .withDescription(
                            "With 'slot.name': a running sync point (monitoring only) is "
                                    + "registered every this many rows per bucket (DWS "
                                    + "binlogSyncPointSize). Must be positive.");

    /** Startup mode; parsed by {@link SetatsOptionsUtil#startupMode}. */
    public static final ConfigOption<String> STARTUP_MODE =
            ConfigOptions.key("startup.mode")
                    .stringType()
                    .defaultValue(StartupMode.LATEST.toString())
                    .withDescription(
                            "Where reading starts: "
                                    + StartupMode.allowedValues()
                                    + " ('timestamp' accepted for 'from-timestamp').");

    /** Start position for {@code from-timestamp}, ms since epoch. */
    public static final ConfigOption<Long> SCAN_TIMESTAMP_MILLIS =
            ConfigOptions.key("scan.timestamp-millis")
                    .longType()
                    .noDefaultValue()
                    .withDescription(
                            "Commit timestamp (ms since epoch) to start from; required with "
                                    + "'startup.mode' = 'from-timestamp', an error otherwise.");

    /** How often new buckets and partitions are looked for. */
    public static final ConfigOption<Duration> BUCKET_DISCOVERY_INTERVAL =
            ConfigOptions.key("bucket.discovery-interval")
                    .durationType()
                    .defaultValue(Duration.ofSeconds(300))
                    .withDescription(
                            "How often the source looks for new buckets and partitions; NATS "
                                    + "notifications trigger a look sooner.");

    /** How long a CDC bucket stream keeps reconnecting without a row before the task fails. */
    public static final ConfigOption<Duration> SCAN_RECONNECT_TIMEOUT =
            ConfigOptions.key("scan.reconnect-timeout")
                    .durationType()
                    .defaultValue(Duration.ofMinutes(5))
                    .withDescription(
                            "When a bucket's changelog stream breaks (gateway restart, network), the "
                                    + "source reconnects from the next offset with exponential back-off "
                                    + "(100 ms up to 5 s); after this long without a row the task fails "
                                    + "naming the gateway and the bucket. 0 fails at once.");

    // --------------------------------------------------------------------------------------------
    // Enums
    // --------------------------------------------------------------------------------------------

    /** CatalogType is the value of {@link #CATALOG_TYPE}; {@code toString} is the option value. */
    public enum CatalogType implements DescribedEnum {
        hadoop("Table metadata under the warehouse (served by the gateway)."),
        hive("Hive Metastore at 'uri' (thrift URIs, comma separated, tried in order).");

        private final String description;

        CatalogType(String description) {
            this.description = description;
        }

        @Override
        public InlineElement getDescription() {
            return text(description);
        }
    }

    /** MergeEngine is the value of {@link #MERGE_ENGINE} (SPEC section 4). */
    public enum MergeEngine implements DescribedEnum {
        DEDUPLICATE("The written row replaces the stored row (undeclared columns are kept)."),
        PARTIAL_UPDATE("Per declared column, the written value if not null, else the stored value.");

        private final String description;

        MergeEngine(String description) {
            this.description = description;
        }

        @Override
        public InlineElement getDescription() {
            return text(description);
        }

        /**
         * Parses a merge-engine value: case-insensitive, '-' read as '_'.
         *
         * @throws IllegalArgumentException for anything else, listing the allowed values
         */
        public static MergeEngine parse(String value) {
            String norm = value.trim().replace('-', '_').toUpperCase(Locale.ROOT);
            for (MergeEngine e : values()) {
                if (e.name().equals(norm)) {
                    return e;
                }
            }
            throw new IllegalArgumentException(
                    "unknown merge engine '" + value + "', allowed: " + allowedValues());
        }

        static String allowedValues() {
            return Arrays.stream(values()).map(Enum::name).collect(Collectors.joining(", "));
        }
    }

    /** StartupMode is the value of {@link #STARTUP_MODE} (SPEC section 5). */
    public enum StartupMode implements DescribedEnum {
        LATEST("latest", "From each bucket's end offset at start."),
        EARLIEST("earliest", "From each bucket's oldest retained offset."),
        FROM_TIMESTAMP(
                "from-timestamp",
                "From the first changelog row whose commit timestamp >= 'scan.timestamp-millis'."),
        INITIAL(
                "initial",
                "The merged rows of each bucket as +I at one consistent view, then the changelog "
                        + "from exactly that view's offset (full + incremental, SPEC section 9).");

        private final String value;
        private final String description;

        StartupMode(String value, String description) {
            this.value = value;
            this.description = description;
        }

        @Override
        public String toString() {
            return value;
        }

        @Override
        public InlineElement getDescription() {
            return text(description);
        }

        /**
         * Parses a startup-mode value: case-insensitive; {@code timestamp} means {@code from-timestamp}.
         *
         * @throws IllegalArgumentException for anything else, listing the allowed values
         */
        public static StartupMode parse(String value) {
            String norm = value.trim().toLowerCase(Locale.ROOT).replace('_', '-');
            if (norm.equals("timestamp")) {
                return FROM_TIMESTAMP;
            }
            for (StartupMode m : values()) {
                if (m.value.equals(norm)) {
                    return m;
                }
            }
            throw new IllegalArgumentException(
                    "unknown startup mode '" + value + "', allowed: " + allowedValues());
        }

        static String allowedValues() {
            return Arrays.stream(values()).map(m -> m.value).collect(Collectors.joining(", "));
        }
    }
}
