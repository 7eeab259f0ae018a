-- pgbench_accounts from PostgreSQL into a setats table, through Flink: a bounded JDBC scan
-- (split on aid over ${PG_SCAN_PARTITIONS} parallel readers) upserted by the setats sink. Run once
-- after `pgbench -i` (every row a +I) and again after `pgbench -t` (the merge turns changed rows
-- into -U/+U pairs and leaves unchanged rows out of the changelog).

SET 'parallelism.default' = '${PG_SCAN_PARTITIONS:-2}';

CREATE TABLE pg_accounts (
  aid INT,
  bid INT,
  abalance INT,
  filler STRING,
  PRIMARY KEY (aid) NOT ENFORCED
) WITH (
  'connector' = 'jdbc',
  'url' = '${PG_JDBC_URL}',
  'table-name' = 'pgbench_accounts',
  'username' = '${PG_USER:-postgres}',
  'password' = '${PG_PASSWORD:-postgres}',
  'scan.partition.column' = 'aid',
  'scan.partition.num' = '${PG_SCAN_PARTITIONS:-2}',
  'scan.partition.lower-bound' = '1',
  'scan.partition.upper-bound' = '${PG_ACCOUNTS}',
  'scan.fetch-size' = '5000'
);

CREATE TABLE setats_accounts (
  aid INT,
  bid INT,
  abalance INT,
  filler STRING,
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

INSERT INTO setats_accounts SELECT aid, bid, abalance, filler FROM pg_accounts;
