package io.setats.flink.source.reader;

import io.setats.flink.client.SetatsGatewayException;
import io.setats.flink.source.split.TableBucket;

import org.junit.jupiter.api.Test;

import java.io.IOException;
import java.time.Duration;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** The reconnect policy of the CDC source's bucket streams: which failures retry, back-off, window. */
class ReconnectTest {

    private static SetatsGatewayException gateway(String code) {
        return new SetatsGatewayException("DoGet db.t partition='' bucket=3 on grpc://gw:1", code, "msg", null);
    }

    @Test
    void transientFailuresAreTheRetryableCodesAndAnEndedStream() {
        Object[][] cases = {
            {gateway("UNAVAILABLE"), true},
            {gateway("CANCELLED"), true},
            {gateway("INTERNAL"), true},
            {new Reconnect.StreamEndedException("ended"), true},
            {gateway("NOT_FOUND"), false}, // table dropped or re-created
            {gateway("OUT_OF_RANGE"), false}, // position expired
            {gateway("INVALID_ARGUMENT"), false},
            {gateway("UNAUTHENTICATED"), false},
            {new IOException("expected offset 5 next but the gateway sent offset 7"), false},
            {new IllegalArgumentException("bad column"), false},
        };
        for (Object[] c : cases) {
            assertThat(Reconnect.isTransient((Throwable) c[0])).as("%s", c[0]).isEqualTo(c[1]);
        }
    }

    @Test
    void backOffDoublesUpToTheMaximumAndRestartsAfterProgress() throws IOException {
        Reconnect r = new Reconnect(new Reconnect.Settings(100, 800, 60_000), "DoGet x", new TableBucket("", 3));
        List<Long> waits = new ArrayList<>();
        for (int i = 0; i < 6; i++) {
            waits.add(r.failed(gateway("UNAVAILABLE"), false, 1_000 + i));
        }
        assertThat(waits).isEqualTo(Arrays.asList(100L, 200L, 400L, 800L, 800L, 800L));
        assertThat(r.failed(gateway("UNAVAILABLE"), true, 2_000)).isEqualTo(100L);
        assertThat(r.attempts()).isEqualTo(1);
    }

    @Test
    void givesUpAfterTheWindowWithoutProgressNamingCallBucketAndCause() throws IOException {
        Reconnect r = new Reconnect(new Reconnect.Settings(100, 5_000, 1_000), "DoGet db.t partition='' bucket=3 on grpc://gw:1",
                new TableBucket("dt=1", 3));
        assertThat(r.failed(gateway("UNAVAILABLE"), false, 10_000)).isEqualTo(100L);
        assertThat(r.failed(gateway("UNAVAILABLE"), false, 10_900)).isEqualTo(100L); // capped by the window
        assertThatThrownBy(() -> r.failed(gateway("UNAVAILABLE"), false, 11_000))
                .isInstanceOf(IOException.class)
                .hasMessageContaining("grpc://gw:1")
                .hasMessageContaining("partition 'dt=1' bucket 3")
                .hasMessageContaining("after 3 attempt(s) over 1000 ms")
                .hasMessageContaining("scan.reconnect-timeout = 1000 ms")
                .hasMessageContaining("UNAVAILABLE");
        // Progress restarts the window.
        Reconnect p = new Reconnect(new Reconnect.Settings(100, 5_000, 1_000), "DoGet", new TableBucket("", 0));
        p.failed(gateway("UNAVAILABLE"), false, 0);
        assertThat(p.failed(gateway("UNAVAILABLE"), true, 5_000)).isEqualTo(100L);
    }

    @Test
    void aZeroTimeoutFailsAtOnceAndSettingsAreChecked() {
        Reconnect r = new Reconnect(Reconnect.Settings.withTimeout(Duration.ZERO), "DoGet", new TableBucket("", 0));
        assertThatThrownBy(() -> r.failed(gateway("UNAVAILABLE"), false, 0)).isInstanceOf(IOException.class);
        assertThatThrownBy(() -> new Reconnect.Settings(0, 10, 10)).isInstanceOf(IllegalArgumentException.class);
        assertThatThrownBy(() -> new Reconnect.Settings(20, 10, 10)).isInstanceOf(IllegalArgumentException.class);
        assertThat(Reconnect.Settings.withTimeout(Duration.ofMinutes(5)).maxBackoffMs()).isEqualTo(5_000);
    }
}
