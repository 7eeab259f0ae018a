package io.setats.flink.source.reader;

import io.setats.flink.utils.ArrowColumnarBatch;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * FetchedBatches holds the record batches that the {@link SetatsSplitReader}s of one source reader
 * handed to the task thread and that were not recycled yet, and what of a closed split reader must
 * outlive them (its gateway client, whose allocator owns their Arrow memory).
 *
 * <p>Why: Flink's {@code SplitFetcher} closes its split reader on the fetcher thread when it shuts
 * down, including the idle shut-down that {@code SourceReaderBase} asks for when a reader has no
 * split left ({@code SplitFetcherManager#maybeShutdownFinishedFetchers}, e.g. every split's
 * partition was dropped); the fetches still in the element queue are then emitted by the task
 * thread afterwards ({@code SourceReaderBase#finishedOrAvailableLater} returns {@code
 * MORE_AVAILABLE}). So a split reader's {@code close()} must not release the batches it handed out
 * ({@link #closeAfterLast}): each is released when the task thread recycles it ({@link #recycled}),
 * and the ones never recycled when the source reader closes ({@link #releaseAll()}: Flink drops
 * the queued fetches then).
 *
 * <p>Thread-safe: fetcher threads add and close, the task thread recycles and releases.
 */
public final class FetchedBatches {

    /** Each batch held, with the split reader that handed it out. */
    private final Map<ArrowColumnarBatch, Object> batches = new HashMap<>();
    /** Per closed split reader with batches held: what it still has to release after the last. */
    private final Map<Object, Runnable> afterLast = new HashMap<>();
    private boolean released;

    /**
     * Holds {@code batch}, handed to the task thread by split reader {@code owner}.
     *
     * @return false, the batch closed, after {@link #releaseAll()} (the source reader is closed)
     */
    boolean add(Object owner, ArrowColumnarBatch batch) {
        synchronized (this) {
            if (!released) {
                batches.put(batch, owner);
                return true;
            }
        }
        batch.close();
        return false;
    }

    /**
     * The task thread recycled {@code batch}: closes it, then runs its closed split reader's
     * release if it was that reader's last batch.
     */
    void recycled(ArrowColumnarBatch batch) {
        batch.close();
        Runnable last = null;
        synchronized (this) {
            Object owner = batches.remove(batch);
            if (owner != null && !batches.containsValue(owner)) {
                last = afterLast.remove(owner);
            }
        }
        if (last != null) {
            last.run();
        }
    }

    /**
     * Split reader {@code owner} closed: runs {@code release} (its client's close) now if none of
     * its batches is held, else once the last one is recycled or {@link #releaseAll()} runs.
     */
    void closeAfterLast(Object owner, Runnable release) {
        synchronized (this) {
            if (batches.containsValue(owner)) {
                afterLast.put(owner, release);
                return;
            }
        }
        release.run();
    }

    /**
     * The source reader closed (its fetchers are shut down): closes the batches never recycled, then
     * runs the closed split readers' releases. Later batches are closed as they come ({@link #add}).
     */
    public void releaseAll() {
        List<ArrowColumnarBatch> left;
        List<Runnable> last;
        synchronized (this) {
            released = true;
            left = new ArrayList<>(batches.keySet());
            batches.clear();
            last = new ArrayList<>(afterLast.values());
            afterLast.clear();
        }
        for (ArrowColumnarBatch b : left) {
            b.close();
        }
        for (Runnable r : last) {
            r.run();
        }
    }

    /** Batches held (for tests). */
    synchronized int size() {
        return batches.size();
    }
}
