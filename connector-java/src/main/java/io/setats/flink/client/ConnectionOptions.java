package io.setats.flink.client;

import javax.annotation.Nullable;

import java.io.Serializable;
import java.nio.charset.StandardCharsets;
import java.util.Base64;
import java.util.Objects;

/**
 * ConnectionOptions is everything needed to reach one Setats gateway (SPEC sections 2 and 14): the
 * {@code manager-url}, the credentials of a user of the gateway's users file ({@code username},
 * {@code password}) and, for {@code grpc+tls://}, an optional PEM file of CA certificates to
 * trust ({@code tls.ca-cert}; default: the JVM's trust store). It is the one place every
 * connector piece (the {@code setats} sink, the {@code setats-cdc} source and any later factory)
 * takes its connection settings from; {@link GatewayClient#connect(ConnectionOptions,
 * io.setats.proto.v1.CatalogContext)} uses it.
 *
 * <p>Immutable and serializable (it travels inside sinks, sources and splits' configs). {@link
 * #toString()} never shows the password.
 */
public final class ConnectionOptions implements Serializable {

    private static final long serialVersionUID = 1L;

    private final ManagerUrl managerUrl;
    @Nullable private final String username;
    @Nullable private final String password;
    @Nullable private final String tlsCaCert;

    private ConnectionOptions(Builder b) {
        this.managerUrl = Objects.requireNonNull(b.managerUrl, "manager-url");
        this.username = emptyToNull(b.username);
        this.password = b.password;
        this.tlsCaCert = emptyToNull(b.tlsCaCert);
        if (username == null && password != null && !password.isEmpty()) {
            throw new IllegalArgumentException("'password' is set but 'username' is not: give both or neither");
        }
        if (username != null && password == null) {
            throw new IllegalArgumentException(
                    "'username' = '" + username + "' is set but 'password' is not: give both or neither");
        }
        if (username != null && username.contains(":")) {
            throw new IllegalArgumentException("'username' must not contain ':' (HTTP Basic credentials)");
        }
        if (tlsCaCert != null && !managerUrl.tls()) {
            throw new IllegalArgumentException(
                    "'tls.ca-cert' is set but 'manager-url' = '"
                            + managerUrl.original()
                            + "' is not grpc+tls://: use grpc+tls://host:port");
        }
    }

    private static String emptyToNull(String s) {
        return s == null || s.trim().isEmpty() ? null : s.trim();
    }

    /** Options with only a manager-url: anonymous, and the JVM's trust store for TLS. */
    public static ConnectionOptions of(String managerUrl) {
        return builder().managerUrl(managerUrl).build();
    }

    public static Builder builder() {
        return new Builder();
    }

    /** A builder starting from these options. */
    public Builder toBuilder() {
        Builder b = new Builder();
        b.managerUrl = managerUrl;
        b.username = username;
        b.password = password;
        b.tlsCaCert = tlsCaCert;
        return b;
    }

    public ManagerUrl managerUrl() {
        return managerUrl;
    }

    /** The user name, or null for anonymous calls. */
    @Nullable
    public String username() {
        return username;
    }

    /** The password (plain: sent over the channel as HTTP Basic credentials), null without user. */
    @Nullable
    public String password() {
        return password;
    }

    /** Path of a PEM file of CA certificates to trust, or null for the JVM's trust store. */
    @Nullable
    public String tlsCaCert() {
        return tlsCaCert;
    }

    /** Whether calls carry credentials. */
    public boolean hasCredentials() {
        return username != null;
    }

    /**
     * The value of the {@code authorization} header of each call: {@code Basic
     * base64(username:password)}; null without credentials.
     */
    @Nullable
    public String basicAuthorization() {
        if (username == null) {
            return null;
        }
        return "Basic "
                + Base64.getEncoder()
                        .encodeToString((username + ":" + password).getBytes(StandardCharsets.UTF_8));
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof ConnectionOptions)) {
            return false;
        }
        ConnectionOptions that = (ConnectionOptions) o;
        return managerUrl.equals(that.managerUrl)
                && Objects.equals(username, that.username)
                && Objects.equals(password, that.password)
                && Objects.equals(tlsCaCert, that.tlsCaCert);
    }

    @Override
    public int hashCode() {
        return Objects.hash(managerUrl, username, password, tlsCaCert);
    }

    /** {@code grpc+tls://host:port (user etl, ca /path)}; never the password. */
    @Override
    public String toString() {
        StringBuilder sb = new StringBuilder(managerUrl.toString());
        if (username != null || tlsCaCert != null) {
            sb.append(" (");
            if (username != null) {
                sb.append("user ").append(username);
            }
            if (tlsCaCert != null) {
                sb.append(username != null ? ", " : "").append("ca ").append(tlsCaCert);
            }
            sb.append(')');
        }
        return sb.toString();
    }

    /** Builder of {@link ConnectionOptions}; {@link #build()} checks the combination. */
    public static final class Builder {
        private ManagerUrl managerUrl;
        private String username;
        private String password;
        private String tlsCaCert;

        private Builder() {}

        /**
         * Sets the manager-url ({@code grpc://host:port}, {@code grpc+tls://host:port} or {@code
         * host:port}).
         *
         * @throws IllegalArgumentException when it is malformed
         */
        public Builder managerUrl(String managerUrl) {
            this.managerUrl = ManagerUrl.parse(managerUrl);
            return this;
        }

        public Builder managerUrl(ManagerUrl managerUrl) {
            this.managerUrl = Objects.requireNonNull(managerUrl);
            return this;
        }

        /** User and password of the gateway's users file (null or empty user: anonymous). */
        public Builder credentials(@Nullable String username, @Nullable String password) {
            this.username = username;
            this.password = password;
            return this;
        }

        /** PEM file of CA certificates trusted for {@code grpc+tls://} (null: JVM trust store). */
        public Builder tlsCaCert(@Nullable String path) {
            this.tlsCaCert = path;
            return this;
        }

        /**
         * Builds the options.
         *
         * @throws IllegalArgumentException when only one of username and password is set, or
         *     tls.ca-cert is set for a plaintext manager-url
         */
        public ConnectionOptions build() {
            if (managerUrl == null) {
                throw new IllegalArgumentException("'manager-url' is required");
            }
            return new ConnectionOptions(this);
        }
    }
}
