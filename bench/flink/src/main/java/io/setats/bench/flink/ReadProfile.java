package io.setats.bench.flink;

import java.io.File;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.util.concurrent.atomic.AtomicInteger;

/**
 * A wall-clock profile of each counting read from its first row to its last, with async-profiler
 * (Maven Central {@code tools.profiler:async-profiler}, loaded at run time, not a dependency):
 * {@code -Dbench.read-profile=DIR -Dbench.async-profiler-lib=.../linux-x64/libasyncProfiler.so
 * -Dbench.async-profiler-jar=...jar} writes {@code DIR/read-PID-N.collapsed} (all threads, 1 ms
 * interval, one line per stack with thread names); {@code -Dbench.read-profile-event} picks the
 * event ({@code wall}, the default: where threads wait too; {@code cpu}: where CPU goes).
 */
final class ReadProfile {
    private static final String DIR = System.getProperty("bench.read-profile", "");
    private static final String EVENT = System.getProperty("bench.read-profile-event", "wall");
    private static final AtomicInteger N = new AtomicInteger();
    private static Object profiler;
    private static Method execute;

    private ReadProfile() {}

    static boolean enabled() {
        return !DIR.isEmpty();
    }

    static void start() throws Exception {
        if (profiler == null) {
            URLClassLoader cl = new URLClassLoader(new URL[] {new File(System.getProperty("bench.async-profiler-jar")).toURI().toURL()},
                    ReadProfile.class.getClassLoader());
            Class<?> c = cl.loadClass("one.profiler.AsyncProfiler");
            profiler = c.getMethod("getInstance", String.class).invoke(null, System.getProperty("bench.async-profiler-lib"));
            execute = c.getMethod("execute", String.class);
        }
        execute.invoke(profiler, "start,event=" + EVENT + ",interval=1ms,threads");
    }

    static void stop() throws Exception {
        String f = DIR + "/read-" + ProcessHandle.current().pid() + "-" + N.incrementAndGet() + ".collapsed";
        execute.invoke(profiler, "stop,collapsed,threads,file=" + f);
        SystemRun.log("read profile: %s", f);
    }
}
