package io.setats.flink.dts.source;

import io.setats.flink.dts.DtsConfig;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.api.connector.source.Boundedness;
import org.apache.flink.api.connector.source.Source;
import org.apache.flink.api.connector.source.SourceReader;
import org.apache.flink.api.connector.source.SourceReaderContext;
import org.apache.flink.api.connector.source.SplitEnumerator;
import org.apache.flink.api.connector.source.SplitEnumeratorContext;
import org.apache.flink.api.java.typeutils.ResultTypeQueryable;
import org.apache.flink.configuration.Configuration;
import org.apache.flink.core.io.SimpleVersionedSerializer;

/**
 * DtsSource is the FLIP-27 source of a subscription channel (SPEC section 11): one split per
 * channel, its position (next record id, cluster id) in checkpoints, the consumer group's position
 * committed when a checkpoint completes. Build one with {@link io.setats.flink.dts.DtsSource#builder()}
 * or use the {@code dts} SQL connector.
 */
public class DtsSource<T> implements Source<T, DtsSplit, DtsEnumeratorState>, ResultTypeQueryable<T> {
    private static final long serialVersionUID = 1L;

    private final DtsConfig config;
    private final DtsDeserializationSchema<T> schema;

    public DtsSource(DtsConfig config, DtsDeserializationSchema<T> schema) {
        this.config = config;
        this.schema = schema;
    }

    public DtsConfig config() {
        return config;
    }

    @Override
    public Boundedness getBoundedness() {
        return Boundedness.CONTINUOUS_UNBOUNDED;
    }

    @Override
    public SourceReader<T, DtsSplit> createReader(SourceReaderContext context) throws Exception {
        schema.open();
        return new DtsSourceReader<>(config, new DtsRecordEmitter<>(schema), new Configuration(), context);
    }

    private long startMs() {
        return config.checkpointSeconds() == null ? -1 : config.checkpointSeconds() * 1000;
    }

    @Override
    public SplitEnumerator<DtsSplit, DtsEnumeratorState> createEnumerator(SplitEnumeratorContext<DtsSplit> ctx) {
        return new DtsEnumerator(ctx, config.topic(), startMs(), null);
    }

    @Override
    public SplitEnumerator<DtsSplit, DtsEnumeratorState> restoreEnumerator(SplitEnumeratorContext<DtsSplit> ctx, DtsEnumeratorState state) {
        return new DtsEnumerator(ctx, config.topic(), startMs(), state);
    }

    @Override
    public SimpleVersionedSerializer<DtsSplit> getSplitSerializer() {
        return DtsSplitSerializer.INSTANCE;
    }

    @Override
    public SimpleVersionedSerializer<DtsEnumeratorState> getEnumeratorCheckpointSerializer() {
        return DtsEnumeratorState.Serializer.INSTANCE;
    }

    @Override
    public TypeInformation<T> getProducedType() {
        return schema.getProducedType();
    }
}
