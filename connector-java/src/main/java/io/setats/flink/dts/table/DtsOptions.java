package io.setats.flink.dts.table;

import org.apache.flink.configuration.ConfigOption;
import org.apache.flink.configuration.ConfigOptions;

/** Options of the {@code dts} SQL connector, as the seed names them (SPEC section 11). */
public final class DtsOptions {
    private DtsOptions() {}

    public static final String IDENTIFIER = "dts";
    public static final String FORMAT_DTS_CDC = "dts-cdc";

    // ------------------------------------------------------------------ connection and consumer

    public static final ConfigOption<String> SERVER = ConfigOptions.key("dts.server").stringType().noDefaultValue()
            .withDescription("Gateway address: host:port, grpc://host:port or grpc+tls://host:port. The gateway"
                    + " user ('username', 'password') and 'tls.ca-cert' are the options of the setats connector.");
    public static final ConfigOption<String> TOPIC = ConfigOptions.key("topic").stringType().noDefaultValue()
            .withDescription("The subscription channel to read.");
    public static final ConfigOption<String> SID = ConfigOptions.key("dts.sid").stringType().noDefaultValue()
            .withDescription("Consumer group of the channel.");
    public static final ConfigOption<String> USER = ConfigOptions.key("dts.user").stringType().noDefaultValue()
            .withDescription("User of the consumer group (setats subscription create-group), not the gateway user ('username').");
    public static final ConfigOption<String> PASSWORD = ConfigOptions.key("dts.password").stringType().noDefaultValue()
            .withDescription("Password of 'dts.user' in the consumer group, not the gateway user's ('password').");

    // The gateway connection's own options are those of the setats connector (SPEC section 14):
    // SetatsConnectorOptions.USERNAME ('username'), PASSWORD ('password'), TLS_CA_CERT ('tls.ca-cert').
    public static final ConfigOption<String> CHECKPOINT = ConfigOptions.key("dts.checkpoint").stringType().noDefaultValue()
            .withDescription("Start at the first record at or after this time, unix seconds, when the group has no committed position.");

    // ------------------------------------------------------------------ format

    public static final ConfigOption<String> FORMAT = ConfigOptions.key("format").stringType().noDefaultValue()
            .withDescription("Must be 'dts-cdc'.");
    public static final ConfigOption<String> TABLE_NAME = ConfigOptions.key("dts-cdc.table.name").stringType().noDefaultValue()
            .withDescription("Table(s) to read: db.table, a comma list, or regexes; empty = every table of the channel.");
}
