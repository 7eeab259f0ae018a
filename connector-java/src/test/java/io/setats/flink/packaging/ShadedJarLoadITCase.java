package io.setats.flink.packaging;

import io.setats.flink.client.GatewayClient;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.BucketOffsets;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Collectors;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Issue 12, item 5: the shaded jar under sustained load with unshaded Netty 4.1.76 and the Hadoop 3
 * client jars beside it (target/foreign-jars) -- the class path on which 19 of 22 runs of the sink
 * hung before the Netty version resource was relocated. A forked JVM runs {@link
 * ShadedJarLoadJob} with Flink, the shaded jar and the foreign jars only: a bulk write of {@code
 * setats.load.bulk-rows} rows (default 1,000,000) and a stream of {@code setats.load.rate} rows/s
 * (default 10,000) for {@code setats.load.seconds} (default 60). It must end with exit 0 and
 * every row committed. A JVM still running after {@code setats.load.max-seconds} (default 900)
 * is a hang: its thread dump goes into the failure.
 */
class ShadedJarLoadITCase {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    /** Jars of the test class path that the shaded jar bundles (relocated): left out of the fork. */
    private static final List<String> BUNDLED =
            Arrays.asList(
                    "/org/apache/arrow/", "/io/grpc/", "/io/netty/", "/io/perfmark/", "/com/google/protobuf/",
                    "/com/google/guava/", "/com/google/flatbuffers/", "/com/google/api/grpc/", "/com/google/code/gson/");

    @Test
    void shadedSinkCompletesWithForeignNettyAndHadoopBeside() throws Exception {
        long bulk = Long.getLong("setats.load.bulk-rows", 1_000_000L);
        long rate = Long.getLong("setats.load.rate", 10_000L);
        long seconds = Long.getLong("setats.load.seconds", 60L);
        long maxSeconds = Long.getLong("setats.load.max-seconds", 900L);

        Path shaded = Paths.get(System.getProperty("setats.shaded.jar", "target/setats-flink-connector-0.1.0.jar"));
        Path foreignDir = Paths.get(System.getProperty("setats.foreign.jars", "target/foreign-jars"));
        assertThat(shaded).exists();
        List<String> cp = new ArrayList<>();
        cp.add(shaded.toAbsolutePath().toString());
        try (Stream<Path> s = Files.list(foreignDir)) {
            List<String> foreign = s.map(p -> p.toAbsolutePath().toString()).sorted().collect(Collectors.toList());
            assertThat(foreign).anyMatch(p -> p.contains("netty-buffer-4.1.76")).anyMatch(p -> p.contains("hadoop-client-runtime-3"));
            cp.addAll(foreign);
        }
        for (String e : System.getProperty("java.class.path").split(File.pathSeparator)) {
            String n = e.replace(File.separatorChar, '/');
            if (n.endsWith("/target/classes") || BUNDLED.stream().anyMatch(n::contains)) {
                continue; // the connector itself and what it bundles come from the shaded jar only
            }
            cp.add(e);
        }

        Path dir = Files.createTempDirectory("setats-load-");
        Path out = dir.resolve("job.log");
        List<String> cmd = new ArrayList<>();
        cmd.add(Paths.get(System.getProperty("java.home"), "bin", "java").toString());
        cmd.addAll(
                Arrays.asList(
                        "--add-opens=java.base/java.nio=ALL-UNNAMED",
                        "--add-opens=java.base/java.lang=ALL-UNNAMED",
                        "--add-opens=java.base/java.util=ALL-UNNAMED",
                        "-Xmx1g",
                        "-cp",
                        String.join(File.pathSeparator, cp),
                        ShadedJarLoadJob.class.getName(),
                        GATEWAY.managerUrl(),
                        GATEWAY.warehouse().toString(),
                        "load",
                        Long.toString(bulk),
                        Long.toString(rate),
                        Long.toString(seconds)));
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).redirectOutput(out.toFile()).start();
        boolean ended = p.waitFor(maxSeconds, TimeUnit.SECONDS);
        if (!ended) {
            String dump = jstack(p.pid());
            p.destroyForcibly().waitFor(30, TimeUnit.SECONDS);
            throw new AssertionError(
                    "the job JVM still ran after " + maxSeconds + " s (a hang):\n" + tail(out) + "\n" + dump);
        }
        assertThat(p.exitValue()).as(tail(out)).isEqualTo(0);
        try (GatewayClient c = GATEWAY.client()) {
            long rows = 0;
            for (BucketOffsets b : c.listBuckets("load", "load").getBucketsList()) {
                rows += b.getEndOffset();
            }
            // Distinct keys, one +I each; at least once may replay batches after a failover, which a
            // clean run does not have (the job runs without restarts: any failure is exit 1).
            assertThat(rows).as(tail(out)).isEqualTo(bulk + rate * seconds);
        }
        System.out.println(tail(out));
    }

    private static String tail(Path log) throws IOException {
        List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
        return String.join("\n", lines.subList(Math.max(0, lines.size() - 60), lines.size()));
    }

    private static String jstack(long pid) {
        try {
            Process j =
                    new ProcessBuilder(Paths.get(System.getProperty("java.home"), "bin", "jstack").toString(), Long.toString(pid))
                            .redirectErrorStream(true)
                            .start();
            String s = new String(j.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
            j.waitFor(30, TimeUnit.SECONDS);
            return s;
        } catch (IOException | InterruptedException e) {
            return "(no jstack: " + e + ")";
        }
    }
}
