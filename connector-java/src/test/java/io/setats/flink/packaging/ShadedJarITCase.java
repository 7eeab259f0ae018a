package io.setats.flink.packaging;

import io.setats.flink.testutils.SetatsGatewayProcess;

import org.apache.flink.table.factories.CatalogFactory;
import org.apache.flink.table.factories.Factory;

import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.RegisterExtension;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.Collections;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.jar.JarEntry;
import java.util.jar.JarFile;
import java.util.stream.Collectors;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Checks the shaded jar target/setats-flink-connector-0.1.0.jar (runs after {@code package}):
 * it registers both factories, every bundled class is relocated under io.setats.shaded (no
 * io/grpc, io/netty, org/apache/arrow, com/google, ... at their original place), gRPC's service
 * files are relocated, and the relocated client works against a real gateway when loaded from the
 * jar alone.
 */
class ShadedJarITCase {

    @RegisterExtension static final SetatsGatewayProcess GATEWAY = new SetatsGatewayProcess();

    private static Path jar;
    private static List<String> entries;

    @BeforeAll
    static void open() throws IOException {
        jar = Paths.get(System.getProperty("setats.shaded.jar", "target/setats-flink-connector-0.1.0.jar"));
        assertThat(jar).as("shaded jar (run mvn package first)").exists();
        try (JarFile f = new JarFile(jar.toFile())) {
            entries = Collections.list(f.entries()).stream().map(JarEntry::getName).collect(Collectors.toList());
        }
    }

    private static String read(String entry) throws IOException {
        try (JarFile f = new JarFile(jar.toFile());
                BufferedReader r =
                        new BufferedReader(
                                new InputStreamReader(
                                        f.getInputStream(f.getJarEntry(entry)), StandardCharsets.UTF_8))) {
            return r.lines().collect(Collectors.joining("\n"));
        }
    }

    @Test
    void registersTheFactories() throws IOException {
        String services = read("META-INF/services/org.apache.flink.table.factories.Factory");
        assertThat(services.lines().map(String::trim).filter(l -> !l.isEmpty() && !l.startsWith("#")))
                .containsExactlyInAnyOrder(
                        "io.setats.flink.table.SetatsDynamicTableSinkFactory",
                        "io.setats.flink.table.SetatsCdcDynamicTableSourceFactory",
                        "io.setats.flink.dts.table.DtsDynamicTableFactory",
                        "io.setats.flink.catalog.SetatsCatalogFactory");
        assertThat(entries)
                .contains(
                        "io/setats/flink/table/SetatsDynamicTableSinkFactory.class",
                        "io/setats/flink/table/SetatsCdcDynamicTableSourceFactory.class",
                        "io/setats/flink/dts/table/DtsDynamicTableFactory.class",
                        "io/setats/flink/catalog/SetatsCatalogFactory.class");
    }

    @Test
    void noUnrelocatedClasses() {
        List<String> outside =
                entries.stream()
                        .filter(e -> e.endsWith(".class"))
                        .filter(e -> !e.startsWith("io/setats/"))
                        .collect(Collectors.toList());
        assertThat(outside).as("classes outside io/setats/").isEmpty();
        for (String prefix :
                new String[] {
                    "io/grpc/", "io/netty/", "io/perfmark/", "org/apache/arrow/", "com/google/",
                    "com/fasterxml/", "org/apache/flink/", "org/slf4j/"
                }) {
            assertThat(entries).noneMatch(e -> e.startsWith(prefix));
        }
        assertThat(entries)
                .contains(
                        "io/setats/shaded/io/grpc/ManagedChannel.class",
                        "io/setats/shaded/io/netty/buffer/ByteBuf.class",
                        "io/setats/shaded/org/apache/arrow/flight/FlightClient.class",
                        "io/setats/shaded/com/google/protobuf/Message.class",
                        "io/setats/shaded/com/google/common/hash/Hashing.class",
                        "io/setats/proto/v1/WriteCommand.class");
        // Flink itself is provided, never bundled.
        assertThat(entries).noneMatch(e -> e.contains("flink/shaded"));
    }

    @Test
    void grpcServiceFilesAreRelocated() throws IOException {
        List<String> services =
                entries.stream()
                        .filter(e -> e.startsWith("META-INF/services/") && !e.endsWith("/"))
                        .collect(Collectors.toList());
        assertThat(services)
                .contains(
                        "META-INF/services/io.setats.shaded.io.grpc.NameResolverProvider",
                        "META-INF/services/io.setats.shaded.io.grpc.LoadBalancerProvider")
                .noneMatch(s -> s.startsWith("META-INF/services/io.grpc."));
        for (String s : services) {
            if (s.startsWith("META-INF/services/io.setats.shaded.")) {
                assertThat(read(s).lines().filter(l -> !l.trim().isEmpty() && !l.startsWith("#")))
                        .as(s)
                        .allMatch(l -> l.trim().startsWith("io.setats.shaded."));
            }
        }
    }

    @Test
    void relocatedClientWorksFromTheJarAlone() throws Exception {
        try (ChildFirst loader = new ChildFirst(jar.toUri().toURL(), getClass().getClassLoader())) {
            Class<?> clientClass = loader.loadClass("io.setats.flink.client.GatewayClient");
            assertThat(clientClass.getProtectionDomain().getCodeSource().getLocation().getPath())
                    .endsWith(jar.getFileName().toString());
            Class<?> ctxClass = loader.loadClass("io.setats.proto.v1.CatalogContext");
            Object ctx = ctxClass.getMethod("getDefaultInstance").invoke(null);
            Method connect = clientClass.getMethod("connect", String.class, ctxClass);
            try (AutoCloseable client = (AutoCloseable) connect.invoke(null, GATEWAY.managerUrl(), ctx)) {
                Object info = clientClass.getMethod("gatewayInfo").invoke(client);
                assertThat(info.getClass().getName()).isEqualTo("io.setats.proto.v1.GatewayInfo");
                assertThat(info.getClass().getMethod("getWarehouse").invoke(info))
                        .isEqualTo(GATEWAY.warehouseUri().replaceAll("/$", ""));
                Object dbs = clientClass.getMethod("listDatabases").invoke(client);
                assertThat(dbs).isInstanceOf(List.class);
            }

            // The factories in the jar are Flink table factories with the documented identifiers.
            Set<String> ids = new HashSet<>();
            for (String name : new String[] {
                "io.setats.flink.table.SetatsDynamicTableSinkFactory",
                "io.setats.flink.table.SetatsCdcDynamicTableSourceFactory",
                "io.setats.flink.dts.table.DtsDynamicTableFactory"
            }) {
                Object f = loader.loadClass(name).getConstructor().newInstance();
                assertThat(f).isInstanceOf(Factory.class);
                ids.add(((Factory) f).factoryIdentifier());
            }
            assertThat(ids).containsExactlyInAnyOrder("setats", "setats-cdc", "dts");
            // The catalog factory: a CatalogFactory whose identifier is the CREATE CATALOG 'type'.
            Object cf = loader.loadClass("io.setats.flink.catalog.SetatsCatalogFactory").getConstructor().newInstance();
            assertThat(cf).isInstanceOf(CatalogFactory.class);
            assertThat(((Factory) cf).factoryIdentifier()).isEqualTo("setats");
        }
    }

    /**
     * Issue 12, the hang: Netty's version resource is relocated and lists every bundled module, so
     * a Netty beside the jar cannot change what the relocated grpc believes about its Netty.
     */
    @Test
    void nettyVersionResourceIsRelocatedAndComplete() throws IOException {
        assertThat(entries).doesNotContain("META-INF/io.netty.versions.properties");
        assertThat(entries).contains("META-INF/io.setats.shaded.io.netty.versions.properties");
        java.util.Properties p = new java.util.Properties();
        p.load(new java.io.StringReader(read("META-INF/io.setats.shaded.io.netty.versions.properties")));
        for (String module : new String[] {"netty-buffer", "netty-common", "netty-transport", "netty-codec-http2", "netty-handler"}) {
            assertThat(p.getProperty(module + ".version")).as(module).isNotNull().startsWith("4.1.");
        }
    }

    /**
     * Issue 12, the hang: with netty-buffer 4.1.76 (unshaded, as ZooKeeper, Curator or Hadoop
     * bring it) beside the shaded jar, the relocated grpc must still see the bundled Netty (4.1.111
     * or later) and so must not turn on its NettyAdaptiveCumulator, which corrupts inbound frames
     * on that Netty (grpc-java #11284): WriteAcks stopped arriving and the sink hung.
     */
    @Test
    void relocatedGrpcSeesTheBundledNettyWithAnOldNettyBeside() throws Exception {
        Path foreign = foreignJar("netty-buffer-");
        ClassLoader context = Thread.currentThread().getContextClassLoader();
        try (URLClassLoader loader =
                new URLClassLoader(
                        new URL[] {foreign.toUri().toURL(), jar.toUri().toURL()},
                        ClassLoader.getPlatformClassLoader())) {
            // The foreign jar comes first and is visible: its version file is found by its name.
            assertThat(loader.getResource("META-INF/io.netty.versions.properties")).isNotNull();
            // Version.identify() reads the resources of the context class loader, as in a Flink task.
            Thread.currentThread().setContextClassLoader(loader);
            Class<?> version = Class.forName("io.setats.shaded.io.netty.util.Version", true, loader);
            Object buffer = ((java.util.Map<?, ?>) version.getMethod("identify").invoke(null)).get("netty-buffer");
            assertThat(buffer).as("netty-buffer version seen by the relocated Netty").isNotNull();
            String v = (String) version.getMethod("artifactVersion").invoke(buffer);
            assertThat(v).doesNotStartWith("4.1.76");
            Class<?> handler =
                    Class.forName("io.setats.shaded.io.grpc.netty.GrpcHttp2ConnectionHandler", true, loader);
            Method pre = handler.getDeclaredMethod("usingPre4_1_111_Netty");
            pre.setAccessible(true);
            assertThat((Boolean) pre.invoke(null))
                    .as("relocated grpc believes Netty < 4.1.111 (bundled: " + v + ")")
                    .isFalse();
        } finally {
            Thread.currentThread().setContextClassLoader(context);
        }
    }

    /** A jar of target/foreign-jars (maven-dependency-plugin, pre-integration-test). */
    static Path foreignJar(String prefix) throws IOException {
        Path dir = Paths.get(System.getProperty("setats.foreign.jars", "target/foreign-jars"));
        assertThat(dir).as("foreign jars (mvn verify copies them)").isDirectory();
        try (java.util.stream.Stream<Path> s = java.nio.file.Files.list(dir)) {
            return s.filter(p -> p.getFileName().toString().startsWith(prefix))
                    .findFirst()
                    .orElseThrow(() -> new AssertionError("no " + prefix + "* in " + dir));
        }
    }

    /** Loads io.setats.* from the jar first, everything else (Flink, JDK) from the parent. */
    private static final class ChildFirst extends URLClassLoader {
        ChildFirst(URL jar, ClassLoader parent) {
            super(new URL[] {jar}, parent);
        }

        @Override
        protected Class<?> loadClass(String name, boolean resolve) throws ClassNotFoundException {
            synchronized (getClassLoadingLock(name)) {
                if (name.startsWith("io.setats.")) {
                    Class<?> c = findLoadedClass(name);
                    if (c == null) {
                        c = findClass(name);
                    }
                    if (resolve) {
                        resolveClass(c);
                    }
                    return c;
                }
                return super.loadClass(name, resolve);
            }
        }
    }

}
