package io.setats.bench.flink;

import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.RowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.types.Row;
import org.apache.flink.types.RowKind;

import java.io.Serializable;

/**
 * The deterministic data both systems get: the seeds' table shape ({@code id STRING, dt STRING,
 * name STRING, address STRING}, primary key {@code (id, dt)}, partitioned by {@code dt}, 4 dt
 * values). Row {@code i} of {@code keys + updates} rows: for {@code i < keys} an insert of key
 * {@code i}; after that update {@code j = i - keys} rewrites key {@code 5 * j} with new values
 * (so {@code updates <= keys / 5} keys are updated once each, in order after their insert).
 * The ingest source splits the rows into {@link #streamRows streams} by key ({@code k % p} for
 * {@code p} streams), each read by one source subtask in index order: its keys' inserts, then
 * their updates. So every key's rows reach the sink in this order and the table's final state is
 * {@link #expected(long)}, whatever the interleaving of the streams.
 */
public final class Workload implements Serializable {
    private static final long serialVersionUID = 1L;

    /** Column names, in order. */
    public static final String[] COLUMNS = {"id", "dt", "name", "address"};
    /** The DDL column list (seeds' shape). */
    public static final String COLUMNS_DDL =
            "id STRING, dt STRING, name STRING, address STRING, PRIMARY KEY (id, dt) NOT ENFORCED";

    private final long keys;
    private final long updates;

    /** {@code keys} distinct keys and {@code keys / 5} updates (20%). */
    public Workload(long keys) {
        this(keys, keys / 5);
    }

    Workload(long keys, long updates) {
        if (keys <= 0 || updates < 0 || updates * 5 > keys) {
            throw new IllegalArgumentException("keys " + keys + ", updates " + updates + ": need keys > 0 and 0 <= updates <= keys/5");
        }
        this.keys = keys;
        this.updates = updates;
    }

    public long keys() {
        return keys;
    }

    public long updates() {
        return updates;
    }

    /** Rows written by the ingest phase: keys + updates. */
    public long rows() {
        return keys + updates;
    }

    /**
     * Rows of stream {@code s} of {@code p}: the rows whose key {@code k} has {@code k % p == s}.
     *
     * @throws IllegalArgumentException unless {@code 0 <= s < p} and {@code p} is not a multiple
     *     of 5 (update {@code j} rewrites key {@code 5 j}, so its stream is found from {@code j mod p}
     *     only when 5 is invertible mod {@code p})
     */
    public long streamRows(int s, int p) {
        return streamInserts(s, p) + countResidue(updates, updateResidue(s, p), p);
    }

    /**
     * The workload index ({@link #rowData(long)}'s {@code i}) of row {@code t} of stream {@code s}
     * of {@code p} ({@code 0 <= t < streamRows(s, p)}): the stream's inserts in key order, then its
     * updates in order. Increasing in {@code t}.
     */
    public long streamIndex(int s, int p, long t) {
        long inserts = streamInserts(s, p);
        if (t < inserts) {
            return s + t * p;
        }
        return keys + updateResidue(s, p) + (t - inserts) * p;
    }

    private long streamInserts(int s, int p) {
        if (p <= 0 || s < 0 || s >= p) {
            throw new IllegalArgumentException("stream " + s + " of " + p);
        }
        return countResidue(keys, s, p);
    }

    /** How many of 0..n-1 are {@code == r (mod p)}. */
    private static long countResidue(long n, int r, int p) {
        return n > r ? (n - 1 - r) / p + 1 : 0;
    }

    /** The residue r of the update indexes j (mod p) whose key 5 j is in stream s. */
    private static int updateResidue(int s, int p) {
        if (p % 5 == 0) {
            throw new IllegalArgumentException(p + " streams: must not be a multiple of 5");
        }
        for (int r = 0; r < p; r++) {
            if ((5L * r) % p == s) {
                return r;
            }
        }
        throw new IllegalArgumentException("stream " + s + " of " + p);
    }

    /** Setats' changelog of the ingest (DEDUPLICATE): +I per key, -U and +U per update. */
    public long setatsChangelogRows() {
        return keys + 2 * updates;
    }

    /** The dt of key k (4 partitions). */
    public static String dt(long k) {
        return "2026120" + (1 + k % 4);
    }

    /** The rows' type as the planner's RowType: four nullable STRING columns, {@link #COLUMNS}. */
    public static final RowType ROW_TYPE =
            RowType.of(
                    new LogicalType[] {
                        new VarCharType(VarCharType.MAX_LENGTH), new VarCharType(VarCharType.MAX_LENGTH),
                        new VarCharType(VarCharType.MAX_LENGTH), new VarCharType(VarCharType.MAX_LENGTH)
                    },
                    COLUMNS);

    /**
     * {@link #row(long)} as the planner's RowData (INSERT, four {@code StringData} made from their
     * ASCII bytes, so no Java String is made or encoded per value).
     */
    public RowData rowData(long i) {
        long k = i < keys ? i : 5 * (i - keys);
        int v = i < keys ? 0 : 1;
        byte[] buf = new byte[MAX_VALUE_BYTES];
        byte[] id = new byte[decimalLength(k)];
        writeDecimal(k, id);
        buf[0] = (byte) (v == 0 ? 'n' : 'u');
        byte[] name = java.util.Arrays.copyOf(buf, 1 + writeBase36(nameNumber(k, v), buf, 1));
        System.arraycopy(ADDR, 0, buf, 0, ADDR.length);
        byte[] address = java.util.Arrays.copyOf(buf, ADDR.length + writeHex(addressNumber(k, v), buf, ADDR.length));
        return GenericRowData.of(
                StringData.fromBytes(id), StringData.fromBytes(DT_BYTES[(int) (k % 4)]),
                StringData.fromBytes(name), StringData.fromBytes(address));
    }

    /** {@link #dt(long)} of the 4 partitions as ASCII bytes (shared, never written). */
    private static final byte[][] DT_BYTES = {
        dt(0).getBytes(java.nio.charset.StandardCharsets.US_ASCII), dt(1).getBytes(java.nio.charset.StandardCharsets.US_ASCII),
        dt(2).getBytes(java.nio.charset.StandardCharsets.US_ASCII), dt(3).getBytes(java.nio.charset.StandardCharsets.US_ASCII)
    };

    private static int decimalLength(long x) {
        int len = 1;
        for (long t = x / 10; t > 0; t /= 10) {
            len++;
        }
        return len;
    }

    /** Long.toString(x) of {@code x >= 0} into buf, which is exactly as long as its digits. */
    private static void writeDecimal(long x, byte[] buf) {
        for (int i = buf.length - 1; i >= 0; i--) {
            buf[i] = (byte) ('0' + x % 10);
            x /= 10;
        }
    }

    /** Row i of the ingest (INSERT kind; the sinks upsert by primary key). */
    public Row row(long i) {
        if (i < keys) {
            return Row.ofKind(RowKind.INSERT, Long.toString(i), dt(i), name(i, 0), address(i, 0));
        }
        long k = 5 * (i - keys);
        return Row.ofKind(RowKind.INSERT, Long.toString(k), dt(k), name(k, 1), address(k, 1));
    }

    /** Whether key k is updated by the ingest. */
    public boolean updated(long k) {
        return k % 5 == 0 && k / 5 < updates;
    }

    /** The final value ({@link #value}) of key k, or null when k is not a key of the workload. */
    public String expected(long k) {
        if (k < 0 || k >= keys) {
            return null;
        }
        int v = updated(k) ? 1 : 0;
        return value(name(k, v), address(k, v));
    }

    /** The final value of the key ({@link #key}) or null when it is not a key of the workload. */
    public String expected(String key) {
        int bar = key.indexOf('|');
        if (bar < 0) {
            return null;
        }
        long k;
        try {
            k = Long.parseLong(key.substring(0, bar));
        } catch (NumberFormatException e) {
            return null;
        }
        if (!key.substring(bar + 1).equals(dt(k))) {
            return null;
        }
        return expected(k);
    }

    /** The fold's key of a row: id|dt. */
    public static String key(Object id, Object dt) {
        return id + "|" + dt;
    }

    /** The fold's value of a row: name|address. */
    public static String value(Object name, Object address) {
        return name + "|" + address;
    }

    /**
     * Writes the final value of key {@code k} ({@link #expected(long)}, {@code name|address}, ASCII)
     * into {@code buf} (at least {@link #MAX_VALUE_BYTES} long) without allocating; returns its
     * length in bytes. Requires {@code 0 <= k < keys()}.
     */
    public int expectedValueBytes(long k, byte[] buf) {
        int v = updated(k) ? 1 : 0;
        buf[0] = (byte) (v == 0 ? 'n' : 'u');
        int n = 1 + writeBase36(nameNumber(k, v), buf, 1);
        buf[n++] = '|';
        for (int i = 0; i < ADDR.length; i++) {
            buf[n++] = ADDR[i];
        }
        return n + writeHex(addressNumber(k, v), buf, n);
    }

    /** Upper bound of {@link #expectedValueBytes}'s length: n + 13 base-36 digits + | + addr- + 16 hex. */
    public static final int MAX_VALUE_BYTES = 1 + 13 + 1 + 5 + 16;

    private static final byte[] ADDR = {'a', 'd', 'd', 'r', '-'};
    private static final byte[] DIGITS = "0123456789abcdefghijklmnopqrstuvwxyz".getBytes(java.nio.charset.StandardCharsets.US_ASCII);

    /** Long.toString(x, 36) of {@code x >= 0} into buf at off; returns the digits written. */
    private static int writeBase36(long x, byte[] buf, int off) {
        int len = 1;
        for (long t = x / 36; t > 0; t /= 36) {
            len++;
        }
        for (int i = off + len - 1; i >= off; i--) {
            buf[i] = DIGITS[(int) (x % 36)];
            x /= 36;
        }
        return len;
    }

    /** Long.toHexString(x) (unsigned) into buf at off; returns the digits written. */
    private static int writeHex(long x, byte[] buf, int off) {
        int len = Math.max(1, (64 - Long.numberOfLeadingZeros(x) + 3) / 4);
        for (int i = off + len - 1; i >= off; i--) {
            buf[i] = DIGITS[(int) (x & 15)];
            x >>>= 4;
        }
        return len;
    }

    private static long nameNumber(long k, int version) {
        return (k * 31 + version) % 99991 + 10000;
    }

    private static long addressNumber(long k, int version) {
        return (k + version * 7) * 0x9E3779B97F4A7C15L;
    }

    private static String name(long k, int version) {
        return (version == 0 ? "n" : "u") + Long.toString(nameNumber(k, version), 36);
    }

    private static String address(long k, int version) {
        return "addr-" + Long.toHexString(addressNumber(k, version));
    }
}
