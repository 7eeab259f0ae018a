package io.setats.flink.packaging;

import org.apache.flink.configuration.Configuration;
import org.apache.flink.table.api.EnvironmentSettings;
import org.apache.flink.table.api.TableEnvironment;

/**
 * The job of {@link ShadedJarLoadITCase}, run in a forked JVM whose class path holds Flink, the
 * shaded connector jar and foreign jars (unshaded Netty 4.1.76, Hadoop 3 client) -- never the
 * connector's classes or its unshaded dependencies. Only Flink SQL is used, so the connector is
 * found through the jar's factory service file like in a Flink distribution's lib/.
 *
 * <p>Arguments: manager-url warehouse table bulk-rows stream-rows-per-second stream-seconds.
 * Writes ids 1..bulk as fast as it can (parallelism 2, 10 s checkpoints), then ids bulk+1.. at
 * the given rate for the given seconds. Exit 0 when both jobs finished.
 */
public final class ShadedJarLoadJob {

    private ShadedJarLoadJob() {}

    public static void main(String[] args) throws Exception {
        String url = args[0];
        String warehouse = args[1];
        String table = args[2];
        long bulk = Long.parseLong(args[3]);
        long rate = Long.parseLong(args[4]);
        long seconds = Long.parseLong(args[5]);

        Configuration conf = new Configuration();
        conf.setString("parallelism.default", "2");
        conf.setString("execution.checkpointing.interval", "10s");
        conf.setString("taskmanager.numberOfTaskSlots", "4");
        TableEnvironment t = TableEnvironment.create(EnvironmentSettings.newInstance().inStreamingMode().withConfiguration(conf).build());
        t.executeSql(
                "CREATE TABLE dst (id BIGINT, name STRING, address STRING, PRIMARY KEY (id) NOT ENFORCED) WITH ("
                        + "'connector' = 'setats', 'manager-url' = '" + url + "', 'catalog-type' = 'hadoop', "
                        + "'catalog-name' = 'setats', 'catalog-database' = 'load', 'catalog-table' = '" + table + "', "
                        + "'warehouse' = '" + warehouse + "', 'bucket' = '4')");
        t.executeSql(
                "CREATE TABLE bulk_src (id BIGINT, name STRING, address STRING) WITH ('connector' = 'datagen', "
                        + "'number-of-rows' = '" + bulk + "', 'fields.id.kind' = 'sequence', 'fields.id.start' = '1', "
                        + "'fields.id.end' = '" + bulk + "', 'fields.name.length' = '8', 'fields.address.length' = '24')");
        long t0 = System.nanoTime();
        t.executeSql("INSERT INTO dst SELECT * FROM bulk_src").await();
        System.out.printf("load: bulk %d rows in %.1f s%n", bulk, (System.nanoTime() - t0) / 1e9);

        long streamRows = rate * seconds;
        t.executeSql(
                "CREATE TABLE paced (id BIGINT, name STRING, address STRING) WITH ('connector' = 'datagen', "
                        + "'rows-per-second' = '" + rate + "', 'number-of-rows' = '" + streamRows + "', "
                        + "'fields.id.kind' = 'sequence', 'fields.id.start' = '" + (bulk + 1) + "', "
                        + "'fields.id.end' = '" + (bulk + streamRows) + "', 'fields.name.length' = '8', "
                        + "'fields.address.length' = '24')");
        t0 = System.nanoTime();
        t.executeSql("INSERT INTO dst SELECT * FROM paced").await();
        System.out.printf("load: stream %d rows at %d rows/s in %.1f s%n", streamRows, rate, (System.nanoTime() - t0) / 1e9);
    }
}
