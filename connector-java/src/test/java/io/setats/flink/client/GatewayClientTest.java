package io.setats.flink.client;

import io.setats.flink.testutils.SetatsGatewayProcess;
import io.setats.proto.v1.CatalogContext;

import org.apache.arrow.memory.ArrowBuf;
import org.junit.jupiter.api.Test;

import java.nio.file.Paths;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Warehouse normalisation used by the client's early warehouse check; leak detection on close. */
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

    /**
     * A client closed while Arrow memory of its allocator is still held records a leak, and the
     * tests' check (SetatsGatewayProcess.assertNoArrowLeaks) fails on it; a clean close records
     * none. No gateway is needed: nothing is sent.
     */
    @Test
    void closeRecordsArrowLeaksAndTheCheckFails() {
        GatewayClient.drainLeaks();
        CatalogContext cc = CatalogContext.newBuilder().setWarehouse("/tmp/wh").setCatalogType("hadoop").build();
        GatewayClient.connect("grpc://127.0.0.1:1", cc).close();
        SetatsGatewayProcess.assertNoArrowLeaks();

        GatewayClient leaky = GatewayClient.connect("grpc://127.0.0.1:1", cc);
        ArrowBuf held = leaky.allocator().buffer(64); // never released: the allocator is closed under it
        leaky.close();
        assertThat(held.capacity()).isEqualTo(64);
        assertThatThrownBy(SetatsGatewayProcess::assertNoArrowLeaks)
                .isInstanceOf(AssertionError.class)
                .hasMessageContaining("127.0.0.1:1")
                .hasMessageContaining("bytes");
        assertThat(GatewayClient.drainLeaks()).isEmpty();
    }
}
