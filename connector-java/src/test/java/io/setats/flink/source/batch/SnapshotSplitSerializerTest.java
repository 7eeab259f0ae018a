package io.setats.flink.source.batch;

import io.setats.flink.source.split.TableBucket;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.util.Arrays;
import java.util.Collections;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Round trips of the batch scan's split and enumerator state serializers, and corrupt input. */
class SnapshotSplitSerializerTest {

    private static final SnapshotSplit FRESH = new SnapshotSplit(new TableBucket("", 0), "", null);
    private static final SnapshotSplit RESUMED =
            new SnapshotSplit(new TableBucket("dt=2026-12-01/h=7", 3), "tid-1", new byte[] {0, 1, (byte) 0xff});

    @Test
    void splitsRoundTrip() throws IOException {
        for (SnapshotSplit s : Arrays.asList(FRESH, RESUMED)) {
            byte[] b = SnapshotSplitSerializer.INSTANCE.serialize(s);
            SnapshotSplit back = SnapshotSplitSerializer.INSTANCE.deserialize(SnapshotSplitSerializer.VERSION, b);
            assertThat(back).isEqualTo(s);
            assertThat(back.splitId()).isEqualTo(s.splitId());
        }
        assertThat(RESUMED.withAfterKey(null)).isNotEqualTo(RESUMED);
        assertThat(RESUMED.withAfterKey(new byte[0]).afterKey()).isNull();
    }

    @Test
    void enumeratorStatesRoundTrip() throws IOException {
        for (SnapshotEnumeratorState s :
                Arrays.asList(
                        SnapshotEnumeratorState.initial(),
                        new SnapshotEnumeratorState(true, Collections.emptyList()),
                        new SnapshotEnumeratorState(true, Arrays.asList(FRESH, RESUMED)))) {
            byte[] b = SnapshotEnumeratorStateSerializer.INSTANCE.serialize(s);
            assertThat(SnapshotEnumeratorStateSerializer.INSTANCE.deserialize(SnapshotEnumeratorStateSerializer.VERSION, b))
                    .isEqualTo(s);
        }
    }

    @Test
    void corruptInputIsRefused() throws IOException {
        byte[] b = SnapshotSplitSerializer.INSTANCE.serialize(RESUMED);
        assertThatThrownBy(() -> SnapshotSplitSerializer.INSTANCE.deserialize(2, b)).hasMessageContaining("version 2");
        byte[] longer = Arrays.copyOf(b, b.length + 1);
        assertThatThrownBy(() -> SnapshotSplitSerializer.INSTANCE.deserialize(1, longer)).hasMessageContaining("trailing");
        // The after-key length is the last int before the key's 3 bytes: make it negative.
        byte[] bad = b.clone();
        bad[b.length - 7] = (byte) 0x80;
        assertThatThrownBy(() -> SnapshotSplitSerializer.INSTANCE.deserialize(1, bad)).hasMessageContaining("after-key length");
        byte[] state = SnapshotEnumeratorStateSerializer.INSTANCE.serialize(
                new SnapshotEnumeratorState(true, Collections.singletonList(FRESH)));
        state[1] = (byte) 0x7f; // split count
        assertThatThrownBy(() -> SnapshotEnumeratorStateSerializer.INSTANCE.deserialize(1, state))
                .hasMessageContaining("splits");
    }
}
