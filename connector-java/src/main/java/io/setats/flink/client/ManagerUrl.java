package io.setats.flink.client;

import java.io.Serializable;
import java.util.Locale;
import java.util.Objects;

/**
 * ManagerUrl is a parsed {@code manager-url} (SPEC sections 0 and 2): {@code grpc://host:port},
 * {@code grpc+tcp://host:port} (same as grpc), {@code grpc+tls://host:port} or {@code host:port}.
 * A missing port means {@link #DEFAULT_PORT}.
 */
public final class ManagerUrl implements Serializable {

    private static final long serialVersionUID = 1L;

    /** Port of {@code setats serve} when none is given (SPEC section 1). */
    public static final int DEFAULT_PORT = 8815;

    private final String original;
    private final String host;
    private final int port;
    private final boolean tls;

    private ManagerUrl(String original, String host, int port, boolean tls) {
        this.original = original;
        this.host = host;
        this.port = port;
        this.tls = tls;
    }

    /**
     * Parses a manager-url.
     *
     * @throws IllegalArgumentException naming the value and the accepted forms when it is malformed
     */
    public static ManagerUrl parse(String url) {
        if (url == null || url.trim().isEmpty()) {
            throw invalid(url, "empty");
        }
        String s = url.trim();
        boolean tls = false;
        int sep = s.indexOf("://");
        if (sep >= 0) {
            String scheme = s.substring(0, sep).toLowerCase(Locale.ROOT);
            switch (scheme) {
                case "grpc":
                case "grpc+tcp":
                    break;
                case "grpc+tls":
                    tls = true;
                    break;
                default:
                    throw invalid(url, "unknown scheme '" + scheme + "'");
            }
            s = s.substring(sep + 3);
        }
        if (s.endsWith("/")) {
            s = s.substring(0, s.length() - 1);
        }
        if (s.isEmpty() || s.contains("/")) {
            throw invalid(url, "expected host:port");
        }
        String host;
        int port = DEFAULT_PORT;
        if (s.startsWith("[")) { // [ipv6]:port
            int close = s.indexOf(']');
            if (close < 0) {
                throw invalid(url, "unclosed '['");
            }
            host = s.substring(1, close);
            String rest = s.substring(close + 1);
            if (!rest.isEmpty()) {
                if (!rest.startsWith(":")) {
                    throw invalid(url, "expected ':' after ']'");
                }
                port = parsePort(url, rest.substring(1));
            }
        } else {
            int colon = s.lastIndexOf(':');
            if (colon >= 0) {
                host = s.substring(0, colon);
                port = parsePort(url, s.substring(colon + 1));
            } else {
                host = s;
            }
        }
        if (host.isEmpty()) {
            throw invalid(url, "empty host");
        }
        return new ManagerUrl(url, host, port, tls);
    }

    private static int parsePort(String url, String p) {
        try {
            int port = Integer.parseInt(p);
            if (port <= 0 || port > 65535) {
                throw invalid(url, "port out of range: " + p);
            }
            return port;
        } catch (NumberFormatException e) {
            throw invalid(url, "bad port '" + p + "'");
        }
    }

    private static IllegalArgumentException invalid(String url, String why) {
        return new IllegalArgumentException(
                "invalid manager-url '"
                        + url
                        + "' ("
                        + why
                        + "); expected grpc://host:port, grpc+tls://host:port or host:port");
    }

    /** The value as the user wrote it. */
    public String original() {
        return original;
    }

    public String host() {
        return host;
    }

    public int port() {
        return port;
    }

    /** Whether the channel uses TLS ({@code grpc+tls://}). */
    public boolean tls() {
        return tls;
    }

    @Override
    public boolean equals(Object o) {
        if (!(o instanceof ManagerUrl)) {
            return false;
        }
        ManagerUrl that = (ManagerUrl) o;
        return port == that.port && tls == that.tls && host.equals(that.host);
    }

    @Override
    public int hashCode() {
        return Objects.hash(host, port, tls);
    }

    /** Canonical form: {@code grpc://host:port} or {@code grpc+tls://host:port}. */
    @Override
    public String toString() {
        String h = host.contains(":") ? "[" + host + "]" : host;
        return (tls ? "grpc+tls://" : "grpc://") + h + ":" + port;
    }
}
