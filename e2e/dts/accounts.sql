-- The seed's dts SQL job (dts-flink-connector.txt), its placeholders replaced: the changelog of
-- public.pgbench_accounts from the subscription channel, printed with its RowKinds.
-- e2e/dts/check.py folds it and compares it with PostgreSQL.

SET 'parallelism.default' = '1';

create table `dts` (
 `ts` TIMESTAMP(3) METADATA FROM 'timestamp',
 `aid` bigint,
 `bid` bigint,
 `abalance` bigint,
 WATERMARK FOR ts AS ts - INTERVAL '5' SECOND
) with (
'connector' = 'dts',
'dts.server' = '${SETATS_MANAGER_URL}',
'topic' = '${DTS_TOPIC}',
'dts.sid' = '${DTS_SID}',
'dts.user' = '${DTS_USER}',
'dts.password' = '${DTS_PASSWORD}',
'dts.checkpoint' = '${DTS_CHECKPOINT}',
'dts-cdc.table.name' = 'public.pgbench_accounts',
'format' = 'dts-cdc');

CREATE TABLE changelog_print (
  aid BIGINT,
  bid BIGINT,
  abalance BIGINT
) WITH ('connector' = 'print');

INSERT INTO changelog_print SELECT aid, bid, abalance FROM `dts`;
