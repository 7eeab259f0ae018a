-- The seed's write job (Flink streaming write, setats-flink-write), run by `make demo`.
-- Placeholders filled: manager-url and warehouse come from the environment (${SETATS_MANAGER_URL},
-- ${SETATS_WAREHOUSE}), and so do username and password (SETATS_USERNAME, SETATS_PASSWORD; unset:
-- anonymous, for a gateway without users file); catalog-type 'hadoop' (metadata under the warehouse), so no 'uri'; the
-- table lives at its default location <warehouse>/testdb.db/demo_setats_table1, which the sink
-- creates from this DDL on its first write.
-- Bounded: the datagen source stops after ${DEMO_ROWS} rows (ids 0, 1, 2, ...): one +I each.
-- e2e/sql/demo-update.sql then rewrites the first ${DEMO_UPDATES} ids, so -U/+U pairs follow.
-- dt is fixed for the run (${DEMO_DT}, today as yyyyMMdd) instead of the seed's
-- DATE_FORMAT(NOW(), 'yyyyMMdd'), so that both jobs hit the same partition even at midnight;
-- 'setats.sink.flush-interval' is 1s instead of the seed's 5s, so that rows show up sooner.

CREATE TABLE `test_source_datagen` (
  `id` STRING,
  `name` STRING,
  `address` STRING
) WITH (
  'connector' = 'datagen',
  'rows-per-second' = '10',
  'number-of-rows' = '${DEMO_ROWS:-20}',
  'fields.id.start' = '0',
  'fields.id.end' = '100000',
  'fields.id.kind' = 'sequence',
  'fields.name.length' = '5',
  'fields.address.length' = '10'
);

CREATE TABLE `demo_setats_table1` (
  `id` STRING,
  `dt` STRING,
  `name` STRING,
  `address` STRING,
  PRIMARY KEY (`id`, `dt`) NOT ENFORCED
) PARTITIONED BY (`dt`) WITH (
  'connector' = 'setats',
  'manager-url' = '${SETATS_MANAGER_URL}',
  'username' = '${SETATS_USERNAME:-}',
  'password' = '${SETATS_PASSWORD:-}',
  'catalog-type' = 'hadoop',
  'catalog-name' = 'setats',
  'catalog-database' = 'testdb',
  'catalog-table' = 'demo_setats_table1',
  'warehouse' = '${SETATS_WAREHOUSE}',
  'bucket' = '10',
  'merge-engine' = 'PARTIAL_UPDATE',
  'setats.sink.flush-interval' = '1s'
);

-- +I for every id.
INSERT INTO `demo_setats_table1`
SELECT `id`, '${DEMO_DT}' AS `dt`, `name`, `address`
FROM `test_source_datagen`;
