-- Streaming CDC into setats (shared/cases/e2e-pgbench.md, "for a streaming CDC source"): the changes
-- of public.pgbench_accounts read from the subscription channel (dts, format dts-cdc, from the time
-- pgbench started, its own consumer group) upserted by the setats sink into the table that
-- e2e/pgbench/load.sql filled before pgbench ran; in the same job, that table's changelog from its
-- earliest offsets (the setats catalog's table, streaming), printed with its RowKinds.
-- e2e/dts/check_stream.py checks it: one +I per account (the load), then one -U/+U pair per
-- pgbench transaction whose delta is not 0 (SPEC section 4: an update equal to the stored row
-- emits nothing).
--
-- The sink declares aid, bid and abalance only: filler keeps the value the load stored (SPEC
-- section 3). The dts table declares pgbench_accounts' primary key: without it, Flink's planner puts
-- an upsert materializer before the sink (EXPLAIN shows upsertMaterialize=[true]); its state would
-- not hold the loaded rows (that variant was not run). 'NONE' below keeps it out either way.
-- The sink needs no Flink-side state: the gateway's merge compares with the stored row (SPEC 4).

SET 'parallelism.default' = '1';
SET 'table.exec.sink.upsert-materialize' = 'NONE';

CREATE TABLE dts_accounts (
  aid INT,
  bid INT,
  abalance INT,
  PRIMARY KEY (aid) NOT ENFORCED
) WITH (
  'connector' = 'dts',
  'dts.server' = '${SETATS_MANAGER_URL}',
  'topic' = '${DTS_TOPIC}',
  'dts.sid' = '${DTS_STREAM_SID}',
  'dts.user' = '${DTS_USER}',
  'dts.password' = '${DTS_PASSWORD}',
  'dts.checkpoint' = '${DTS_CHECKPOINT}',
  'dts-cdc.table.name' = 'public.pgbench_accounts',
  'format' = 'dts-cdc'
);

CREATE TABLE setats_accounts (
  aid INT,
  bid INT,
  abalance INT,
  PRIMARY KEY (aid) NOT ENFORCED
) WITH (
  'connector' = 'setats',
  'manager-url' = '${SETATS_MANAGER_URL}',
  'warehouse' = '${SETATS_WAREHOUSE}',
  'catalog-type' = 'hadoop',
  'catalog-name' = 'setats',
  'catalog-database' = 'pgbench',
  'catalog-table' = 'pgbench_accounts',
  'bucket' = '${SETATS_BUCKETS:-4}',
  'setats.sink.flush-interval' = '1s'
);

-- The table's changelog through the setats catalog (no second DDL of the table): reading a catalog
-- table in streaming mode is the setats-cdc source (SPEC section 12), its options as a hint.
CREATE CATALOG setats_catalog WITH (
  'type' = 'setats',
  'manager-url' = '${SETATS_MANAGER_URL}',
  'warehouse' = '${SETATS_WAREHOUSE}',
  'catalog-type' = 'hadoop',
  'catalog-name' = 'setats'
);

CREATE TABLE changelog_print (
  aid INT,
  bid INT,
  abalance INT,
  filler STRING
) WITH ('connector' = 'print');

EXECUTE STATEMENT SET BEGIN
  INSERT INTO setats_accounts SELECT aid, bid, abalance FROM dts_accounts;
  INSERT INTO changelog_print SELECT aid, bid, abalance, filler
    FROM setats_catalog.pgbench.pgbench_accounts /*+ OPTIONS('startup.mode' = 'earliest') */;
END;
