package io.setats.flink.client;

import org.junit.jupiter.api.Test;

import java.nio.file.Paths;

import static org.assertj.core.api.Assertions.assertThat;

/** Warehouse normalisation used by the client's early warehouse check. */
class GatewayClientTest {

    @Test
    void normalizesLocalWarehouses() {
        String cwd = Paths.get("").toAbsolutePath().toString();
        assertThat(GatewayClient.normalizeWarehouse("/data/wh/")).isEqualTo("file:///data/wh");
        assertThat(GatewayClient.normalizeWarehouse("file:///data/wh")).isEqualTo("file:///data/wh");
        assertThat(GatewayClient.normalizeWarehouse("file:/data/./x/../wh")).isEqualTo("file:///data/wh");
        assertThat(GatewayClient.normalizeWarehouse("wh")).isEqualTo("file://" + cwd + "/wh");
        assertThat(GatewayClient.normalizeWarehouse(" cosn://bucket/warehouse/ ")).isEqualTo("cosn://bucket/warehouse");
    }
}
