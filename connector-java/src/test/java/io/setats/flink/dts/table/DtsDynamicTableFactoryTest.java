package io.setats.flink.dts.table;

import io.setats.flink.client.ConnectionOptions;
import io.setats.flink.dts.DtsConfig;
import io.setats.flink.dts.DtsSource;

import org.apache.flink.table.api.DataTypes;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.catalog.Column;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.junit.jupiter.api.Test;

import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;

import static org.apache.flink.table.factories.utils.FactoryMocks.createTableSource;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/**
 * Options of the {@code dts} factory and the DataStream builder (SPEC sections 11 and 14): the
 * gateway connection ({@code dts.server}, {@code username}, {@code password}, {@code
 * tls.ca-cert}) and the consumer group ({@code dts.sid}, {@code dts.user}, {@code dts.password})
 * stay apart.
 */
class DtsDynamicTableFactoryTest {

    private static final ResolvedSchema SCHEMA = ResolvedSchema.of(
            Column.physical("id", DataTypes.BIGINT()), Column.physical("name", DataTypes.STRING()));

    /** The seed's WITH clause, placeholders filled. */
    private static Map<String, String> seed() {
        Map<String, String> o = new HashMap<>();
        o.put("connector", "dts");
        o.put("dts.server", "127.0.0.1:18001");
        o.put("topic", "cn_hangzhou_dtstest_version2");
        o.put("dts.sid", "dts_group");
        o.put("dts.user", "dtstest");
        o.put("dts.password", "Test123456");
        o.put("dts.checkpoint", "1624440043");
        o.put("dts-cdc.table.name", "dtstestdata.order");
        o.put("format", "dts-cdc");
        return o;
    }

    private static DtsConfig config(Map<String, String> o) {
        return ((DtsDynamicTableSource) createTableSource(SCHEMA, o)).config();
    }

    @Test
    void seedOptionsAreAnonymousPlaintext() {
        DtsConfig c = config(seed());
        assertThat(c.connection()).isEqualTo(ConnectionOptions.of("127.0.0.1:18001"));
        assertThat(c.credentials().getGroup()).isEqualTo("dts_group");
        assertThat(c.credentials().getUser()).isEqualTo("dtstest");
        assertThat(c.credentials().getPassword()).isEqualTo("Test123456");
        assertThat(c.checkpointSeconds()).isEqualTo(1624440043L);
    }

    @Test
    void gatewayUserAndTlsAreTheSetatsConnectorsOptions() {
        Map<String, String> o = seed();
        o.put("dts.server", "grpc+tls://gw:8815");
        o.put("username", "etl");
        o.put("password", "etl-password");
        o.put("tls.ca-cert", "/etc/setats/ca.pem");
        DtsConfig c = config(o);
        assertThat(c.connection()).isEqualTo(ConnectionOptions.builder().managerUrl("grpc+tls://gw:8815")
                .credentials("etl", "etl-password").tlsCaCert("/etc/setats/ca.pem").build());
        // The consumer group's credentials are untouched by the gateway user's.
        assertThat(c.credentials().getUser()).isEqualTo("dtstest");
        assertThat(c.credentials().getPassword()).isEqualTo("Test123456");
        assertThat(c.toString()).contains("user etl", "user dtstest").doesNotContain("etl-password", "Test123456");
    }

    @Test
    void wrongConnectionCombinationsAreValidationErrors() {
        Map<String, String> noUser = seed();
        noUser.put("password", "x");
        Map<String, String> noPassword = seed();
        noPassword.put("username", "etl");
        Map<String, String> caOnPlaintext = seed();
        caOnPlaintext.put("tls.ca-cert", "/ca.pem");
        for (Map<String, String> o : Arrays.asList(noUser, noPassword, caOnPlaintext)) {
            assertThatThrownBy(() -> createTableSource(SCHEMA, o))
                    .hasStackTraceContaining("gateway connection options of the dts connector")
                    .satisfies(e -> assertThat(rootValidation(e)).isNotNull());
        }
    }

    private static ValidationException rootValidation(Throwable e) {
        for (Throwable c = e; c != null; c = c.getCause()) {
            if (c instanceof ValidationException) {
                return (ValidationException) c;
            }
        }
        return null;
    }

    @Test
    void builderTakesTheGatewayConnection() {
        DtsConfig c = DtsSource.builder().setBrokerUrl("grpc+tls://gw:8815").setGatewayCredentials("etl", "etl-password")
                .setTlsCaCert("/ca.pem").setTopic("t").setSid("g").setUser("u").setPassword("p").build().config();
        assertThat(c.connection().username()).isEqualTo("etl");
        assertThat(c.connection().tlsCaCert()).isEqualTo("/ca.pem");
        assertThat(c.credentials().getUser()).isEqualTo("u");
        assertThatThrownBy(() -> DtsSource.builder().setBrokerUrl("gw:8815").setTlsCaCert("/ca.pem")
                .setTopic("t").setSid("g").setUser("u").build()).hasMessageContaining("tls.ca-cert");
    }
}
