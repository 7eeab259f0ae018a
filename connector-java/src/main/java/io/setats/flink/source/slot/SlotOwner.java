package io.setats.flink.source.slot;

import org.apache.flink.metrics.MetricGroup;

import java.util.Map;

/**
 * SlotOwner names the job that owns a slot (SPEC section 8: one running job per slot): the Flink
 * job id, which the enumerator (JobManager) and every reader (TaskManagers) find in their metric
 * group's scope variables ({@code <job_id>}) and which stays the same across failovers of the job.
 * When a metric group does not carry it (an unregistered group), the owner is {@code
 * setats-cdc:<slot>}: the slot still works, but two jobs without job ids cannot be told apart.
 */
public final class SlotOwner {

    static final String JOB_ID_VARIABLE = "<job_id>";

    private SlotOwner() {}

    /** The owner id for slot {@code slot} of a job whose component has metric group {@code group}. */
    public static String of(MetricGroup group, String slot) {
        Map<String, String> vars = group == null ? null : group.getAllVariables();
        String id = vars == null ? null : vars.get(JOB_ID_VARIABLE);
        if (id == null || id.isEmpty()) {
            return "setats-cdc:" + slot;
        }
        return id;
    }
}
