package io.setats.flink.dts;

import io.setats.flink.client.GatewayClient;
import io.setats.proto.v1.ConsumerCredentials;

import java.io.Serializable;
import java.util.Objects;

/**
 * DtsConfig is what a {@code dts} source needs to reach its channel: the gateway address ({@code
 * dts.server}), the channel ({@code topic}), the consumer group and user ({@code dts.sid}, {@code
 * dts.user}, {@code dts.password}) and the start time ({@code dts.checkpoint}, unix seconds, or
 * null). The consumer credentials travel inside every channel read and commit (SPEC section 11).
 */
public final class DtsConfig implements Serializable {
    private static final long serialVersionUID = 1L;

    private final String server;
    private final String topic;
    private final String sid;
    private final String user;
    private final String password;
    private final Long checkpointSeconds;

    public DtsConfig(String server, String topic, String sid, String user, String password, Long checkpointSeconds) {
        this.server = Objects.requireNonNull(server, "dts.server");
        this.topic = Objects.requireNonNull(topic, "topic");
        this.sid = Objects.requireNonNull(sid, "dts.sid");
        this.user = Objects.requireNonNull(user, "dts.user");
        this.password = password == null ? "" : password;
        this.checkpointSeconds = checkpointSeconds;
    }

    public String server() {
        return server;
    }

    public String topic() {
        return topic;
    }

    public String sid() {
        return sid;
    }

    public String user() {
        return user;
    }

    /** Start time in unix seconds, or null (the group's committed position, else the end). */
    public Long checkpointSeconds() {
        return checkpointSeconds;
    }

    public ConsumerCredentials credentials() {
        return ConsumerCredentials.newBuilder().setGroup(sid).setUser(user).setPassword(password).build();
    }

    /** Opens a gateway client (the connector's one connection path). */
    public GatewayClient connect() {
        return GatewayClient.connect(server, null);
    }

    @Override
    public String toString() {
        return "channel " + topic + " on " + server + " (group " + sid + ", user " + user + ")";
    }
}
