package io.setats.flink.dts;

import io.setats.flink.client.ConnectionOptions;
import io.setats.flink.client.GatewayClient;
import io.setats.proto.v1.ConsumerCredentials;

import java.io.Serializable;
import java.util.Objects;

/**
 * DtsConfig is what a {@code dts} source needs to reach its channel (SPEC sections 11 and 14). Two
 * sets of credentials, kept apart:
 *
 * <ul>
 *   <li>the <b>gateway connection</b>: the address ({@code dts.server}, {@code grpc://} or {@code
 *       grpc+tls://}), the gateway user of its {@code --users-file} ({@code username}, {@code
 *       password}, sent as HTTP Basic credentials on every call; it needs {@code read} on the
 *       channel) and the TLS CA ({@code tls.ca-cert}), as {@link ConnectionOptions}, the same as
 *       the {@code setats} and {@code setats-cdc} connectors;
 *   <li>the <b>consumer group</b>: the channel ({@code topic}), the group ({@code dts.sid}) and a
 *       user of that group with its password ({@code dts.user}, {@code dts.password}), created
 *       with {@code setats subscription create-group}; they travel inside every channel read and
 *       commit.
 * </ul>
 *
 * <p>Plus the start time ({@code dts.checkpoint}, unix seconds, or null). {@link #toString()}
 * shows neither password.
 */
public final class DtsConfig implements Serializable {
    private static final long serialVersionUID = 2L;

    private final ConnectionOptions connection;
    private final String topic;
    private final String sid;
    private final String user;
    private final String password;
    private final Long checkpointSeconds;

    /**
     * @param connection the gateway connection (dts.server, username, password, tls.ca-cert)
     * @param topic the channel
     * @param sid the consumer group
     * @param user a user of the consumer group (dts.user)
     * @param password its password (dts.password; null: empty)
     * @param checkpointSeconds start time in unix seconds, or null
     */
    public DtsConfig(ConnectionOptions connection, String topic, String sid, String user, String password, Long checkpointSeconds) {
        this.connection = Objects.requireNonNull(connection, "dts.server");
        this.topic = Objects.requireNonNull(topic, "topic");
        this.sid = Objects.requireNonNull(sid, "dts.sid");
        this.user = Objects.requireNonNull(user, "dts.user");
        this.password = password == null ? "" : password;
        this.checkpointSeconds = checkpointSeconds;
    }

    /** An anonymous plaintext or JVM-trust-store TLS connection to {@code server}. */
    public DtsConfig(String server, String topic, String sid, String user, String password, Long checkpointSeconds) {
        this(ConnectionOptions.of(Objects.requireNonNull(server, "dts.server")), topic, sid, user, password, checkpointSeconds);
    }

    /** The gateway address as given ({@code dts.server}). */
    public String server() {
        return connection.managerUrl().original();
    }

    /** The gateway connection: address, gateway user, TLS CA. */
    public ConnectionOptions connection() {
        return connection;
    }

    public String topic() {
        return topic;
    }

    public String sid() {
        return sid;
    }

    /** The consumer group's user ({@code dts.user}), not the gateway user. */
    public String user() {
        return user;
    }

    /** Start time in unix seconds, or null (the group's committed position, else the end). */
    public Long checkpointSeconds() {
        return checkpointSeconds;
    }

    /** The consumer group credentials every channel read and commit carries. */
    public ConsumerCredentials credentials() {
        return ConsumerCredentials.newBuilder().setGroup(sid).setUser(user).setPassword(password).build();
    }

    /** Opens a gateway client with the connection options (the connector's one connection path). */
    public GatewayClient connect() {
        return GatewayClient.connect(connection, null);
    }

    @Override
    public String toString() {
        return "channel " + topic + " on " + connection + " (group " + sid + ", user " + user + ")";
    }
}
