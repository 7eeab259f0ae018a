package io.setats.bench.flink;

import java.util.Arrays;

/** Latency samples in ms and their nearest-rank percentiles. Not thread-safe. */
public final class Percentiles {
    private long[] samples = new long[1024];
    private int n;

    /** Adds one sample (ms). */
    public void add(long ms) {
        if (n == samples.length) {
            samples = Arrays.copyOf(samples, n * 2);
        }
        samples[n++] = ms;
    }

    public int count() {
        return n;
    }

    /**
     * The nearest-rank p-th percentile (0 < p <= 100) of the samples: the smallest sample such
     * that at least p% of the samples are <= it. NaN without samples.
     */
    public double percentile(double p) {
        if (p <= 0 || p > 100) {
            throw new IllegalArgumentException("percentile " + p + " outside (0, 100]");
        }
        if (n == 0) {
            return Double.NaN;
        }
        long[] s = Arrays.copyOf(samples, n);
        Arrays.sort(s);
        int rank = (int) Math.ceil(p / 100.0 * n);
        return s[Math.max(rank, 1) - 1];
    }

    /** The median of a list of figures (mean of the middle two for an even count); NaN if empty. */
    public static double median(double... v) {
        double[] s = Arrays.stream(v).filter(x -> !Double.isNaN(x)).sorted().toArray();
        if (s.length == 0) {
            return Double.NaN;
        }
        int m = s.length / 2;
        return s.length % 2 == 1 ? s[m] : (s[m - 1] + s[m]) / 2;
    }
}
