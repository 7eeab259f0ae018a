package io.setats.flink.sink;

import org.apache.flink.api.common.typeinfo.Types;
import org.apache.flink.streaming.api.datastream.DataStream;
import org.apache.flink.streaming.api.environment.StreamExecutionEnvironment;
import org.apache.flink.streaming.api.functions.sink.DiscardingSink;
import org.apache.flink.streaming.api.graph.StreamEdge;
import org.apache.flink.streaming.api.graph.StreamGraph;
import org.apache.flink.streaming.api.graph.StreamNode;

import org.junit.jupiter.api.Test;

import static org.assertj.core.api.Assertions.assertThat;

/**
 * SetatsSink.withShuffleBufferTimeout: the edge into the writers gets the sink's (lower) buffer
 * timeout in the job graph Flink builds, through a pass-through chained to the operator before
 * it, and a job's own choices are kept. SinkSendPolicyITCase checks the graph that {@code sinkTo}
 * builds with the real sink.
 */
class ShuffleBufferTimeoutTest {

    /** A map, then (optionally) a partitioning, then the limit, then the shuffle to a sink. */
    private static long edgeTimeout(long jobDefault, Long mapOwn, boolean partitionFirst, long limit) {
        StreamExecutionEnvironment env = StreamExecutionEnvironment.getExecutionEnvironment();
        env.setBufferTimeout(jobDefault);
        env.setParallelism(2);
        DataStream<Long> in = env.fromSequence(0, 10).map(x -> x).returns(Types.LONG).name("before-sink");
        if (mapOwn != null) {
            ((org.apache.flink.streaming.api.datastream.SingleOutputStreamOperator<Long>) in)
                    .setBufferTimeout(mapOwn);
        }
        if (partitionFirst) {
            in = in.rebalance();
        }
        SetatsSink.withShuffleBufferTimeout(in, limit).partitionCustom((k, n) -> (int) (k % n), x -> x).addSink(new DiscardingSink<>()).name("writers");
        StreamGraph g = env.getStreamGraph();
        for (StreamNode n : g.getStreamNodes()) {
            if (n.getOperatorName().contains("writers")) {
                StreamEdge e = n.getInEdges().get(0);
                return e.getBufferTimeout();
            }
        }
        throw new AssertionError("no writers node");
    }

    @Test
    void lowersTheJobDefaultOnTheEdgeIntoTheWriters() {
        assertThat(edgeTimeout(100, null, false, 5)).isEqualTo(5);
        assertThat(edgeTimeout(100, null, false, 0)).isEqualTo(0);
        // Behind a partitioning the pass-through would need a network edge of its own: left alone.
        assertThat(edgeTimeout(100, null, true, 5)).isEqualTo(100);
    }

    @Test
    void keepsWhatTheJobChose() {
        assertThat(edgeTimeout(100, 50L, false, 5)).as("operator's own").isEqualTo(50);
        assertThat(edgeTimeout(2, null, false, 5)).as("lower job default").isEqualTo(2);
        assertThat(edgeTimeout(-1, null, false, 5)).as("periodic flushing off").isEqualTo(-1);
        assertThat(edgeTimeout(100, null, false, -1)).as("no limit").isEqualTo(100);
    }
}
