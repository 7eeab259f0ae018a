package io.setats.flink.source;

import io.setats.flink.source.deserializer.ChangelogRecord;
import io.setats.flink.source.deserializer.SetatsDeserializationSchema;
import io.setats.flink.source.enumerator.SetatsSourceEnumerator;
import io.setats.flink.source.reader.FetchedBatches;
import io.setats.flink.source.reader.SetatsRecordEmitter;
import io.setats.flink.source.reader.SetatsSourceReader;
import io.setats.flink.source.reader.SetatsSplitReader;
import io.setats.flink.source.slot.SlotOwner;
import io.setats.flink.source.slot.SlotSyncPoints;
import io.setats.flink.source.split.SetatsSplit;
import io.setats.flink.source.split.SetatsSplitSerializer;
import io.setats.flink.source.state.SetatsEnumeratorState;
import io.setats.flink.source.state.SetatsEnumeratorStateSerializer;

import org.apache.flink.api.common.ExecutionConfig;
import org.apache.flink.api.common.serialization.DeserializationSchema;
import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.connector.base.source.reader.splitreader.SplitReader;
import org.apache.flink.core.io.SimpleVersionedSerializer;
import org.apache.flink.metrics.MetricGroup;
import org.apache.flink.streaming.api.operators.OutputTypeConfigurable;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.util.UserCodeClassLoader;

import java.util.function.Supplier;

/**
 * SetatsCdcSource reads the changelog of a Setats primary-key table as an unbounded stream
 * (FLIP-27 source; SPEC section 5). One split per (partition, bucket); each reader keeps one live
 * DoGet stream per split and the gateway pushes rows as soon as they are durable. Checkpoints store
 * the next offset of every split, so a restore goes on exactly after the last emitted row.
 *
 * <pre>{@code
 * SetatsCdcSource<RowData> source = SetatsCdcSource.builder()
 *         .setManagerUrl("grpc://localhost:8815")
 *         .setWarehouse("/data/setats")
 *         .setTable("testdb", "orders")
 *         .setStartupMode(StartupMode.EARLIEST)
 *         .build();
 * env.fromSource(source, WatermarkStrategy.noWatermarks(), "setats-cdc orders");
 * }</pre>
 *
 * <p>Rows of a batch reach the deserialization schema as one reused view over the batch's Arrow
 * buffers, valid while it handles them. When the job runs without object reuse (Flink's default,
 * {@code pipeline.object-reuse = false}, learnt from the job's {@link ExecutionConfig} through
 * {@link OutputTypeConfigurable} when the stream graph is built), Flink copies every emitted row
 * for the next chained operator, so the rows are written into one reused {@code BinaryRowData}
 * instead, which its serializer copies with one array copy rather than field by field.
 *
 * @param <T> type of the emitted records (RowData with RowKind unless a deserialization schema
 *     says otherwise)
 */
public final class SetatsCdcSource<T>
        implements Source<T, SetatsSplit, SetatsEnumeratorState>, ResultTypeQueryable<T>, OutputTypeConfigurable<T> {

    private static final long serialVersionUID = 1L;

    private final SetatsSourceConfig config;
    private final RowType readType;
    private final SetatsDeserializationSchema<T> deserializer;
    private final boolean watchEnabled;
    /** Whether readers emit BinaryRowData rows (the job has no object reuse); see the class comment. */
    private boolean binaryRows;

    public SetatsCdcSource(
            SetatsSourceConfig config,
            RowType readType,
            SetatsDeserializationSchema<T> deserializer,
            boolean watchEnabled) {
        this.config = config;
        this.readType = readType;
        this.deserializer = deserializer;
        this.watchEnabled = watchEnabled;
    }

    /** A builder of a source that emits {@link RowData} unless a deserializer is set. */
    public static SetatsCdcSourceBuilder<RowData> builder() {
        return new SetatsCdcSourceBuilder<>();
    }

    public SetatsSourceConfig config() {
        return config;
    }

    /** The table columns the readers read (by name), in this order. */
    public RowType readType() {
        return readType;
    }

    @Override
    public Boundedness getBoundedness() {
        return Boundedness.CONTINUOUS_UNBOUNDED;
    }

    @Override
    public SourceReader<T, SetatsSplit> createReader(SourceReaderContext readerContext)
            throws Exception {
        deserializer.open(
                new DeserializationSchema.InitializationContext() {
                    @Override
                    public MetricGroup getMetricGroup() {
                        return readerContext.metricGroup().addGroup("deserializer");
                    }

                    @Override
                    public UserCodeClassLoader getUserCodeClassLoader() {
                        return readerContext.getUserCodeClassLoader();
                    }
                });
        int subtask = readerContext.getIndexOfSubtask();
        FetchedBatches fetched = new FetchedBatches();
        Supplier<SplitReader<ChangelogRecord, SetatsSplit>> splitReader =
                () -> new SetatsSplitReader(config, readType, subtask, binaryRows, fetched);
        SlotSyncPoints syncPoints =
                config.slotName() == null
                        ? null
                        : new SlotSyncPoints(config, SlotOwner.of(readerContext.metricGroup(), config.slotName()));
        return new SetatsSourceReader<>(
                splitReader,
                new SetatsRecordEmitter<>(deserializer, syncPoints),
                readerContext.getConfiguration(),
                readerContext,
                fetched,
                syncPoints);
    }

    @Override
    public SplitEnumerator<SetatsSplit, SetatsEnumeratorState> createEnumerator(
            SplitEnumeratorContext<SetatsSplit> enumContext) {
        return new SetatsSourceEnumerator(
                enumContext, config, readType, SetatsEnumeratorState.initial(), watchEnabled);
    }

    @Override
    public SplitEnumerator<SetatsSplit, SetatsEnumeratorState> restoreEnumerator(
            SplitEnumeratorContext<SetatsSplit> enumContext, SetatsEnumeratorState checkpoint) {
        return new SetatsSourceEnumerator(enumContext, config, readType, checkpoint, watchEnabled);
    }

    @Override
    public SimpleVersionedSerializer<SetatsSplit> getSplitSerializer() {
        return SetatsSplitSerializer.INSTANCE;
    }

    @Override
    public SimpleVersionedSerializer<SetatsEnumeratorState> getEnumeratorCheckpointSerializer() {
        return SetatsEnumeratorStateSerializer.INSTANCE;
    }

    @Override
    public TypeInformation<T> getProducedType() {
        return deserializer.getProducedType();
    }

    /**
     * Called by Flink's stream graph with the job's {@link ExecutionConfig} before the source is
     * shipped to the tasks: without object reuse the readers emit {@code BinaryRowData} rows.
     */
    @Override
    public void setOutputType(TypeInformation<T> outTypeInfo, ExecutionConfig executionConfig) {
        this.binaryRows = !executionConfig.isObjectReuseEnabled();
    }

    /** Whether the readers emit rows as {@code BinaryRowData} (the job runs without object reuse). */
    public boolean emitsBinaryRows() {
        return binaryRows;
    }
}
