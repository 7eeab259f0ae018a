package io.setats.flink.dts.format;

import java.io.Serializable;
import java.util.ArrayList;
import java.util.List;
import java.util.regex.Pattern;
import java.util.regex.PatternSyntaxException;

/**
 * DtsTableFilter is the value of {@code dts-cdc.table.name}: a comma list of entries, each an exact
 * object name {@code db.table} (the seed's one table) or, when it holds a regex metacharacter
 * other than '.', a Java regex the whole object name must match (e.g. {@code shop\.order_.*}).
 * Empty = every table.
 */
public final class DtsTableFilter implements Serializable {
    private static final long serialVersionUID = 1L;
    private static final Pattern META = Pattern.compile("[\\\\*+?\\[\\](){}|^$]");

    private final List<String> exact = new ArrayList<>();
    private final List<Pattern> patterns = new ArrayList<>();

    private DtsTableFilter() {}

    /** @throws IllegalArgumentException naming an entry that is not a valid regex */
    public static DtsTableFilter parse(String spec) {
        DtsTableFilter f = new DtsTableFilter();
        if (spec == null) {
            return f;
        }
        for (String e : spec.split(",")) {
            e = e.trim();
            if (e.isEmpty()) {
                continue;
            }
            if (META.matcher(e).find()) {
                try {
                    f.patterns.add(Pattern.compile(e));
                } catch (PatternSyntaxException ex) {
                    throw new IllegalArgumentException("dts-cdc.table.name entry '" + e + "' is not a valid regex: " + ex.getDescription(), ex);
                }
            } else {
                f.exact.add(e);
            }
        }
        return f;
    }

    public boolean matches(String object) {
        if (object == null) {
            return false;
        }
        if (exact.isEmpty() && patterns.isEmpty()) {
            return true;
        }
        for (String e : exact) {
            if (e.equalsIgnoreCase(object)) {
                return true;
            }
        }
        for (Pattern p : patterns) {
            if (p.matcher(object).matches()) {
                return true;
            }
        }
        return false;
    }
}
