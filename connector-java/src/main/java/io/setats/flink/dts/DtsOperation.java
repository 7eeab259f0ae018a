package io.setats.flink.dts;

/** The operation of a channel record (SPEC section 11), as the gateway names it. */
public enum DtsOperation {
    INSERT,
    UPDATE,
    DELETE,
    DDL,
    BEGIN,
    COMMIT,
    HEARTBEAT;

    /** Parses the gateway's name; an unknown one is an IllegalArgumentException naming it. */
    public static DtsOperation parse(String s) {
        try {
            return valueOf(s);
        } catch (IllegalArgumentException e) {
            throw new IllegalArgumentException("unknown channel record operation '" + s + "'", e);
        }
    }
}
