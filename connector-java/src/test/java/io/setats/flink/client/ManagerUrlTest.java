package io.setats.flink.client;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** manager-url forms (SPEC sections 0 and 2). */
class ManagerUrlTest {

    @ParameterizedTest
    @CsvSource({
        "grpc://gw:9000, gw, 9000, false, grpc://gw:9000",
        "grpc+tcp://gw:9000, gw, 9000, false, grpc://gw:9000",
        "grpc+tls://gw.example.com:443, gw.example.com, 443, true, grpc+tls://gw.example.com:443",
        "127.0.0.1:8815, 127.0.0.1, 8815, false, grpc://127.0.0.1:8815",
        "gw, gw, 8815, false, grpc://gw:8815",
        "GRPC://gw:1/, gw, 1, false, grpc://gw:1",
        "'grpc://[::1]:8815', ::1, 8815, false, 'grpc://[::1]:8815'",
    })
    void parses(String url, String host, int port, boolean tls, String canonical) {
        ManagerUrl m = ManagerUrl.parse(url);
        assertThat(m.host()).isEqualTo(host);
        assertThat(m.port()).isEqualTo(port);
        assertThat(m.tls()).isEqualTo(tls);
        assertThat(m.toString()).isEqualTo(canonical);
        assertThat(m.original()).isEqualTo(url);
    }

    @ParameterizedTest
    @CsvSource({
        "http://gw:80, unknown scheme 'http'",
        "gw:0, port out of range: 0",
        "gw:70000, port out of range: 70000",
        "gw:x, bad port 'x'",
        "grpc://gw:1/path, expected host:port",
        "':8815', empty host",
        "'[::1', unclosed '['",
        "'   ', empty",
    })
    void rejects(String url, String why) {
        assertThatThrownBy(() -> ManagerUrl.parse(url))
                .isInstanceOf(IllegalArgumentException.class)
                .hasMessageContaining("invalid manager-url")
                .hasMessageContaining(why)
                .hasMessageContaining("expected grpc://host:port, grpc+tls://host:port or host:port");
    }
}
