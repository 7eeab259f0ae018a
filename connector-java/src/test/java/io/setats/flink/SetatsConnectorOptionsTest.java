package io.setats.flink;

import io.setats.flink.SetatsConnectorOptions.MergeEngine;
import io.setats.flink.SetatsConnectorOptions.StartupMode;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.table.api.ValidationException;

import org.junit.jupiter.api.Test;
import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.CsvSource;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

/** Enum parsing and defaults of SetatsConnectorOptions / SetatsOptionsUtil (SPEC section 2). */
class SetatsConnectorOptionsTest {

    @ParameterizedTest
    @CsvSource({
        "latest, LATEST",
        "LATEST, LATEST",
        "earliest, EARLIEST",
        "from-timestamp, FROM_TIMESTAMP",
        "timestamp, FROM_TIMESTAMP",
        "From_Timestamp, FROM_TIMESTAMP",
    })
    void startupModes(String value, StartupMode mode) {
        assertThat(StartupMode.parse(value)).isEqualTo(mode);
        Configuration c = new Configuration();
        c.set(SetatsConnectorOptions.STARTUP_MODE, value);
        assertThat(SetatsOptionsUtil.startupMode(c)).isEqualTo(mode);
    }

    @Test
    void startupModeErrorsListAllowedValues() {
        Configuration c = new Configuration();
        c.set(SetatsConnectorOptions.STARTUP_MODE, "group-offsets");
        assertThatThrownBy(() -> SetatsOptionsUtil.startupMode(c))
                .isInstanceOf(ValidationException.class)
                .hasMessage(
                        "Invalid value for option 'startup.mode': 'group-offsets'. Allowed: latest, "
                                + "earliest, from-timestamp, initial ('timestamp' accepted for 'from-timestamp').");
    }

    @Test
    void defaults() {
        Configuration c = new Configuration();
        assertThat(SetatsOptionsUtil.startupMode(c)).isEqualTo(StartupMode.LATEST);
        assertThat(SetatsOptionsUtil.mergeEngine(c)).isEqualTo(MergeEngine.DEDUPLICATE);
        assertThat(SetatsOptionsUtil.database(c)).isEqualTo("default");
        assertThat(SetatsOptionsUtil.table(c, "flink_name")).isEqualTo("flink_name");
        assertThat(c.get(SetatsConnectorOptions.BUCKET)).isEqualTo(-1);
        assertThat(c.get(SetatsConnectorOptions.BUCKET_DISCOVERY_INTERVAL).getSeconds()).isEqualTo(300);
        assertThat(c.get(SetatsConnectorOptions.SINK_FLUSH_INTERVAL).getSeconds()).isEqualTo(5);
        assertThat(c.get(SetatsConnectorOptions.SINK_BUFFER_ROWS)).isEqualTo(10_000);
    }

    @Test
    void mergeEngineParse() {
        assertThat(MergeEngine.parse("partial-update")).isEqualTo(MergeEngine.PARTIAL_UPDATE);
        assertThat(MergeEngine.parse(" Deduplicate ")).isEqualTo(MergeEngine.DEDUPLICATE);
        assertThatThrownBy(() -> MergeEngine.parse("first-row"))
                .hasMessage("unknown merge engine 'first-row', allowed: DEDUPLICATE, PARTIAL_UPDATE");
    }

    @Test
    void enumsAreDescribed() {
        for (SetatsConnectorOptions.CatalogType t : SetatsConnectorOptions.CatalogType.values()) {
            assertThat(t.getDescription()).isNotNull();
        }
        assertThat(StartupMode.FROM_TIMESTAMP.toString()).isEqualTo("from-timestamp");
    }
}
