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
                SetatsSplit.atTimestamp(new TableBucket("dt=d2", 0), 0, 0L),
                SetatsSplit.atOffset(new TableBucket("", 0), 17, "5f0c2a9e-0d1b-4c8e-9a51-3e2f7b6d8c10"),
                SetatsSplit.atTimestamp(new TableBucket("dt=d2", 4), 3, 1_767_196_800_000L, "t-\u00e9"),
                SetatsSplit.inSnapshot(new TableBucket("", 1), SnapshotPosition.start(), "tid"),
                SetatsSplit.inSnapshot(new TableBucket("dt=d1", 0), new SnapshotPosition(7, new byte[] {0, (byte) 0xff, 3}), ""));
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
        assertThat(back.tableId()).isEqualTo(split.tableId());
        assertThat(back.snapshot()).isEqualTo(split.snapshot());
    }

    @Test
    void tableIdIsPartOfTheSplitsIdentityButNotOfItsId() {
        SetatsSplit a = SetatsSplit.atOffset(new TableBucket("", 1), 5, "id-a");
        SetatsSplit b = SetatsSplit.atOffset(new TableBucket("", 1), 5, "id-b");
        assertThat(a).isNotEqualTo(b);
        assertThat(a.splitId()).isEqualTo(b.splitId());
        assertThat(a.withTableId("id-b")).isEqualTo(b);
        assertThat(a.toString()).contains("id-a");
    }

    @Test
    void versionOneSplitsAreReadWithoutTableId() throws IOException {
        // partition "p=1" (int 3 + bytes), bucket 2, offset 5, no timestamp.
        byte[] v1 = {
            0, 0, 0, 3, 'p', '=', '1', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 5, 0
        };
        SetatsSplit back = SetatsSplitSerializer.INSTANCE.deserialize(1, v1);
        assertThat(back).isEqualTo(SetatsSplit.atOffset(new TableBucket("p=1", 2), 5));
        assertThat(back.tableId()).isEmpty();
        // partition "" , bucket 0, offset 9, timestamp 7 ms.
        byte[] v1ts = {
            0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 9, 1, 0, 0, 0, 0, 0, 0, 0, 7
        };
        SetatsSplit ts = SetatsSplitSerializer.INSTANCE.deserialize(1, v1ts);
        assertThat(ts).isEqualTo(SetatsSplit.atTimestamp(new TableBucket("", 0), 9, 7L));
        assertThat(ts.tableId()).isEmpty();
        // A version 1 split is written again in version 3 with an empty table id.
        assertThat(SetatsSplitSerializer.INSTANCE.getVersion()).isEqualTo(3);
        assertThat(SetatsSplitSerializer.INSTANCE.deserialize(3, SetatsSplitSerializer.INSTANCE.serialize(back)))
                .isEqualTo(back);
    }

    @Test
    void versionTwoLayoutIsFixed() throws IOException {
        // Version 1 fields, then table id "ab" (int 2 + bytes).
        byte[] v2 = {
            0, 0, 0, 3, 'p', '=', '1', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 2, 'a', 'b'
        };
        SetatsSplit split = SetatsSplit.atOffset(new TableBucket("p=1", 2), 5, "ab");
        assertThat(SetatsSplitSerializer.INSTANCE.deserialize(2, v2)).isEqualTo(split);
    }

    @Test
    void versionThreeLayoutIsFixed() throws IOException {
        // Version 2 fields, then no snapshot (false).
        byte[] v3 = {
            0, 0, 0, 3, 'p', '=', '1', 0, 0, 0, 2, 0, 0, 0, 0, 0, 0, 0, 5, 0, 0, 0, 0, 2, 'a', 'b', 0
        };
        SetatsSplit split = SetatsSplit.atOffset(new TableBucket("p=1", 2), 5, "ab");
        assertThat(SetatsSplitSerializer.INSTANCE.deserialize(3, v3)).isEqualTo(split);
        assertThat(SetatsSplitSerializer.INSTANCE.serialize(split)).containsExactly(v3);
        // A snapshot split: offset 0, no timestamp, table id "", snapshot at view 9 after key {1, 2}.
        byte[] snap = {
            0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 9, 0, 0, 0, 2, 1, 2
        };
        SetatsSplit s = SetatsSplit.inSnapshot(new TableBucket("", 1), new SnapshotPosition(9, new byte[] {1, 2}), "");
        assertThat(SetatsSplitSerializer.INSTANCE.serialize(s)).containsExactly(snap);
        assertThat(SetatsSplitSerializer.INSTANCE.deserialize(3, snap)).isEqualTo(s);
    }

    @Test
    void snapshotStateMovesAndEndsInTheChangelog() {
        TableBucket b = new TableBucket("", 0);
        SetatsSplitState st = new SetatsSplitState(SetatsSplit.inSnapshot(b, SnapshotPosition.start(), "t"));
        assertThat(st.inSnapshot()).isTrue();
        st.snapshotRowEmitted(10, new byte[] {5});
        assertThat(st.toSplit().snapshot()).isEqualTo(new SnapshotPosition(10, new byte[] {5}));
        st.catchUpRowEmitted(12);
        assertThat(st.toSplit().snapshot()).isEqualTo(new SnapshotPosition(13, new byte[] {5}));
        st.viewMovedTo(20);
        assertThat(st.toSplit().snapshot()).isEqualTo(new SnapshotPosition(20, new byte[] {5}));
        assertThatThrownBy(() -> st.emitted(3)).isInstanceOf(IllegalStateException.class);
        st.snapshotDone(20);
        assertThat(st.inSnapshot()).isFalse();
        assertThat(st.toSplit()).isEqualTo(SetatsSplit.atOffset(b, 20, "t"));
        assertThatThrownBy(() -> st.snapshotDone(21)).isInstanceOf(IllegalStateException.class);
        st.emitted(20);
        assertThat(st.toSplit().startingOffset()).isEqualTo(21);
    }

    @Test
    void rejectsUnknownVersionAndTrailingBytes() throws IOException {
        byte[] bytes = SetatsSplitSerializer.INSTANCE.serialize(SetatsSplit.atOffset(new TableBucket("", 0), 1));
        assertThatThrownBy(() -> SetatsSplitSerializer.INSTANCE.deserialize(4, bytes))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("version 4");
        byte[] longer = Arrays.copyOf(bytes, bytes.length + 1);
        assertThatThrownBy(() -> SetatsSplitSerializer.INSTANCE.deserialize(3, longer))
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
                new SetatsSplitState(SetatsSplit.atTimestamp(new TableBucket("", 0), 9, 1000L, "tid"));
        assertThat(state.toSplit().startingTimestampMs()).isEqualTo(1000L);
        state.emitted(12);
        assertThat(state.toSplit()).isEqualTo(SetatsSplit.atOffset(new TableBucket("", 0), 13, "tid"));
    }
}
