package io.setats.flink.source.reader;

import io.setats.flink.source.split.SetatsSplit;
import io.setats.flink.source.split.TableBucket;

import org.junit.jupiter.api.Test;

import java.time.Duration;

import static org.assertj.core.api.Assertions.assertThat;

/** ReadySplits: the fetcher's run queue (FIFO, each stream once, round-robin by re-queueing). */
class ReadySplitsTest {

    private static BucketStream stream(ReadySplits ready, int bucket) {
        return new BucketStream(
                null, "db", "t", SetatsSplit.atOffset(new TableBucket("", bucket), 0), null, ready,
                Reconnect.Settings.withTimeout(Duration.ofSeconds(1)));
    }

    @Test
    void streamsTakeTurnsAndAreQueuedOnce() throws Exception {
        ReadySplits ready = new ReadySplits();
        BucketStream a = stream(ready, 0);
        BucketStream b = stream(ready, 1);
        ready.signal(a);
        ready.signal(a); // a message more of a queued stream: still one entry
        ready.signal(b);
        assertThat(ready.size()).isEqualTo(2);
        assertThat(ready.take(-1)).isSameAs(a);
        ready.signal(a); // a had more: back to the tail, behind b
        assertThat(ready.take(-1)).isSameAs(b);
        assertThat(ready.take(-1)).isSameAs(a);
        assertThat(ready.take(0)).isNull();
    }

    @Test
    void aWakeUpBeforeTheTakeIsNotLostAndIsConsumed() throws Exception {
        ReadySplits ready = new ReadySplits();
        BucketStream a = stream(ready, 0);
        ready.wakeUp();
        ready.signal(a);
        assertThat(ready.take(-1)).isSameAs(ReadySplits.WOKEN_UP);
        assertThat(ready.take(-1)).isSameAs(a);
        assertThat(ready.take(1)).isNull();
    }

    @Test
    void aWakeUpReleasesAWaitingTake() throws Exception {
        ReadySplits ready = new ReadySplits();
        Thread waker = new Thread(ready::wakeUp);
        waker.start();
        assertThat(ready.take(-1)).isSameAs(ReadySplits.WOKEN_UP);
        waker.join();
    }
}
