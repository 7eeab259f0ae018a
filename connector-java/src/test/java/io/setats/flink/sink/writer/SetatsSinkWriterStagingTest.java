package io.setats.flink.sink.writer;

import org.junit.jupiter.params.ParameterizedTest;
import org.junit.jupiter.params.provider.Arguments;
import org.junit.jupiter.params.provider.MethodSource;

import java.util.ArrayList;
import java.util.HashSet;
import java.util.List;
import java.util.Set;
import java.util.stream.Stream;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * Which stagings exactly-once writers drop when a job restores (SPEC section 10), over sequences
 * of failovers (same sink, same commit user), savepoint restores (a rebuilt sink, a new commit
 * user) and rescales, with every way Flink may hand the writers' states to the new subtasks (a
 * writer may get another subtask's state, several, or none). For every restore: each restored
 * (commit user, subtask) is either staged for by a running writer (which drops its uncompleted
 * rows itself) or dropped by the writer that received it, never both (dropping a staging a
 * running writer uses fences that writer off) and never neither (its staged rows would stay until
 * the transaction timeout).
 *
 * <p>Regression test: writers used to take the commit user from their restored state, so after
 * a savepoint restore with a higher parallelism the writers without state staged under the new
 * sink's user and those with state under the old one; the next restore then left the old user's
 * staging of a subtask behind, or dropped it under a running writer.
 */
class SetatsSinkWriterStagingTest {

    /** One job start: the sink's commit user (a new one = the job was rebuilt) and parallelism. */
    static final class Start {
        final String user;
        final int parallelism;

        Start(String user, int parallelism) {
            this.user = user;
            this.parallelism = parallelism;
        }

        @Override
        public String toString() {
            return user + "@" + parallelism;
        }
    }

    static Stream<Arguments> histories() {
        return Stream.of(
                Arguments.of(List.of(new Start("A", 2), new Start("B", 4), new Start("B", 2))),
                Arguments.of(List.of(new Start("A", 4), new Start("B", 2), new Start("B", 4))),
                Arguments.of(List.of(new Start("A", 2), new Start("A", 3), new Start("B", 1), new Start("B", 3))),
                Arguments.of(List.of(new Start("A", 1), new Start("B", 3), new Start("C", 2), new Start("C", 4))),
                Arguments.of(List.of(new Start("A", 3), new Start("A", 3), new Start("B", 3))));
    }

    @ParameterizedTest
    @MethodSource("histories")
    void everyRestoredStagingIsOwnedOrDroppedOnce(List<Start> history) {
        // The states a job's checkpoint holds: one per writer, (its commit user, its subtask).
        List<List<SetatsWriterState>> checkpoints = new ArrayList<>();
        checkpoints.add(start(history.get(0), new ArrayList<>(), new int[0]));
        for (int h = 1; h < history.size(); h++) {
            Start next = history.get(h);
            List<List<SetatsWriterState>> nextCheckpoints = new ArrayList<>();
            for (List<SetatsWriterState> restored : checkpoints) {
                for (int[] assignment : assignments(restored.size(), next.parallelism)) {
                    nextCheckpoints.add(start(next, restored, assignment));
                }
            }
            // Keep the distinct outcomes (the writers' states) for the next restore.
            checkpoints = new ArrayList<>(new java.util.LinkedHashSet<>(nextCheckpoints));
        }
        assertThat(checkpoints).isNotEmpty();
    }

    /**
     * Starts the writers of {@code s}, writer {@code assignment[i]} receiving restored state i;
     * checks the invariant and returns the states the job checkpoints.
     */
    private static List<SetatsWriterState> start(Start s, List<SetatsWriterState> restored, int[] assignment) {
        Set<SetatsWriterState> staged = new HashSet<>();
        List<SetatsWriterState> dropped = new ArrayList<>();
        List<SetatsWriterState> states = new ArrayList<>();
        for (int w = 0; w < s.parallelism; w++) {
            List<SetatsWriterState> mine = new ArrayList<>();
            for (int i = 0; i < restored.size(); i++) {
                if (assignment[i] == w) {
                    mine.add(restored.get(i));
                }
            }
            String user = SetatsSinkWriter.stagingCommitUser(mine, s.user);
            SetatsWriterState own = new SetatsWriterState(user, w);
            staged.add(own);
            states.add(own);
            dropped.addAll(SetatsSinkWriter.abandonedStagings(mine, user, s.parallelism));
        }
        String what = "restore of " + restored + " into " + s + " (assignment " + java.util.Arrays.toString(assignment) + ")";
        for (SetatsWriterState r : restored) {
            boolean owned = staged.contains(r);
            long drops = dropped.stream().filter(r::equals).count();
            assertThat(owned || drops == 1)
                    .as("%s: %s is staged for by no writer and not dropped: left behind", what, r)
                    .isTrue();
            assertThat(owned && drops > 0)
                    .as("%s: %s is dropped while a running writer stages for it", what, r)
                    .isFalse();
        }
        return states;
    }

    /** Every map of n states to p writers. */
    private static List<int[]> assignments(int n, int p) {
        List<int[]> out = new ArrayList<>();
        int[] a = new int[n];
        while (true) {
            out.add(a.clone());
            int i = 0;
            while (i < n && ++a[i] == p) {
                a[i++] = 0;
            }
            if (i == n) {
                return out;
            }
        }
    }
}
