package io.setats.flink.testutils;

import org.junit.jupiter.api.extension.AfterAllCallback;
import org.junit.jupiter.api.extension.BeforeAllCallback;
import org.junit.jupiter.api.extension.ExtensionContext;

import java.io.File;
import java.io.IOException;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.Comparator;
import java.util.List;
import java.util.stream.Stream;

/**
 * A real PostgreSQL 15 (Debian's postgresql-15) with wal_level=logical in a temp dir on a free
 * port, as the postgres user when the tests run as root, and a database "test" (JUnit 5 extension).
 */
public final class PostgresProcess implements BeforeAllCallback, AfterAllCallback {
    private static final String BIN = System.getProperty("pg.bin", "/usr/lib/postgresql/15/bin");
    private Path dir;
    private int port;
    private boolean root;

    @Override
    public void beforeAll(ExtensionContext context) throws Exception {
        if (dir != null) {
            return;
        }
        dir = Files.createTempDirectory("setats-pg-");
        dir.toFile().setReadable(true, false);
        dir.toFile().setExecutable(true, false);
        root = "root".equals(System.getProperty("user.name"));
        if (root) {
            run("chown", "postgres", dir.toString());
        }
        try (ServerSocket s = new ServerSocket(0)) {
            port = s.getLocalPort();
        }
        runAs(BIN + "/initdb", "-D", dir + "/data", "-U", "postgres", "--auth=trust", "-E", "UTF8", "--locale=C.UTF-8");
        runAs(BIN + "/pg_ctl", "-D", dir + "/data", "-l", dir + "/server.log", "-w", "-t", "60", "-o",
                "-c listen_addresses=127.0.0.1 -p " + port + " -k " + dir + " -c wal_level=logical -c fsync=off", "start");
        sql("postgres", "CREATE DATABASE test");
    }

    @Override
    public void afterAll(ExtensionContext context) throws Exception {
        if (dir == null) {
            return;
        }
        try {
            runAs(BIN + "/pg_ctl", "-D", dir + "/data", "-m", "immediate", "-w", "stop");
        } finally {
            try (Stream<Path> s = Files.walk(dir)) {
                s.sorted(Comparator.reverseOrder()).map(Path::toFile).forEach(File::delete);
            }
            dir = null;
        }
    }

    /** postgres:// URL of database test. */
    public String url() {
        return "postgres://postgres@127.0.0.1:" + port + "/test?sslmode=disable";
    }

    /** Runs statements with psql on database db (one transaction per call). */
    public String sql(String db, String sql) throws IOException, InterruptedException {
        return run(BIN + "/psql", "-X", "-q", "-At", "-v", "ON_ERROR_STOP=1", "-h", "127.0.0.1", "-p", String.valueOf(port),
                "-U", "postgres", "-d", db, "-c", sql);
    }

    public String sql(String sql) throws IOException, InterruptedException {
        return sql("test", sql);
    }

    /** Runs pgbench (Debian's, next to psql) with args on database test; returns its output. */
    public String pgbench(String... args) throws IOException, InterruptedException {
        List<String> argv = new ArrayList<>(Arrays.asList(BIN + "/pgbench", "-h", "127.0.0.1", "-p", String.valueOf(port), "-U", "postgres"));
        argv.addAll(Arrays.asList(args));
        argv.add("test");
        return run(argv.toArray(new String[0]));
    }

        private String runAs(String... cmd) throws IOException, InterruptedException {
        List<String> argv = new ArrayList<>();
        if (root) {
            argv.addAll(Arrays.asList("runuser", "-u", "postgres", "--"));
        }
        argv.addAll(Arrays.asList(cmd));
        return run(argv.toArray(new String[0]));
    }

    private static String run(String... cmd) throws IOException, InterruptedException {
        Process p = new ProcessBuilder(cmd).redirectErrorStream(true).start();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (p.waitFor() != 0) {
            throw new IOException(String.join(" ", cmd) + " failed:\n" + out);
        }
        return out;
    }
}
