package io.setats.flink.dts;

/**
 * DtsCheckpoint is a parsed checkpoint string (SPEC section 11): {@code
 * 0@<id>@<source position>@<source timestamp ms>}, e.g. {@code 0@12006303@289540@2688@1625045211000}.
 * The position may itself contain '@': the id is the field after {@code 0@}, the timestamp the
 * field after the last '@', the position everything between.
 */
public final class DtsCheckpoint {
    private final long id;
    private final String position;
    private final long timestampMs;

    public DtsCheckpoint(long id, String position, long timestampMs) {
        this.id = id;
        this.position = position;
        this.timestampMs = timestampMs;
    }

    public static String format(long id, String position, long timestampMs) {
        return "0@" + id + "@" + position + "@" + timestampMs;
    }

    /** Parses a checkpoint string; a malformed one is an IllegalArgumentException quoting it. */
    public static DtsCheckpoint parse(String s) {
        if (s == null || !s.startsWith("0@")) {
            throw bad(s, "does not start with 0@");
        }
        String rest = s.substring(2);
        int at = rest.indexOf('@');
        int last = rest.lastIndexOf('@');
        if (at < 0 || last == at) {
            throw bad(s, "missing fields");
        }
        try {
            long id = Long.parseLong(rest.substring(0, at));
            long ts = Long.parseLong(rest.substring(last + 1));
            if (id < 0) {
                throw bad(s, "negative id");
            }
            return new DtsCheckpoint(id, rest.substring(at + 1, last), ts);
        } catch (NumberFormatException e) {
            throw bad(s, e.getMessage());
        }
    }

    private static IllegalArgumentException bad(String s, String why) {
        return new IllegalArgumentException(
                "checkpoint '" + s + "': " + why + " (want 0@<id>@<source position>@<source timestamp ms>)");
    }

    public long getId() {
        return id;
    }

    public String getPosition() {
        return position;
    }

    public long getTimestampMs() {
        return timestampMs;
    }

    @Override
    public String toString() {
        return format(id, position, timestampMs);
    }
}
