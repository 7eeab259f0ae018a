package io.setats.flink;

import io.setats.flink.client.ConnectionOptions;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.client.SetatsGatewayException;
import io.setats.flink.testutils.PostgresProcess;
import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.BucketOffsets;
import io.setats.proto.v1.ChannelInfo;
import io.setats.proto.v1.CreateChannelRequest;
import io.setats.proto.v1.CreateGroupRequest;
import io.setats.proto.v1.Empty;
import io.setats.proto.v1.GroupInfo;
import io.setats.proto.v1.ProgressResponse;
import io.setats.proto.v1.ProgressRow;
import io.setats.proto.v1.SlotRequest;

import org.apache.flink.runtime.testutils.MiniClusterResourceConfiguration;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;
import org.apache.flink.test.junit5.MiniClusterExtension;
import org.apache.flink.types.Row;
import org.apache.flink.util.CloseableIterator;
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
import java.nio.file.Paths;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import java.util.concurrent.TimeUnit;
import java.util.regex.Matcher;
import java.util.regex.Pattern;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * The seeds' write and CDC jobs against a gateway with a users file and TLS (SPEC section 14):
 * {@code grpc+tls://} with {@code username}, {@code password} and {@code tls.ca-cert}; a user with
 * only the read privilege can run the CDC job, and its sink job fails with PERMISSION_DENIED
 * naming the table. The seed's {@code dts} SQL job reads a subscription channel over TLS with a
 * gateway user holding read on the channel plus the consumer group's credentials; a gateway user
 * without the channel grant is refused. The CA and the server certificate are made with the
 * openssl CLI (Debian package openssl), the password hashes with {@code setats user
 * hash-password}.
 */
@TestMethodOrder(MethodOrderer.OrderAnnotation.class)
class SecurityITCase {

    private static final Path DIR = setUp();

    @RegisterExtension static final PostgresProcess PG = new PostgresProcess();

    @RegisterExtension
    static final SetatsGatewayProcess GATEWAY =
            new SetatsGatewayProcess(
                    "--users-file", DIR.resolve("users.yaml").toString(),
                    "--tls-cert", DIR.resolve("server.pem").toString(),
                    "--tls-key", DIR.resolve("server-key.pem").toString());

    @RegisterExtension
    static final MiniClusterExtension MINI_CLUSTER =
            new MiniClusterExtension(
                    new MiniClusterResourceConfiguration.Builder()
                            .setNumberTaskManagers(1)
                            .setNumberSlotsPerTaskManager(4)
                            .build());

    private static final int ROWS = 8;

    /** Certificates and users file in a temporary directory. */
    private static Path setUp() {
        try {
            Path d = Files.createTempDirectory("setats-security-");
            String[] ec = {"-newkey", "ec", "-pkeyopt", "ec_paramgen_curve:P-256", "-nodes"};
            run(d, concat(new String[] {"openssl", "req", "-x509"}, ec,
                    new String[] {"-days", "1", "-subj", "/CN=setats test CA", "-keyout", "ca-key.pem", "-out", "ca.pem"}));
            run(d, concat(new String[] {"openssl", "req"}, ec,
                    new String[] {"-subj", "/CN=localhost", "-keyout", "server-key.pem", "-out", "server.csr"}));
            Files.write(d.resolve("ext.cnf"),
                    "subjectAltName=IP:127.0.0.1,DNS:localhost\nextendedKeyUsage=serverAuth\n".getBytes(StandardCharsets.UTF_8));
            run(d, "openssl", "x509", "-req", "-in", "server.csr", "-CA", "ca.pem", "-CAkey", "ca-key.pem",
                    "-CAcreateserial", "-days", "1", "-extfile", "ext.cnf", "-out", "server.pem");
            String users = "users:\n"
                    + "  - name: etl\n    password: \"" + hash("etl-password") + "\"\n"
                    + "    grants: [{database: \"*\", table: \"*\", privileges: [admin]}]\n"
                    + "  - name: reader\n    password: \"" + hash("reader-password") + "\"\n"
                    + "    grants: [{database: testdb, privileges: [read]}]\n"
                    + "  - name: consumer\n    password: \"" + hash("consumer-password") + "\"\n"
                    + "    grants: [{channel: shop, privileges: [read]}]\n";
            Files.write(d.resolve("users.yaml"), users.getBytes(StandardCharsets.UTF_8));
            return d;
        } catch (IOException | InterruptedException e) {
            throw new IllegalStateException("security test set-up (needs the openssl CLI): " + e, e);
        }
    }

    private static String[] concat(String[]... parts) {
        List<String> out = new ArrayList<>();
        for (String[] p : parts) {
            out.addAll(Arrays.asList(p));
        }
        return out.toArray(new String[0]);
    }

    private static String run(Path dir, String... cmd) throws IOException, InterruptedException {
        return runWithInput(dir, null, cmd);
    }

    private static String runWithInput(Path dir, String stdin, String... cmd) throws IOException, InterruptedException {
        ProcessBuilder pb = new ProcessBuilder(cmd).directory(dir.toFile()).redirectErrorStream(true);
        Process p = pb.start();
        if (stdin != null) {
            p.getOutputStream().write(stdin.getBytes(StandardCharsets.UTF_8));
        }
        p.getOutputStream().close();
        String out = new String(p.getInputStream().readAllBytes(), StandardCharsets.UTF_8);
        if (!p.waitFor(60, TimeUnit.SECONDS) || p.exitValue() != 0) {
            throw new IOException(String.join(" ", cmd) + " failed: " + out);
        }
        return out;
    }

    private static String hash(String password) throws IOException, InterruptedException {
        String h = runWithInput(Paths.get(".").toAbsolutePath(), password + "\n",
                SetatsGatewayProcess.binary().toString(), "user", "hash-password").trim();
        assertThat(h).startsWith("$2a$").doesNotContain(password);
        return h;
    }

    private static String tlsUrl() {
        return "grpc+tls://" + GATEWAY.flightAddr();
    }

    private static String ca() {
        return DIR.resolve("ca.pem").toString();
    }

    /** The connection options of the WITH clause: grpc+tls://, user, password, CA. */
    private static String connection(String user, String password) {
        return "'manager-url' = '" + tlsUrl() + "',\n"
                + "  'username' = '" + user + "',\n"
                + "  'password' = '" + password + "',\n"
                + "  'tls.ca-cert' = '" + ca() + "',\n";
    }

    /** The seed's write job (setats-flink-write.txt), its placeholders filled, with credentials. */
    private static List<String> seedWriteJob(String user, String password) throws IOException {
        String dir = System.getProperty("setats.seeds", "../../shared/seeds");
        Path p = Paths.get(dir, "setats-flink-write.txt");
        if (!Files.exists(p)) {
            p = Paths.get("src/test/resources/seeds", "setats-flink-write.txt");
        }
        String text = new String(Files.readAllBytes(p), StandardCharsets.UTF_8);
        List<String> out = new ArrayList<>();
        Matcher m = Pattern.compile("(?s)(CREATE TABLE|INSERT INTO)\\s.*?;").matcher(text);
        while (m.find()) {
            String sql = m.group();
            if (!sql.startsWith("CREATE TABLE `test_source_datagen`")
                    && !sql.startsWith("CREATE TABLE `demo_setats_table1`")
                    && !sql.startsWith("INSERT INTO `demo_setats_table1`")) {
                continue;
            }
            sql = sql.replace("'manager-url' = '<Manager Url>',\n", connection(user, password))
                    .replace("cosn://<bucket>/warehouse", GATEWAY.warehouse().toString())
                    .replace("<metastore-host-1>", "127.0.0.1")
                    .replace("<metastore-host-2>", "127.0.0.1")
                    .replace("'catalog-type' = 'hive'", "'catalog-type' = 'hadoop'")
                    .replace("'rows-per-second' = '1',", "'rows-per-second' = '1',\n  'number-of-rows' = '" + ROWS + "',");
            out.add(sql.substring(0, sql.length() - 1));
        }
        assertThat(out).hasSize(3);
        return out;
    }

    private static TableEnvironment tableEnv() {
        TableEnvironment env = TableEnvironment.create(EnvironmentSettings.inStreamingMode());
        env.getConfig().set("parallelism.default", "2");
        env.getConfig().set("restart-strategy.type", "none");
        return env;
    }

    private static GatewayClient client(String user, String password) {
        return GatewayClient.connect(
                ConnectionOptions.builder().managerUrl(tlsUrl()).credentials(user, password).tlsCaCert(ca()).build(),
                GATEWAY.catalogContext());
    }

    @Test
    @Order(1)
    void seedWriteJobWithUserAndPasswordOverTls() throws Exception {
        List<String> job = seedWriteJob("etl", "etl-password");
        assertThat(job.get(1)).contains("'manager-url' = 'grpc+tls://", "'username' = 'etl'");
        TableEnvironment env = tableEnv();
        for (String ddl : job.subList(0, 2)) {
            env.executeSql(ddl);
        }
        env.executeSql(job.get(2)).await(5, TimeUnit.MINUTES);
        try (GatewayClient c = client("etl", "etl-password")) {
            long rows = 0;
            for (BucketOffsets b : c.listBuckets("testdb", "demo_setats_table1").getBucketsList()) {
                rows += b.getEndOffset() - b.getStartOffset();
            }
            assertThat(rows).isEqualTo(ROWS);
        }
    }

    /**
     * The seed's CDC job as the read-only user, with a slot (the DWS seed's least privilege: a
     * consuming account with read rights only): the job acquires its slot and registers its
     * checkpoint sync points with {@code read} alone; dropping the slot needs admin.
     */
    @Test
    @Order(2)
    void seedCdcJobAsReadOnlyUser() throws Exception {
        TableEnvironment env = tableEnv();
        env.getConfig().set("execution.checkpointing.interval", "1 s");
        env.executeSql("CREATE TABLE `demo_setats_table1_cdc` (`id` STRING, `dt` STRING, `name` STRING, `address` STRING,"
                + " PRIMARY KEY (`id`, `dt`) NOT ENFORCED) WITH (\n"
                + "  'connector' = 'setats-cdc',\n"
                + "  " + connection("reader", "reader-password")
                + "  'warehouse' = '" + GATEWAY.warehouse() + "',\n"
                + "  'catalog-type' = 'hadoop', 'catalog-name' = 'setats',\n"
                + "  'catalog-database' = 'testdb', 'catalog-table' = 'demo_setats_table1',\n"
                + "  'slot.name' = 'reader_slot',\n"
                + "  'bucket.discovery-interval' = '30s', 'startup.mode' = 'earliest')");
        List<String> got = new ArrayList<>();
        SlotRequest slot = SlotRequest.newBuilder().setCatalog(GATEWAY.catalogContext())
                .setDatabase("testdb").setTable("demo_setats_table1").setSlot("reader_slot").build();
        try (CloseableIterator<Row> it =
                env.executeSql("SELECT `id`, `dt`, `name`, `address` FROM `demo_setats_table1_cdc`").collect()) {
            while (got.size() < ROWS && it.hasNext()) {
                got.add(it.next().toString());
            }
            // The reader's job registers checkpoint sync points at the end of every bucket.
            try (GatewayClient c = client("reader", "reader-password")) {
                long deadline = System.nanoTime() + TimeUnit.SECONDS.toNanos(120);
                List<ProgressRow> rows = checkpointRows(c, slot);
                while (!(rows.size() > 0 && rows.stream().allMatch(r -> r.getRegistered() && r.getUnconsumed() == 0))) {
                    assertThat(System.nanoTime()).as("sync points of reader_slot registered: %s", rows).isLessThan(deadline);
                    Thread.sleep(200);
                    rows = checkpointRows(c, slot);
                }
                assertThatThrownBy(() -> c.action("binlog-drop-slot", slot, Empty.parser()))
                        .hasMessageContaining("PERMISSION_DENIED").hasMessageContaining("user \"reader\"")
                        .hasMessageContaining("admin");
            }
        }
        assertThat(got).hasSize(ROWS).allMatch(r -> r.startsWith("+I["));
        try (GatewayClient c = client("etl", "etl-password")) {
            c.action("binlog-drop-slot", slot, Empty.parser());
        }
    }

    /** The checkpoint rows of a slot's binlog-progress. */
    private static List<ProgressRow> checkpointRows(GatewayClient c, SlotRequest slot) {
        List<ProgressRow> out = new ArrayList<>();
        for (ProgressRow r : c.action("binlog-progress", slot, ProgressResponse.parser()).getRowsList()) {
            if (r.getCheckpoint()) {
                out.add(r);
            }
        }
        return out;
    }

    @Test
    @Order(3)
    void readOnlyUsersSinkJobFailsWithPermissionDenied() throws Exception {
        List<String> job = seedWriteJob("reader", "reader-password");
        TableEnvironment env = tableEnv();
        for (String ddl : job.subList(0, 2)) {
            env.executeSql(ddl);
        }
        assertThatThrownBy(() -> env.executeSql(job.get(2)).await(5, TimeUnit.MINUTES))
                .satisfies(e -> assertThat(ExceptionUtils.stringifyException(e))
                        .contains("PERMISSION_DENIED", "user \"reader\"", "testdb.demo_setats_table1", "write"));
    }

    @Test
    @Order(4)
    void wrongCredentialsAndUntrustedTlsAreRefused() {
        try (GatewayClient c = client("etl", "wrong")) {
            assertThatThrownBy(c::gatewayInfo)
                    .isInstanceOf(SetatsGatewayException.class)
                    .hasMessageContaining("UNAUTHENTICATED")
                    .hasMessageContaining("user \"etl\"");
        }
        try (GatewayClient c = GatewayClient.connect(
                ConnectionOptions.builder().managerUrl(tlsUrl()).tlsCaCert(ca()).build(), GATEWAY.catalogContext())) {
            assertThatThrownBy(c::gatewayInfo).hasMessageContaining("UNAUTHENTICATED").hasMessageContaining("anonymous");
        }
        // The JVM's trust store does not know the test CA.
        try (GatewayClient c = GatewayClient.connect(
                ConnectionOptions.builder().managerUrl(tlsUrl()).credentials("etl", "etl-password").build(),
                GATEWAY.catalogContext())) {
            assertThatThrownBy(c::gatewayInfo).hasMessageContaining("UNAVAILABLE");
        }
    }

    /** The seed's dts table (SPEC section 11) over grpc+tls:// with a gateway user and a consumer group. */
    private static String dtsTable(String gatewayUser, String gatewayPassword) {
        return "create table `dts` (`ts` TIMESTAMP(3) METADATA FROM 'timestamp', `id` bigint, `amount` bigint,"
                + " WATERMARK FOR ts AS ts - INTERVAL '5' SECOND) with (\n"
                + "'connector' = 'dts',"
                + "'dts.server' = '" + tlsUrl() + "',"
                + "'username' = '" + gatewayUser + "', 'password' = '" + gatewayPassword + "', 'tls.ca-cert' = '" + ca() + "',"
                + "'topic' = 'shop',"
                + "'dts.sid' = 'dts_group', "
                + "'dts.user' = 'dtstest', "
                + "'dts.password' = 'Test123456',"
                + "'dts.checkpoint' = '0', "
                + "'dts-cdc.table.name' = 'shop.orders',"
                + "'format' = 'dts-cdc')";
    }

    @Test
    @Order(0)
    void seedDtsJobOverTlsWithGatewayUserAndConsumerGroup() throws Exception {
        PG.sql("CREATE SCHEMA shop; CREATE TABLE shop.orders (id int PRIMARY KEY, amount int); ALTER TABLE shop.orders REPLICA IDENTITY FULL");
        try (GatewayClient c = client("etl", "etl-password")) {
            c.action("subscription-create", CreateChannelRequest.newBuilder().setChannel("shop").setSourceUrl(PG.url())
                    .addTables("shop.orders").build(), ChannelInfo.parser());
            c.action("subscription-create-group", CreateGroupRequest.newBuilder().setChannel("shop").setGroup("dts_group")
                    .setUser("dtstest").setPassword("Test123456").build(), GroupInfo.parser());
        }
        // Creating a group is channel management: admin only.
        try (GatewayClient c = client("consumer", "consumer-password")) {
            assertThatThrownBy(() -> c.action("subscription-create-group", CreateGroupRequest.newBuilder().setChannel("shop")
                            .setGroup("g2").setUser("x").setPassword("y").build(), GroupInfo.parser()))
                    .hasMessageContaining("PERMISSION_DENIED").hasMessageContaining("user \"consumer\"")
                    .hasMessageContaining("admin").hasMessageContaining("channel shop");
        }
        PG.sql("BEGIN; INSERT INTO shop.orders VALUES (1, 10); UPDATE shop.orders SET amount = 11 WHERE id = 1; COMMIT;");
        TableEnvironment env = tableEnv();
        env.getConfig().set("parallelism.default", "1");
        env.executeSql(dtsTable("consumer", "consumer-password"));
        List<String> got = new ArrayList<>();
        try (CloseableIterator<Row> it = env.executeSql("SELECT id, amount FROM dts").collect()) {
            while (got.size() < 3 && it.hasNext()) {
                got.add(it.next().toString());
            }
        }
        assertThat(got).containsExactly("+I[1, 10]", "-U[1, 10]", "+U[1, 11]");

        // A gateway user without read on the channel: PERMISSION_DENIED naming user and channel,
        // although the consumer group's credentials are right.
        TableEnvironment denied = tableEnv();
        denied.executeSql(dtsTable("reader", "reader-password"));
        assertThatThrownBy(() -> {
            try (CloseableIterator<Row> it = denied.executeSql("SELECT id, amount FROM dts").collect()) {
                it.hasNext();
            }
        }).satisfies(e -> assertThat(ExceptionUtils.stringifyException(e))
                .contains("PERMISSION_DENIED", "user \"reader\"", "channel shop"));
    }

    /** CREATE CATALOG 'type' = 'setats' over grpc+tls:// with a user (SPEC sections 12 and 14). */
    private static String createCatalog(String name, String user, String password) {
        return "CREATE CATALOG " + name + " WITH (\n"
                + "  'type' = 'setats',\n"
                + "  " + connection(user, password)
                + "  'warehouse' = '" + GATEWAY.warehouse() + "',\n"
                + "  'catalog-type' = 'hadoop')";
    }

    @Test
    @Order(2) // after order 1, which creates testdb
    void flinkCatalogUsesTheConnectionOptions() throws Exception {
        TableEnvironment env = tableEnv();
        env.getConfig().set("parallelism.default", "1"); // one slot: cancelled collect jobs may still hold theirs
        env.executeSql(createCatalog("sec_admin", "etl", "etl-password"));
        env.executeSql("CREATE DATABASE sec_admin.secdb");
        env.executeSql("CREATE TABLE sec_admin.secdb.t (id INT, v STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ('bucket' = '1')");
        // The catalog's tables are written and read with the catalog's credentials and CA.
        env.executeSql("INSERT INTO sec_admin.secdb.t VALUES (1, 'a'), (2, 'b')").await(5, TimeUnit.MINUTES);
        List<String> got = new ArrayList<>();
        try (CloseableIterator<Row> it = env.executeSql(
                "SELECT id, v FROM sec_admin.secdb.t /*+ OPTIONS('startup.mode' = 'earliest') */").collect()) {
            while (got.size() < 2 && it.hasNext()) {
                got.add(it.next().toString());
            }
        }
        assertThat(got).containsExactlyInAnyOrder("+I[1, a]", "+I[2, b]");

        // A read-only user's catalog lists the databases it has grants on, but creating a database needs admin; wrong password
        // and a missing CA fail when the catalog opens.
        env.executeSql(createCatalog("sec_reader", "reader", "reader-password"));
        assertThat(env.getCatalog("sec_reader").get().listDatabases()).contains("testdb").doesNotContain("secdb");
        assertThatThrownBy(() -> env.executeSql("CREATE DATABASE sec_reader.other"))
                .satisfies(e -> assertThat(ExceptionUtils.stringifyException(e))
                        .contains("PERMISSION_DENIED", "user \"reader\""));
        assertThatThrownBy(() -> env.executeSql(createCatalog("sec_wrong", "etl", "wrong")))
                .satisfies(e -> assertThat(ExceptionUtils.stringifyException(e))
                        .contains("UNAUTHENTICATED", "user \"etl\""));
        assertThatThrownBy(() -> env.executeSql("CREATE CATALOG sec_noca WITH ('type' = 'setats',"
                        + " 'manager-url' = '" + tlsUrl() + "', 'username' = 'etl', 'password' = 'etl-password',"
                        + " 'warehouse' = '" + GATEWAY.warehouse() + "')"))
                .satisfies(e -> assertThat(ExceptionUtils.stringifyException(e)).contains("UNAVAILABLE"));
        assertThatThrownBy(() -> env.executeSql("CREATE CATALOG sec_half WITH ('type' = 'setats',"
                        + " 'manager-url' = '" + tlsUrl() + "', 'username' = 'etl',"
                        + " 'warehouse' = '" + GATEWAY.warehouse() + "')"))
                .satisfies(e -> assertThat(ExceptionUtils.stringifyException(e)).contains("'password' is not"));
    }
}
