-- The seed's CDC read job (setats-cdc-read), run by `make demo`: reads the changelog of
-- testdb.demo_setats_table1 from the earliest offset and prints every row with its RowKind
-- (+I, -U, +U, -D). The seed's debugging sink is 'logger' (TaskManager log); here it is Flink's
-- built-in 'print', which writes to the runner's standard output.
-- The job is unbounded: the demo stops it once the expected number of rows has been printed.

CREATE TABLE `demo_setats_table1` (
  `id` STRING,
  `dt` STRING,
  `name` STRING,
  `address` STRING,
  PRIMARY KEY (`id`, `dt`) NOT ENFORCED
) WITH (
  'connector' = 'setats-cdc',
  'warehouse' = '${SETATS_WAREHOUSE}',
  'catalog-name' = 'setats',
  'catalog-type' = 'hadoop',
  'catalog-database' = 'testdb',
  'catalog-table' = 'demo_setats_table1',
  'manager-url' = '${SETATS_MANAGER_URL}',
  'username' = '${SETATS_USERNAME:-}',
  'password' = '${SETATS_PASSWORD:-}',
  'bucket.discovery-interval' = '30s',
  'startup.mode' = 'earliest'
);

CREATE TABLE `print_sink_table` (
  `id` STRING,
  `dt` STRING,
  `name` STRING,
  `address` STRING
) WITH (
  'connector' = 'print',
  'print-identifier' = 'DebugData'
);

INSERT INTO `print_sink_table`
SELECT `id`, `dt`, `name`, `address`
FROM `demo_setats_table1`;
