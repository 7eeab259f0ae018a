package io.setats.flink.source.state;

import io.setats.flink.source.split.SetatsSplit;
import io.setats.flink.source.split.TableBucket;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashSet;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class SetatsEnumeratorStateSerializerTest {

    private final SetatsEnumeratorStateSerializer serializer = SetatsEnumeratorStateSerializer.INSTANCE;

    private SetatsEnumeratorState roundTrip(SetatsEnumeratorState state) throws IOException {
        return serializer.deserialize(serializer.getVersion(), serializer.serialize(state));
    }

    @Test
    void initialState() throws IOException {
        SetatsEnumeratorState back = roundTrip(SetatsEnumeratorState.initial());
        assertThat(back).isEqualTo(SetatsEnumeratorState.initial());
        assertThat(back.startupResolved()).isFalse();
    }

    @Test
    void assignedAndPending() throws IOException {
        SetatsEnumeratorState state =
                new SetatsEnumeratorState(
                        true,
                        new HashSet<>(
                                Arrays.asList(
                                        new TableBucket("", 0),
                                        new TableBucket("", 1),
                                        new TableBucket("dt=d1", 0))),
                        Arrays.asList(
                                SetatsSplit.atOffset(new TableBucket("dt=d2", 1), 0),
                                SetatsSplit.atOffset(new TableBucket("dt=d2", 0), 17, "tid-1"),
                                SetatsSplit.atTimestamp(new TableBucket("dt=d3", 0), 4, 1_767_196_800_000L, "tid-1")));
        SetatsEnumeratorState back = roundTrip(state);
        assertThat(back).isEqualTo(state);
        assertThat(back.pendingSplits()).containsExactlyElementsOf(state.pendingSplits());
        assertThat(back.assignedBuckets())
                .containsExactly(new TableBucket("", 0), new TableBucket("", 1), new TableBucket("dt=d1", 0));
    }

    @Test
    void onlyPendingBeforeStartupResolved() throws IOException {
        SetatsEnumeratorState state =
                new SetatsEnumeratorState(
                        false,
                        Collections.emptySet(),
                        Collections.singletonList(SetatsSplit.atOffset(new TableBucket("", 0), 3)));
        assertThat(roundTrip(state)).isEqualTo(state);
    }

    @Test
    void versionOneStateIsReadWithoutTableIds() throws IOException {
        // resolved, 1 assigned bucket ("", 1), 1 pending split ("", 0) at offset 3, no timestamp.
        byte[] v1 = {
            1,
            0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 1,
            0, 0, 0, 1, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 0, 3, 0
        };
        SetatsEnumeratorState back = serializer.deserialize(1, v1);
        assertThat(back)
                .isEqualTo(
                        new SetatsEnumeratorState(
                                true,
                                Collections.singleton(new TableBucket("", 1)),
                                Collections.singletonList(SetatsSplit.atOffset(new TableBucket("", 0), 3))));
        assertThat(back.pendingSplits().get(0).tableId()).isEmpty();
        assertThat(serializer.getVersion()).isEqualTo(3);
    }

    @Test
    void rejectsUnknownVersionAndCorruptBytes() throws IOException {
        byte[] bytes = serializer.serialize(SetatsEnumeratorState.initial());
        assertThatThrownBy(() -> serializer.deserialize(99, bytes))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("version 99");
        byte[] corrupt = {1, 0x7f, 0, 0, 0};
        assertThatThrownBy(() -> serializer.deserialize(1, corrupt)).isInstanceOf(IOException.class);
    }
}
