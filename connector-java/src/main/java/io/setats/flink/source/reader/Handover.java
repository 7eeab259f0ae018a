package io.setats.flink.source.reader;

import java.util.ArrayDeque;
import java.util.concurrent.locks.Condition;
import java.util.concurrent.locks.ReentrantLock;
import java.util.function.BooleanSupplier;

/**
 * Handover is the bounded queue between the bucket streams of one split reader (producers, one
 * thread each) and the fetcher thread (consumer). A full handover blocks producers, which is the
 * back pressure towards the gateway.
 *
 * <p>Unlike a {@code BlockingQueue}, blocked producers are released without {@link
 * Thread#interrupt()}: a bucket thread must never be interrupted while it is inside Arrow Flight's
 * {@code FlightStream.next()}, which can then lose its end-of-stream marker and hang in {@code
 * close()}. A producer waits only while its own {@code open} condition holds and the handover is
 * not closed; {@link #releaseProducers()} makes every waiting producer re-check.
 */
public final class Handover {

    private final int capacity;
    private final ArrayDeque<Object> items = new ArrayDeque<>();
    private final ReentrantLock lock = new ReentrantLock();
    private final Condition notEmpty = lock.newCondition();
    private final Condition notFull = lock.newCondition();
    private boolean closed;

    public Handover(int capacity) {
        if (capacity <= 0) {
            throw new IllegalArgumentException("capacity must be positive, got " + capacity);
        }
        this.capacity = capacity;
    }

    /**
     * Adds {@code item}, waiting while the handover is full and {@code open} is true.
     *
     * @return false (item dropped) when {@code open} turned false or the handover was closed
     */
    public boolean put(Object item, BooleanSupplier open) throws InterruptedException {
        lock.lock();
        try {
            while (items.size() >= capacity && !closed && open.getAsBoolean()) {
                notFull.await();
            }
            if (closed || !open.getAsBoolean()) {
                return false;
            }
            items.addLast(item);
            notEmpty.signal();
            return true;
        } finally {
            lock.unlock();
        }
    }

    /** Adds {@code item} even when full (wake-up markers); no-op after {@link #close()}. */
    public void add(Object item) {
        lock.lock();
        try {
            if (!closed) {
                items.addLast(item);
                notEmpty.signal();
            }
        } finally {
            lock.unlock();
        }
    }

    /** Takes the oldest item, waiting while empty. */
    public Object take() throws InterruptedException {
        lock.lock();
        try {
            while (items.isEmpty()) {
                notEmpty.await();
            }
            Object item = items.pollFirst();
            notFull.signalAll();
            return item;
        } finally {
            lock.unlock();
        }
    }

    /** Makes every waiting producer re-check its open condition. */
    public void releaseProducers() {
        lock.lock();
        try {
            notFull.signalAll();
        } finally {
            lock.unlock();
        }
    }

    /** Drops every item and releases all producers for good. */
    public void close() {
        lock.lock();
        try {
            closed = true;
            items.clear();
            notFull.signalAll();
        } finally {
            lock.unlock();
        }
    }

    public int size() {
        lock.lock();
        try {
            return items.size();
        } finally {
            lock.unlock();
        }
    }
}
