-- The update pass of `make demo`, after e2e/sql/demo-write.sql, with the seed's partial-update sink
-- (setats-flink-write, "部分列更新"): it declares only id, dt and name, so the first
-- ${DEMO_UPDATES} ids get new names while their addresses keep their stored values
-- (merge-engine PARTIAL_UPDATE). For each id the merge emits -U(old row) then +U(new row).

CREATE TABLE `test_update_datagen` (
  `id` STRING,
  `name` STRING
) WITH (
  'connector' = 'datagen',
  'rows-per-second' = '5',
  'number-of-rows' = '${DEMO_UPDATES:-10}',
  'fields.id.start' = '0',
  'fields.id.end' = '100000',
  'fields.id.kind' = 'sequence',
  'fields.name.length' = '5'
);

CREATE TABLE `setats_partial_sink` (
  `id` STRING,
  `dt` STRING,
  `name` STRING,
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
  'merge-engine' = 'PARTIAL_UPDATE',
  'setats.sink.flush-interval' = '1s'
);

INSERT INTO `setats_partial_sink`
SELECT `id`, '${DEMO_DT}' AS `dt`, `name`
FROM `test_update_datagen`;
