package io.setats.flink.dts;

import org.apache.flink.api.common.eventtime.WatermarkStrategy;
import org.apache.flink.api.common.functions.MapFunction;
import org.apache.flink.api.java.utils.ParameterTool;
import org.apache.flink.core.execution.JobClient;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;

/**
 * The seed's DataStream example: reads a channel and prints every record ({@code DtsRecord
 * {operationType [HEARTBEAT], checkpoint [0@...]}}).
 *
 * <pre>
 * --broker-url 127.0.0.1:8815 --topic orders_channel --sid dts_group --user dtstest --password Test123456 --checkpoint 1624440043
 * </pre>
 *
 * <p>A gateway with a users file and TLS: {@code --broker-url grpc+tls://gw:8815 --username etl
 * --gateway-password etl-password --tls-ca-cert ca.pem} (the gateway user; {@code --user} and
 * {@code --password} stay the consumer group's).
 *
 * <p>{@code --seconds N} stops the job N seconds after its first record was printed (default: run
 * until killed), or after {@code --first-record-timeout-seconds} (default 300) if none came: the
 * time a loaded machine needs to start the job does not eat into the N seconds. Counting from the
 * first record works in a local run (the job in this JVM's MiniCluster); against a remote cluster
 * the job stops after the timeout.
 * {@code --checkpoint-interval MS} enables Flink checkpoints (the group's position is committed
 * when one completes).
 */
public final class DtsExample {
    private DtsExample() {}

    /** System.nanoTime() when the first record passed {@link MarkFirstRecord}; 0 before (local runs). */
    private static volatile long firstRecordNanos;

    /** Passes records on unchanged and notes when the first one came. */
    private static final class MarkFirstRecord implements MapFunction<DtsRecord, DtsRecord> {
        private static final long serialVersionUID = 1L;

        @Override
        public DtsRecord map(DtsRecord r) {
            if (firstRecordNanos == 0) {
                firstRecordNanos = System.nanoTime();
            }
            return r;
        }
    }

    public static void main(String[] args) throws Exception {
        ParameterTool p = ParameterTool.fromArgs(args);
        DtsSource.Builder<DtsRecord> b = DtsSource.builder()
                .setBrokerUrl(p.getRequired("broker-url"))
                .setTopic(p.getRequired("topic"))
                .setSid(p.getRequired("sid"))
                .setUser(p.getRequired("user"))
                .setPassword(p.getRequired("password"));
        if (p.has("username")) {
            b.setGatewayCredentials(p.get("username"), p.getRequired("gateway-password"));
        }
        if (p.has("tls-ca-cert")) {
            b.setTlsCaCert(p.get("tls-ca-cert"));
        }
        if (p.has("checkpoint")) {
            b.setCheckpoint(p.getLong("checkpoint"));
        }
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setParallelism(1);
        if (p.has("checkpoint-interval")) {
            env.enableCheckpointing(p.getLong("checkpoint-interval"));
        }
        env.fromSource(b.build(), WatermarkStrategy.noWatermarks(), "dts")
                .uid("dts-source")
                .map(new MarkFirstRecord())
                .print();
        if (!p.has("seconds")) {
            env.execute("DtsExample");
            return;
        }
        JobClient job = env.executeAsync("DtsExample");
        long deadline = System.nanoTime() + p.getLong("first-record-timeout-seconds", 300) * 1_000_000_000L;
        while (firstRecordNanos == 0 && System.nanoTime() < deadline) {
            Thread.sleep(50);
        }
        Thread.sleep(p.getLong("seconds") * 1000);
        job.cancel().get();
        System.out.flush();
        System.exit(0);
    }
}
