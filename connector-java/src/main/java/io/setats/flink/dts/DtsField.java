package io.setats.flink.dts;

import java.io.Serializable;
import java.util.Objects;

/**
 * One field of a channel record: its column name and record field type, a Flink SQL type string
 * of the source's type table (gateway/README.md "Data subscription"), e.g. {@code BIGINT}, {@code
 * STRING}, {@code DECIMAL(10,2)}, {@code TIMESTAMP(6)}.
 */
public final class DtsField implements Serializable {
    private static final long serialVersionUID = 1L;

    private final String name;
    private final String type;

    public DtsField(String name, String type) {
        this.name = name;
        this.type = type;
    }

    public String getName() {
        return name;
    }

    public String getType() {
        return type;
    }

    @Override
    public boolean equals(Object o) {
        return o instanceof DtsField && ((DtsField) o).name.equals(name) && ((DtsField) o).type.equals(type);
    }

    @Override
    public int hashCode() {
        return Objects.hash(name, type);
    }

    @Override
    public String toString() {
        return name + " " + type;
    }
}
