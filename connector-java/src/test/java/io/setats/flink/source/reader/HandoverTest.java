package io.setats.flink.source.reader;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.Timeout;

import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicBoolean;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

@Timeout(value = 60, unit = TimeUnit.SECONDS)
class HandoverTest {

    /** Runs a put on another thread and waits until it blocks (or finishes). */
    private static CompletableFuture<Boolean> putAsync(Handover h, Object item, AtomicBoolean open)
            throws InterruptedException {
        CompletableFuture<Boolean> done = new CompletableFuture<>();
        Thread t = new Thread(() -> {
            try {
                done.complete(h.put(item, open::get));
            } catch (Throwable e) {
                done.completeExceptionally(e);
            }
        });
        t.start();
        while (!done.isDone() && t.getState() != Thread.State.WAITING) {
            Thread.sleep(1);
        }
        return done;
    }

    @Test
    void keepsOrderAndBlocksProducersWhileFull() throws Exception {
        Handover h = new Handover(2);
        AtomicBoolean open = new AtomicBoolean(true);
        assertThat(h.put("a", open::get)).isTrue();
        assertThat(h.put("b", open::get)).isTrue();
        CompletableFuture<Boolean> c = putAsync(h, "c", open);
        assertThat(c).isNotDone();
        assertThat(h.take()).isEqualTo("a");
        assertThat(c.get()).isTrue();
        assertThat(h.take()).isEqualTo("b");
        assertThat(h.take()).isEqualTo("c");
    }

    @Test
    void aClosedProducerIsReleasedWithoutInterrupt() throws Exception {
        Handover h = new Handover(1);
        AtomicBoolean open = new AtomicBoolean(true);
        h.put("a", open::get);
        CompletableFuture<Boolean> b = putAsync(h, "b", open);
        assertThat(b).isNotDone();
        open.set(false);
        h.releaseProducers();
        assertThat(b.get()).isFalse(); // dropped
        assertThat(h.size()).isEqualTo(1);
    }

    @Test
    void closeReleasesEveryoneAndDropsItems() throws Exception {
        Handover h = new Handover(1);
        AtomicBoolean open = new AtomicBoolean(true);
        h.put("a", open::get);
        CompletableFuture<Boolean> b = putAsync(h, "b", open);
        h.close();
        assertThat(b.get()).isFalse();
        assertThat(h.size()).isZero();
        assertThat(h.put("c", open::get)).isFalse();
        h.add("wake");
        assertThat(h.size()).isZero();
    }

    @Test
    void wakeUpMarkersIgnoreTheCapacity() throws Exception {
        Handover h = new Handover(1);
        h.put("a", () -> true);
        h.add("wake");
        assertThat(h.size()).isEqualTo(2);
        assertThat(h.take()).isEqualTo("a");
        assertThat(h.take()).isEqualTo("wake");
        assertThatThrownBy(() -> new Handover(0)).isInstanceOf(IllegalArgumentException.class);
    }
}
