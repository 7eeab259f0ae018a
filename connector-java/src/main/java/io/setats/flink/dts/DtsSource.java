package io.setats.flink.dts;

import io.setats.flink.client.ConnectionOptions;
import io.setats.flink.dts.source.DtsDeserializationSchema;
import io.setats.flink.dts.typeutils.DtsRecordTypeInfo;

import org.apache.flink.api.common.typeinfo.TypeInformation;
import org.apache.flink.util.Collector;

/**
 * Entry point of the DataStream API of the {@code dts} connector (seed {@code
 * dts-flink-connector.txt}):
 *
 * <pre>{@code
 * DataStream<DtsRecord> records = env.fromSource(
 *     DtsSource.builder()
 *         .setBrokerUrl("127.0.0.1:8815")   // dts.server: the gateway
 *         .setTopic("orders_channel")       // the channel
 *         .setSid("dts_group")              // consumer group
 *         .setUser("dtstest").setPassword("Test123456")   // a user of the consumer group
 *         .setCheckpoint(1624440043L)       // unix seconds; optional
 *         .build(),
 *     WatermarkStrategy.noWatermarks(), "dts");
 * records.print();   // DtsRecord {operationType [HEARTBEAT], checkpoint [0@...]}
 * }</pre>
 *
 * <p>A gateway with a {@code --users-file} and TLS also needs the gateway connection's own
 * credentials, kept apart from the consumer group's: {@code
 * .setBrokerUrl("grpc+tls://gw:8815").setGatewayCredentials("etl", "etl-password")
 * .setTlsCaCert("/etc/setats/ca.pem")} (the {@code username}, {@code password} and {@code
 * tls.ca-cert} of the other connectors; the gateway user needs {@code read} on the channel).
 */
public final class DtsSource {
    private DtsSource() {}

    /** A builder of a source of {@link DtsRecord}s. */
    public static Builder<DtsRecord> builder() {
        return new Builder<>(new RecordSchema());
    }

    /** Builder of {@link io.setats.flink.dts.source.DtsSource}. */
    public static final class Builder<T> {
        private String server;
        private String gatewayUser;
        private String gatewayPassword;
        private String tlsCaCert;
        private ConnectionOptions connection;
        private String topic;
        private String sid;
        private String user;
        private String password;
        private Long checkpoint;
        private DtsDeserializationSchema<T> schema;

        Builder(DtsDeserializationSchema<T> schema) {
            this.schema = schema;
        }

        /** The gateway address ({@code dts.server}): host:port or grpc://host:port. */
        public Builder<T> setBrokerUrl(String url) {
            this.server = url;
            return this;
        }

        public Builder<T> setServer(String url) {
            return setBrokerUrl(url);
        }

        /**
         * The gateway user of the gateway's {@code --users-file} and its password ({@code
         * username}, {@code password}; HTTP Basic credentials on every call). Not the consumer
         * group's user: that is {@link #setUser}/{@link #setPassword}. Unset: anonymous.
         */
        public Builder<T> setGatewayCredentials(String username, String password) {
            this.gatewayUser = username;
            this.gatewayPassword = password;
            return this;
        }

        /** PEM file of CA certificates for a {@code grpc+tls://} broker url ({@code tls.ca-cert}). */
        public Builder<T> setTlsCaCert(String path) {
            this.tlsCaCert = path;
            return this;
        }

        /**
         * The whole gateway connection at once (address, gateway user, TLS CA); replaces {@link
         * #setBrokerUrl}, {@link #setGatewayCredentials} and {@link #setTlsCaCert}.
         */
        public Builder<T> setConnection(ConnectionOptions connection) {
            this.connection = connection;
            return this;
        }

        /** The channel (the seed's topic). */
        public Builder<T> setTopic(String topic) {
            this.topic = topic;
            return this;
        }

        /** The consumer group ({@code dts.sid}). */
        public Builder<T> setSid(String sid) {
            this.sid = sid;
            return this;
        }

        /** A user of the consumer group ({@code dts.user}). */
        public Builder<T> setUser(String user) {
            this.user = user;
            return this;
        }

        /** The password of the consumer group's user ({@code dts.password}). */
        public Builder<T> setPassword(String password) {
            this.password = password;
            return this;
        }

        /** Start at the first record at or after this time, unix seconds ({@code dts.checkpoint}). */
        public Builder<T> setCheckpoint(long unixSeconds) {
            this.checkpoint = unixSeconds;
            return this;
        }

        /** Another output type. */
        @SuppressWarnings("unchecked")
        public <R> Builder<R> setDeserializer(DtsDeserializationSchema<R> schema) {
            Builder<R> b = (Builder<R>) this;
            b.schema = schema;
            return b;
        }

        /**
         * @throws IllegalArgumentException naming a missing setting, or a wrong combination of
         *     the gateway connection's (only one of gateway user and password; a TLS CA with a
         *     plaintext broker url)
         */
        public io.setats.flink.dts.source.DtsSource<T> build() {
            ConnectionOptions conn = connection;
            if (conn == null) {
                require(server, "broker url (dts.server)");
                conn = ConnectionOptions.builder().managerUrl(server).credentials(gatewayUser, gatewayPassword)
                        .tlsCaCert(tlsCaCert).build();
            }
            require(topic, "topic");
            require(sid, "sid (dts.sid)");
            require(user, "user (dts.user)");
            return new io.setats.flink.dts.source.DtsSource<>(new DtsConfig(conn, topic, sid, user, password, checkpoint), schema);
        }

        private static void require(String v, String what) {
            if (v == null || v.isEmpty()) {
                throw new IllegalArgumentException("DtsSource: the " + what + " is not set");
            }
        }
    }

    /** Passes every record through; its type is {@link DtsRecordTypeInfo} (no Kryo). */
    static final class RecordSchema implements DtsDeserializationSchema<DtsRecord> {
        private static final long serialVersionUID = 1L;

        @Override
        public void deserialize(DtsRecord record, Collector<DtsRecord> out) {
            out.collect(record);
        }

        @Override
        public TypeInformation<DtsRecord> getProducedType() {
            return DtsRecordTypeInfo.INSTANCE;
        }
    }
}
