package io.setats.flink.source.split;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.MethodSource;

import java.io.IOException;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SetatsSplitSerializerTest {

    static List<SetatsSplit> splits() {
        return Arrays.asList(
                SetatsSplit.atOffset(new TableBucket("", 0), 0),
                SetatsSplit.atOffset(new TableBucket("", 7), 123_456_789_012L),
                SetatsSplit.atOffset(new TableBucket("dt=2026-11-29", 3), 42),
                SetatsSplit.atOffset(new TableBucket("k1=a%2Fb/k2=\u00e9t\u00e9", 1), Long.MAX_VALUE),
                SetatsSplit.atTimestamp(new TableBucket("", 2), 10, 1_767_196_800_000L),
                SetatsSplit.atTimestamp(new TableBucket("dt=d2", 0), 0, 0L));
    }

    @ParameterizedTest
    @MethodSource("splits")
    void roundTrip(SetatsSplit split) throws IOException {
        SetatsSplitSerializer s = SetatsSplitSerializer.INSTANCE;
        byte[] bytes = s.serialize(split);
        SetatsSplit back = s.deserialize(s.getVersion(), bytes);
        assertThat(back).isEqualTo(split);
        assertThat(back.splitId()).isEqualTo(split.splitId());
        assertThat(back.startingTimestampMs()).isEqualTo(split.startingTimestampMs());
    }

    @Test
    void versionOneLayoutIsFixed() throws IOException {
        // partition "p=1" (int 3 + bytes), bucket 2, offset 5, no timestamp.
        byte[] v1 = {
            0, 0, 0, 3, 'p', '=', '1', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 5, 0
        };
        assertThat(SetatsSplitSerializer.INSTANCE.deserialize(1, v1))
                .isEqualTo(SetatsSplit.atOffset(new TableBucket("p=1", 2), 5));
        assertThat(SetatsSplitSerializer.INSTANCE.serialize(SetatsSplit.atOffset(new TableBucket("p=1", 2), 5)))
                .containsExactly(v1);
    }

    @Test
    void rejectsUnknownVersionAndTrailingBytes() throws IOException {
        byte[] bytes = SetatsSplitSerializer.INSTANCE.serialize(SetatsSplit.atOffset(new TableBucket("", 0), 1));
        assertThatThrownBy(() -> SetatsSplitSerializer.INSTANCE.deserialize(2, bytes))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("version 2");
        byte[] longer = Arrays.copyOf(bytes, bytes.length + 1);
        assertThatThrownBy(() -> SetatsSplitSerializer.INSTANCE.deserialize(1, longer))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("trailing");
    }

    @Test
    void splitIdsAreUniquePerBucket() {
        assertThat(new TableBucket("", 3).splitId()).isEqualTo("bucket-3");
        assertThat(new TableBucket("dt=d1", 3).splitId()).isEqualTo("dt=d1/bucket-3");
        assertThat(new TableBucket("a=1/b=2", 0).splitId()).isNotEqualTo(new TableBucket("a=1", 0).splitId());
    }

    @Test
    void stateAdvancesToTheOffsetAfterTheEmittedRow() {
        SetatsSplitState state =
                new SetatsSplitState(SetatsSplit.atTimestamp(new TableBucket("", 0), 9, 1000L));
        assertThat(state.toSplit().startingTimestampMs()).isEqualTo(1000L);
        state.emitted(12);
        assertThat(state.toSplit()).isEqualTo(SetatsSplit.atOffset(new TableBucket("", 0), 13));
    }
}
