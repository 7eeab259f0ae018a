package io.setats.flink;

import io.setats.flink.client.ConnectionOptions;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.client.PutStream;
import io.setats.flink.client.SetatsGatewayException;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.flink.utils.RowDataArrowWriter;
import io.setats.proto.v1.BucketOffsets;
import io.setats.proto.v1.Column;
import io.setats.proto.v1.TableSpec;
import io.setats.proto.v1.WriteCommand;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.table.api.TableResult;
import org.apache.flink.table.data.GenericRowData;
import org.apache.flink.table.data.StringData;
import org.apache.flink.table.types.logical.BigIntType;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.logical.VarCharType;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.util.ExceptionUtils;

import org.junit.jupiter.api.MethodOrderer;
import org.junit.jupiter.api.Order;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.TestMethodOrder;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ExecutionException;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.TimeoutException;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.fail;

/**
 * A sink job of a user holding only {@code read} (SPEC section 14): the gateway refuses its DoPut
 * with PERMISSION_DENIED naming user and table, and the job must then end for good -- its writer
 * task cancelled, its slots free, no writer thread left behind. Arrow Java's {@code
 * PutStream.putNext} waits for the gRPC call to become ready in a busy loop that ignores
 * interrupts and ends only when the put listener reports itself cancelled; a refused call is never
 * ready again, so a writer caught there spun forever and held its slot.
 *
 * <p>The MiniCluster has 2 slots and Flink's task cancellation watchdog is off
 * ({@code task.cancellation.timeout = 0}), so a writer that ignores cancellation keeps its slot
 * instead of having its TaskManager killed: the refused job then never reaches FAILED (its await
 * times out), and the second job, which needs both slots, never gets them.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SinkRefusalITCase {

    private static final Path USERS = usersFile();

    @RegisterExtension
    static final SetatsGatewayProcess GATEWAY =
            new SetatsGatewayProcess("--users-file", USERS.toString());

    private static final int SLOTS = 2;

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(SLOTS)
                            .setConfiguration(noCancellationWatchdog())
                            .build());

    /** How long a refused job or stream may take to end; a writer that spins never ends. */
    private static final long END_BOUND_S = 90;

    private static final RowType ROW =
            RowType.of(
                    new LogicalType[] {new BigIntType(false), new VarCharType(VarCharType.MAX_LENGTH)},
                    new String[] {"id", "v"});

    private static Configuration noCancellationWatchdog() {
        return Configuration.fromMap(java.util.Collections.singletonMap("task.cancellation.timeout", "0"));
    }

    /** etl may do everything; reader may only read database testdb. */
    private static Path usersFile() {
        try {
            Path d = Files.createTempDirectory("setats-refusal-");
            String users = "users:\n"
                    + "  - name: etl\n    password: \"" + hash("etl-password") + "\"\n"
                    + "    grants: [{privileges: [admin]}]\n"
                    + "  - name: reader\n    password: \"" + hash("reader-password") + "\"\n"
                    + "    grants: [{database: testdb, privileges: [read]}]\n";
            Path f = d.resolve("users.yaml");
            Files.write(f, users.getBytes(StandardCharsets.UTF_8));
            return f;
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException("users file: " + e, e);
        }
    }

    private static String hash(String password) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(SetatsGatewayProcess.binary().toString(), "user", "hash-password")
                .redirectErrorStream(true).start();
        p.getOutputStream().write((password + "\n").getBytes(StandardCharsets.UTF_8));
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8).trim();
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException("setats user hash-password: " + out);
        }
        return out;
    }

    private static GatewayClient client(String user, String password) {
        return GatewayClient.connect(
                ConnectionOptions.builder().managerUrl(GATEWAY.managerUrl()).credentials(user, password).build(),
                GATEWAY.catalogContext());
    }

    /** testdb.table (id BIGINT, v STRING, key id), created by etl. */
    private static void createTable(String table, int buckets) {
        TableSpec.Builder spec = TableSpec.newBuilder().setDatabase("testdb").setTable(table)
                .addPrimaryKey("id").setBucketCount(buckets)
                .addColumns(Column.newBuilder().setName("id").setType("BIGINT NOT NULL"))
                .addColumns(Column.newBuilder().setName("v").setType("STRING"));
        try (GatewayClient c = client("etl", "etl-password")) {
            c.createTable(spec.build(), true, true);
        }
    }

    private static String sinkDdl(String table, String user, String password) {
        return "CREATE TABLE `" + table + "` (`id` BIGINT, `v` STRING, PRIMARY KEY (`id`) NOT ENFORCED) WITH (\n"
                + "  'connector' = 'setats',\n"
                + "  'manager-url' = '" + GATEWAY.managerUrl() + "',\n"
                + "  'username' = '" + user + "', 'password' = '" + password + "',\n"
                + "  'warehouse' = '" + GATEWAY.warehouse() + "',\n"
                + "  'catalog-type' = 'hadoop', 'catalog-name' = 'setats',\n"
                + "  'catalog-database' = 'testdb', 'catalog-table' = '" + table + "',\n"
                // Small batches: the writers are inside putNext as often as possible when the
                // refusal arrives.
                + "  'setats.sink.buffer-rows' = '1')";
    }

    /**
     * A table environment (parallelism SLOTS, no restarts) with a datagen table {@code src}
     * (options srcOptions) and a setats sink table of user into testdb.table, which etl creates.
     */
    private static TableEnvironment sinkJob(String table, String user, String password, String srcOptions) {
        createTable(table, SLOTS);
        TableEnvironment env = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
        env.getConfig().set("parallelism.default", Integer.toString(SLOTS));
        env.getConfig().set("restart-strategy.type", "none");
        env.executeSql("CREATE TABLE src (`id` BIGINT, `v` STRING) WITH ('connector' = 'datagen',"
                + " 'fields.v.length' = '8', " + srcOptions + ")");
        env.executeSql(sinkDdl(table, user, password));
        return env;
    }

    /** Threads of this JVM that are inside a sink writer or a PutStream, with their stacks. */
    private static List<String> writerThreads() {
        List<String> out = new ArrayList<>();
        for (Map.Entry<Thread, StackTraceElement[]> e : Thread.getAllStackTraces().entrySet()) {
            StringBuilder stack = new StringBuilder();
            boolean writer = false;
            for (StackTraceElement f : e.getValue()) {
                String cls = f.getClassName();
                writer |= cls.startsWith("io.setats.flink.client.PutStream")
                        || cls.startsWith("io.setats.flink.sink.writer.")
                        || f.getMethodName().equals("waitUntilStreamReady");
                stack.append("\n    at ").append(f);
            }
            if (writer && e.getKey().isAlive()) {
                out.add(e.getKey().getName() + " (" + e.getKey().getState() + ")" + stack);
            }
        }
        return out;
    }

    /** Waits (at most END_BOUND_S) until no writer thread is left, else fails with their stacks. */
    private static void assertNoWriterThreadLeft(String after) throws InterruptedException {
        long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(END_BOUND_S);
        List<String> left = writerThreads();
        while (!left.isEmpty() && System.nanoTime() < deadline) {
            Thread.sleep(100);
            left = writerThreads();
        }
        if (!left.isEmpty()) {
            fail("writer threads still alive " + END_BOUND_S + " s after " + after + ":\n" + String.join("\n", left));
        }
    }

    /**
     * Waits (at most END_BOUND_S) for a job to end; returns its failure (null when it finished).
     * Fails the test with the writer threads' stacks when the job is still running by then.
     */
    private static Throwable awaitJob(TableResult job, String stuck) throws InterruptedException {
        try {
            job.await(END_BOUND_S, TimeUnit.SECONDS);
            return null;
        } catch (TimeoutException e) {
            fail(stuck + " within " + END_BOUND_S + " s; writer threads:\n" + String.join("\n", writerThreads()));
            return e;
        } catch (ExecutionException e) {
            return e;
        }
    }

    /**
     * The reader's sink job (an endless source, 2 writers) fails with PERMISSION_DENIED naming
     * user and table, ends (every task cancelled), leaves no writer thread, and a second job that
     * needs both slots runs to completion afterwards.
     */
    @Test
    @Order(1)
    void readerSinkJobFailsAndFreesItsSlots() throws Exception {
        TableEnvironment env = sinkJob("refused", "reader", "reader-password",
                "'rows-per-second' = '100000', 'fields.id.min' = '1', 'fields.id.max' = '1000000'");
        Throwable refused = awaitJob(env.executeSql("INSERT INTO `refused` SELECT * FROM src"),
                "the refused sink job did not end (a writer ignores cancellation)");
        assertThat(refused).as("the reader's sink job must fail").isNotNull();
        assertThat(ExceptionUtils.stringifyException(refused))
                .contains("PERMISSION_DENIED", "user \"reader\"", "testdb.refused", "write");
        assertNoWriterThreadLeft("the refused job ended");

        // Both slots are free again: a job of parallelism 2 (etl) runs to completion.
        TableEnvironment env2 = sinkJob("accepted", "etl", "etl-password",
                "'fields.id.kind' = 'sequence', 'fields.id.start' = '1', 'fields.id.end' = '500'");
        assertThat(awaitJob(env2.executeSql("INSERT INTO `accepted` SELECT * FROM src"),
                "the second job did not finish (its slots are still taken)")).isNull();
        try (GatewayClient c = client("etl", "etl-password")) {
            long rows = 0;
            for (BucketOffsets b : c.listBuckets("testdb", "accepted").getBucketsList()) {
                rows += b.getEndOffset() - b.getStartOffset();
            }
            assertThat(rows).isEqualTo(500);
        }
        assertNoWriterThreadLeft("the second job finished");
    }

    /**
     * PutStream itself, many times: a reader's DoPut sending one-row batches as fast as it can
     * until the refusal arrives. Each stream must fail with PERMISSION_DENIED naming the table
     * (from putNext, awaitAcks or close), and never hang in putNext.
     */
    @Test
    @Order(2)
    void refusedPutStreamsNeverHang() throws Exception {
        createTable("refused_streams", 1);
        ExecutorService pool = Executors.newSingleThreadExecutor(r -> {
            Thread t = new Thread(r, "setats-refused-put");
            t.setDaemon(true);
            return t;
        });
        try (GatewayClient c = client("reader", "reader-password")) {
            Future<Integer> f = pool.submit(() -> {
                int refusals = 0;
                for (int i = 0; i < 300; i++) {
                    refusals += refusedStream(c, i) ? 1 : 0;
                }
                return refusals;
            });
            try {
                assertThat(f.get(END_BOUND_S, TimeUnit.SECONDS)).isEqualTo(300);
            } catch (TimeoutException e) {
                fail("a refused PutStream hangs:\n" + String.join("\n", writerThreads()));
            }
        } finally {
            pool.shutdownNow();
        }
    }

    /** One refused stream: true when it failed with PERMISSION_DENIED naming user and table. */
    private static boolean refusedStream(GatewayClient c, int n) throws Exception {
        WriteCommand cmd = WriteCommand.newBuilder().setDatabase("testdb").setTable("refused_streams").build();
        try (RowDataArrowWriter w = new RowDataArrowWriter(ROW, c.allocator(), true)) {
            PutStream ps = c.startPut(cmd, w.root(), 4, null);
            try {
                for (int i = 0; i < 100_000; i++) {
                    w.write(GenericRowData.of((long) i, StringData.fromString("r" + n)));
                    w.finish();
                    ps.putNext(1);
                    w.reset();
                }
                ps.awaitAcks();
            } catch (SetatsGatewayException e) {
                return e.getMessage().contains("PERMISSION_DENIED")
                        && e.getMessage().contains("user \"reader\"")
                        && e.getMessage().contains("testdb.refused_streams");
            } finally {
                ps.close();
            }
        }
        return false;
    }
}
