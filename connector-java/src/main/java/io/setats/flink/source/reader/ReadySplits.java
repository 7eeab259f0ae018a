package io.setats.flink.source.reader;

import java.util.ArrayDeque;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;

/**
 * ReadySplits is the run queue of one split reader's fetcher thread: the bucket streams that have
 * something to read now (a message of their DoGet arrived, or their snapshot phase has rows),
 * first come first served, each stream at most once. The fetcher takes the head, reads one record
 * batch of it and, when that stream still has work, puts it back at the tail, so splits with a
 * backlog take turns batch by batch (fair between splits) and one thread serves them all.
 *
 * <p>{@link #signal} and {@link #wakeUp} may be called from any thread (gRPC's, the task's);
 * {@link #take} from the fetcher thread only.
 */
final class ReadySplits {

    /** Returned by {@link #take} after {@link #wakeUp()}. */
    static final Object WOKEN_UP = new Object();

    private final ReentrantLock lock = new ReentrantLock();
    private final Condition changed = lock.newCondition();
    private final ArrayDeque<BucketStream> queue = new ArrayDeque<>();
    private boolean wakeUp;

    /** Queues {@code s} at the tail unless it is queued already. */
    void signal(BucketStream s) {
        lock.lock();
        try {
            if (!s.queued) {
                s.queued = true;
                queue.addLast(s);
                changed.signal();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Makes the current or next {@link #take} return {@link #WOKEN_UP}. */
    void wakeUp() {
        lock.lock();
        try {
            wakeUp = true;
            changed.signal();
        } finally {
            lock.unlock();
        }
    }

    /**
     * Takes the head stream, waiting up to {@code timeoutMs} (negative: without limit).
     *
     * @return a {@link BucketStream}, {@link #WOKEN_UP} (the wake-up is consumed), or null when the
     *     time ran out
     */
    Object take(long timeoutMs) throws InterruptedException {
        lock.lock();
        try {
            long left = TimeUnit.MILLISECONDS.toNanos(timeoutMs);
            while (queue.isEmpty() && !wakeUp) {
                if (timeoutMs < 0) {
                    changed.await();
                } else if (left <= 0) {
                    return null;
                } else {
                    left = changed.awaitNanos(left);
                }
            }
            if (wakeUp) {
                wakeUp = false;
                return WOKEN_UP;
            }
            BucketStream s = queue.pollFirst();
            s.queued = false;
            return s;
        } finally {
            lock.unlock();
        }
    }

    /** Streams queued now (tests). */
    int size() {
        lock.lock();
        try {
            return queue.size();
        } finally {
            lock.unlock();
        }
    }
}
