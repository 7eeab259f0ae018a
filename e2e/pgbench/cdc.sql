-- The changelog of pgbench.pgbench_accounts from its earliest offsets (setats-cdc), printed with
-- its RowKinds; e2e/pgbench/check.py folds it and compares it with PostgreSQL.

SET 'parallelism.default' = '1';

CREATE TABLE setats_accounts_cdc (
  aid INT,
  bid INT,
  abalance INT,
  filler STRING,
  PRIMARY KEY (aid) NOT ENFORCED
) WITH (
  'connector' = 'setats-cdc',
  'manager-url' = '${SETATS_MANAGER_URL}',
  'warehouse' = '${SETATS_WAREHOUSE}',
  'catalog-type' = 'hadoop',
  'catalog-name' = 'setats',
  'catalog-database' = 'pgbench',
  'catalog-table' = 'pgbench_accounts',
  'startup.mode' = 'earliest'
);

CREATE TABLE changelog_print (
  aid INT,
  bid INT,
  abalance INT,
  filler STRING
) WITH ('connector' = 'print');

INSERT INTO changelog_print SELECT aid, bid, abalance, filler FROM setats_accounts_cdc;
