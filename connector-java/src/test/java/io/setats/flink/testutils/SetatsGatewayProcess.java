package io.setats.flink.testutils;

import io.setats.flink.client.GatewayClient;
import io.setats.proto.v1.CatalogContext;

import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.JsonNode;
import org.apache.flink.shaded.jackson2.com.fasterxml.jackson.databind.ObjectMapper;

import org.apache.flink.connector.testframe.TestResource;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.io.File;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.stream.Stream;

/**
 * SetatsGatewayProcess runs a real Setats gateway ({@code setats serve}) as a child process for a
 * test class: a fresh temp warehouse, Flight/admin on free loopback ports, embedded NATS on a free
 * port, and the bound addresses read from the {@code --ready-file}.
 *
 * <p>Use as a JUnit 5 extension:
 *
 * <pre>{@code
 * @RegisterExtension
 * static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();
 * ... GATEWAY.managerUrl(), GATEWAY.warehouse(), GATEWAY.client()
 * }</pre>
 *
 * as the external system of Flink's connector testing framework ({@code @TestExternalSystem},
 * {@link TestResource}), or directly with {@link #start()} / {@link #close()}. When it stops as an
 * extension or a test resource it fails the test if a {@link GatewayClient} of this JVM leaked
 * Arrow memory meanwhile ({@link GatewayClient#drainLeaks()}): leaks fail tests, they are not only
 * logged. The binary is the system property {@code
 * setats.gateway.binary} (Maven sets it to {@code ../bin/setats}); when it is missing the test
 * fails with a message saying how to build it. The gateway's output goes to {@code
 * <tmp>/gateway.log}, whose tail is included in start-up errors.
 */
public final class SetatsGatewayProcess
        implements BeforeAllCallback, AfterAllCallback, TestResource, AutoCloseable {

    /** System property naming the gateway binary. */
    public static final String BINARY_PROPERTY = "setats.gateway.binary";

    private static final long START_TIMEOUT_MS = 60_000;

    private final List<String> extraArgs;
    private Path dir;
    private Path warehouse;
    private Process process;
    private String flightAddr;
    private String adminAddr;
    private String natsUrl;

    /** A gateway with default flags. */
    public SetatsGatewayProcess() {
        this(new String[0]);
    }

    /** A gateway with extra {@code setats serve} flags, e.g. {@code --default-bucket-count 2}. */
    public SetatsGatewayProcess(String... extraArgs) {
        this.extraArgs = Arrays.asList(extraArgs);
    }

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        start();
    }

    @Override
    public void afterAll(ExtensionContext context) {
        close();
        assertNoArrowLeaks();
    }

    @Override
    public void startUp() throws Exception {
        start();
    }

    @Override
    public void tearDown() {
        close();
        assertNoArrowLeaks();
    }

    /**
     * Fails with an AssertionError naming every Arrow memory leak a {@link GatewayClient} of this
     * JVM found when it closed since the last check (the allocator's memory was not back to 0).
     */
    public static void assertNoArrowLeaks() {
        List<String> leaks = GatewayClient.drainLeaks();
        if (!leaks.isEmpty()) {
            throw new AssertionError("Arrow memory leaked by " + leaks.size() + " gateway client(s):\n  " + String.join("\n  ", leaks));
        }
    }

    /** The gateway binary: system property {@value #BINARY_PROPERTY}, else ../bin/setats. */
    public static Path binary() {
        String p = System.getProperty(BINARY_PROPERTY, "../bin/setats");
        return Paths.get(p).toAbsolutePath().normalize();
    }

    /** Starts the gateway and waits until it has written its ready file. */
    public synchronized void start() throws IOException, InterruptedException {
        if (process != null) {
            return;
        }
        launch("127.0.0.1:0");
    }

    /**
     * Kills the gateway with SIGKILL (no drain, no clean close: a crash) and starts it again on
     * the same Flight address and warehouse, so that clients reconnect to the same manager-url.
     */
    public synchronized void killAndRestart() throws IOException, InterruptedException {
        if (process == null) {
            throw new IllegalStateException("the gateway is not running");
        }
        process.destroyForcibly().waitFor(10, java.util.concurrent.TimeUnit.SECONDS);
        process = null;
        long deadline = System.currentTimeMillis() + START_TIMEOUT_MS;
        while (true) {
            try {
                launch(flightAddr);
                return;
            } catch (IllegalStateException e) {
                // The port may still be held for a moment.
                if (System.currentTimeMillis() > deadline) {
                    throw e;
                }
                Thread.sleep(200);
            }
        }
    }

    private void launch(String flightListen) throws IOException, InterruptedException {
        Path bin = binary();
        if (!Files.isExecutable(bin)) {
            throw new IllegalStateException(
                    "Setats gateway binary not found or not executable at "
                            + bin
                            + " (system property "
                            + BINARY_PROPERTY
                            + "). Build it from the repository root with: "
                            + "go build -o bin/setats ./gateway/cmd/setats");
        }
        if (dir == null) {
            dir = Files.createTempDirectory("setats-gateway-");
            warehouse = dir.resolve("warehouse");
            Files.createDirectories(warehouse);
        }
        Path ready = dir.resolve("ready.json");
        Files.deleteIfExists(ready);
        Path log = dir.resolve("gateway.log");
        List<String> cmd = new ArrayList<>();
        cmd.add(bin.toString());
        cmd.add("serve");
        cmd.addAll(
                Arrays.asList(
                        "--warehouse", warehouse.toString(),
                        "--flight-addr", flightListen,
                        "--admin-addr", "127.0.0.1:0",
                        "--nats-listen", "127.0.0.1:-1",
                        "--ready-file", ready.toString()));
        cmd.addAll(extraArgs);
        ProcessBuilder pb = new ProcessBuilder(cmd).redirectErrorStream(true);
        pb.redirectOutput(ProcessBuilder.Redirect.appendTo(log.toFile()));
        process = pb.start();

        long deadline = System.currentTimeMillis() + START_TIMEOUT_MS;
        ObjectMapper mapper = new ObjectMapper();
        while (true) {
            if (Files.exists(ready)) {
                try {
                    JsonNode node = mapper.readTree(ready.toFile());
                    if (node != null && node.hasNonNull("flight_addr")) {
                        flightAddr = node.get("flight_addr").asText();
                        adminAddr = node.path("admin_addr").asText(null);
                        natsUrl = node.path("nats_url").asText(null);
                        return;
                    }
                } catch (IOException partial) {
                    // Being written; try again.
                }
            }
            if (!process.isAlive()) {
                String tail = tail(log);
                process = null;
                throw new IllegalStateException(
                        "setats serve exited with " + exitCode() + " before it was ready:\n" + tail);
            }
            if (System.currentTimeMillis() > deadline) {
                String tail = tail(log);
                close();
                throw new IllegalStateException(
                        "setats serve was not ready after " + START_TIMEOUT_MS + " ms:\n" + tail);
            }
            Thread.sleep(50);
        }
    }

    private int exitCode() {
        try {
            return process.exitValue();
        } catch (RuntimeException e) {
            return -1;
        }
    }

    private static String tail(Path log) {
        try {
            List<String> lines = Files.readAllLines(log, StandardCharsets.UTF_8);
            return String.join("\n", lines.subList(Math.max(0, lines.size() - 40), lines.size()));
        } catch (IOException e) {
            return "(no log: " + e + ")";
        }
    }

    /** The gateway's process id (benchmarks read its CPU time from /proc). */
    public synchronized long pid() {
        return process.pid();
    }

    /** The Flight address as written in the ready file, e.g. {@code 127.0.0.1:40123}. */
    public String flightAddr() {
        return flightAddr;
    }

    /** {@code grpc://<flight addr>}. */
    public String managerUrl() {
        return "grpc://" + flightAddr;
    }

    /** The warehouse directory (a plain absolute path). */
    public Path warehouse() {
        return warehouse;
    }

    /** The warehouse as {@code file:///abs/path}. */
    public String warehouseUri() {
        return warehouse.toUri().toString();
    }

    public String adminAddr() {
        return adminAddr;
    }

    /**
     * The value of a Prometheus series of this gateway with the single label {@code
     * table="<database>.<table>"} (0 when absent).
     */
    public double tableMetric(String name, String database, String table) throws Exception {
        java.net.http.HttpResponse<String> res =
                java.net.http.HttpClient.newHttpClient()
                        .send(
                                java.net.http.HttpRequest.newBuilder(
                                                java.net.URI.create("http://" + adminAddr + "/metrics"))
                                        .build(),
                                java.net.http.HttpResponse.BodyHandlers.ofString());
        java.util.regex.Matcher m =
                java.util.regex.Pattern.compile(
                                "(?m)^"
                                        + java.util.regex.Pattern.quote(name)
                                        + "\\{table=\""
                                        + java.util.regex.Pattern.quote(database + "." + table)
                                        + "\"\\} ([0-9.e+]+)$")
                        .matcher(res.body());
        return m.find() ? Double.parseDouble(m.group(1)) : 0;
    }

    public String natsUrl() {
        return natsUrl;
    }

    /** The gateway's combined stdout/stderr. */
    public Path logFile() {
        return dir.resolve("gateway.log");
    }

    /** A hadoop CatalogContext for this gateway's warehouse. */
    public CatalogContext catalogContext() {
        return CatalogContext.newBuilder()
                .setWarehouse(warehouse.toString())
                .setCatalogType("hadoop")
                .setCatalogName("setats")
                .build();
    }

    /** A new client of this gateway (caller closes). */
    public GatewayClient client() {
        return GatewayClient.connect(managerUrl(), catalogContext());
    }

    /**
     * Stops the gateway (SIGTERM), runs {@code whileStopped} with the warehouse directory, and
     * starts it again on the same warehouse (new ports: read {@link #managerUrl()} again).
     */
    public synchronized void restart(java.util.function.Consumer<Path> whileStopped) throws IOException, InterruptedException {
        stopProcess();
        whileStopped.accept(warehouse);
        start();
    }

    /**
     * Freezes the gateway process (SIGSTOP): its sockets stay open and the kernel still accepts
     * bytes, but nothing is read or answered -- a gateway that hangs. {@link #resume()} undoes it.
     */
    public synchronized void suspend() throws IOException, InterruptedException {
        signal("STOP");
    }

    /** Lets a {@link #suspend() suspended} gateway run again (SIGCONT). */
    public synchronized void resume() throws IOException, InterruptedException {
        signal("CONT");
    }

    private void signal(String sig) throws IOException, InterruptedException {
        if (process == null) {
            throw new IllegalStateException("gateway not running");
        }
        Process kill =
                new ProcessBuilder("kill", "-" + sig, Long.toString(process.pid()))
                        .redirectErrorStream(true)
                        .start();
        if (!kill.waitFor(10, TimeUnit.SECONDS) || kill.exitValue() != 0) {
            throw new IOException("kill -" + sig + " " + process.pid() + " failed");
        }
    }

    /** Stops the gateway (SIGTERM, then SIGKILL after 10 s) and deletes its temp directory. */
    @Override
    public synchronized void close() {
        stopProcess();
        if (dir != null) {
            try (Stream<Path> s = Files.walk(dir)) {
                s.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
            } catch (IOException ignored) {
                // Best effort.
            }
            dir = null;
        }
    }

    private void stopProcess() {
        if (process != null) {
            process.destroy();
            try {
                if (!process.waitFor(10, TimeUnit.SECONDS)) {
                    process.destroyForcibly().waitFor(10, TimeUnit.SECONDS);
                }
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
            }
            process = null;
        }
    }
}
