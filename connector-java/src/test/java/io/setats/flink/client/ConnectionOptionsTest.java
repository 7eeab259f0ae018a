package io.setats.flink.client;

import org.junit.jupiter.api.Test;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.ObjectInputStream;
import java.io.ObjectOutputStream;
import java.nio.charset.StandardCharsets;
import java.util.Base64;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

class ConnectionOptionsTest {

    @Test
    void anonymous() {
        ConnectionOptions o = ConnectionOptions.of("grpc://gw:8815");
        assertThat(o.hasCredentials()).isFalse();
        assertThat(o.basicAuthorization()).isNull();
        assertThat(o.toString()).isEqualTo("grpc://gw:8815");
    }

    @Test
    void credentialsBecomeABasicHeaderAndNeverShow() throws Exception {
        ConnectionOptions o =
                ConnectionOptions.builder()
                        .managerUrl("grpc+tls://gw:8815")
                        .credentials("etl", "p:ss w0rd")
                        .tlsCaCert("/etc/ca.pem")
                        .build();
        String h = o.basicAuthorization();
        assertThat(h).startsWith("Basic ");
        assertThat(new String(Base64.getDecoder().decode(h.substring(6)), StandardCharsets.UTF_8))
                .isEqualTo("etl:p:ss w0rd");
        assertThat(o.toString()).isEqualTo("grpc+tls://gw:8815 (user etl, ca /etc/ca.pem)").doesNotContain("w0rd");

        ByteArrayOutputStream bytes = new ByteArrayOutputStream();
        try (ObjectOutputStream out = new ObjectOutputStream(bytes)) {
            out.writeObject(o);
        }
        try (ObjectInputStream in = new ObjectInputStream(new ByteArrayInputStream(bytes.toByteArray()))) {
            assertThat(in.readObject()).isEqualTo(o);
        }
    }

    @Test
    void badCombinationsNameTheOptions() {
        assertThatThrownBy(() -> ConnectionOptions.builder().managerUrl("gw:1").credentials("etl", null).build())
                .hasMessageContaining("'password'");
        assertThatThrownBy(() -> ConnectionOptions.builder().managerUrl("gw:1").credentials(null, "x").build())
                .hasMessageContaining("'username'");
        assertThatThrownBy(() -> ConnectionOptions.builder().managerUrl("grpc://gw:1").tlsCaCert("/ca.pem").build())
                .hasMessageContaining("'tls.ca-cert'")
                .hasMessageContaining("grpc+tls://");
        assertThatThrownBy(() -> ConnectionOptions.builder().managerUrl("gw:1").credentials("a:b", "x").build())
                .hasMessageContaining("':'");
        assertThatThrownBy(() -> ConnectionOptions.builder().build()).hasMessageContaining("manager-url");
    }

    @Test
    void unreadableCaCertNamesTheOption() {
        ConnectionOptions o =
                ConnectionOptions.builder().managerUrl("grpc+tls://127.0.0.1:1").tlsCaCert("/no/such/ca.pem").build();
        assertThatThrownBy(() -> GatewayClient.connect(o, null))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("tls.ca-cert")
                .hasMessageContaining("/no/such/ca.pem");
    }
}
