package io.setats.flink.catalog;

import io.setats.flink.SetatsConnectorOptions;
import io.setats.flink.SetatsConnectorOptions.CatalogType;
import io.setats.flink.SetatsConnectorOptions.MergeEngine;
import io.setats.flink.SetatsOptionsUtil;
import io.setats.flink.client.ConnectionOptions;
import io.setats.flink.client.GatewayClient;
import io.setats.flink.client.SetatsGatewayException;
import io.setats.flink.utils.SetatsTypes;
import io.setats.proto.v1.CatalogContext;
import io.setats.proto.v1.Column;
import io.setats.proto.v1.TableInfo;
import io.setats.proto.v1.TableSpec;

import org.apache.flink.configuration.ReadableConfig;
import org.apache.flink.table.api.Schema;
import org.apache.flink.table.api.ValidationException;
import org.apache.flink.table.catalog.AbstractCatalog;
import org.apache.flink.table.catalog.CatalogBaseTable;
import org.apache.flink.table.catalog.CatalogDatabase;
import org.apache.flink.table.catalog.CatalogDatabaseImpl;
import org.apache.flink.table.catalog.CatalogFunction;
import org.apache.flink.table.catalog.CatalogPartition;
import org.apache.flink.table.catalog.CatalogPartitionSpec;
import org.apache.flink.table.catalog.CatalogTable;
import org.apache.flink.table.catalog.ObjectPath;
import org.apache.flink.table.catalog.ResolvedCatalogTable;
import org.apache.flink.table.catalog.ResolvedSchema;
import org.apache.flink.table.catalog.UniqueConstraint;
import org.apache.flink.table.catalog.exceptions.CatalogException;
import org.apache.flink.table.catalog.exceptions.DatabaseAlreadyExistException;
import org.apache.flink.table.catalog.exceptions.DatabaseNotEmptyException;
import org.apache.flink.table.catalog.exceptions.DatabaseNotExistException;
import org.apache.flink.table.catalog.exceptions.FunctionNotExistException;
import org.apache.flink.table.catalog.exceptions.PartitionNotExistException;
import org.apache.flink.table.catalog.exceptions.TableAlreadyExistException;
import org.apache.flink.table.catalog.exceptions.TableNotExistException;
import org.apache.flink.table.catalog.exceptions.TableNotPartitionedException;
import org.apache.flink.table.catalog.stats.CatalogColumnStatistics;
import org.apache.flink.table.catalog.stats.CatalogTableStatistics;
import org.apache.flink.table.expressions.Expression;
import org.apache.flink.table.factories.Factory;
import org.apache.flink.table.types.logical.LogicalType;
import org.apache.flink.table.types.logical.RowType;
import org.apache.flink.table.types.utils.TypeConversions;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.Collections;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.TreeMap;
import java.util.TreeSet;

/**
 * SetatsCatalog is the Flink catalog {@code 'type' = 'setats'} (SPEC section 12): the databases
 * and tables of one gateway's catalog ({@code catalog-type} hadoop, or hive with the Hive
 * Metastore at {@code uri}). Reading a table is the {@code setats} source (its changelog as {@code
 * setats-cdc} in streaming mode, its merged rows in batch mode, lookup joins), writing it is the
 * {@code setats} sink; per-query options come from {@code /*+ OPTIONS(...) *}{@code /}
 * hints. Errors are Flink's catalog exceptions naming the object; other gateway failures are
 * CatalogExceptions keeping the gateway's message.
 *
 * <p>Table options shown and accepted by CREATE TABLE: {@code bucket}, {@code bucket-key},
 * {@code merge-engine}, {@code location}, {@code ignore-delete},
 * {@code partial-update.remove-record-on-delete} and {@code changelog.*} / {@code slot.*} table
 * options (checked by the gateway).
 */
public class SetatsCatalog extends AbstractCatalog {

    /** Keys of table options a catalog table carries (getTable) or CREATE TABLE accepts. */
    static final Set<String> TABLE_OPTION_KEYS =
            new TreeSet<>(
                    Arrays.asList(
                            SetatsConnectorOptions.BUCKET.key(),
                            SetatsConnectorOptions.BUCKET_KEY.key(),
                            SetatsConnectorOptions.MERGE_ENGINE.key(),
                            SetatsConnectorOptions.LOCATION.key(),
                            SetatsConnectorOptions.IGNORE_DELETE.key(),
                            SetatsConnectorOptions.PARTIAL_UPDATE_REMOVE_RECORD_ON_DELETE.key(),
                            SetatsConnectorOptions.CHANGELOG_RETENTION_MS.key()));

    private final ConnectionOptions connection;
    private final Map<String, String> connectorOptions;
    private final CatalogContext catalogContext;
    private final String warehouse;
    private transient GatewayClient client;

    public SetatsCatalog(String name, ReadableConfig options) {
        super(name, options.get(SetatsCatalogFactory.DEFAULT_DATABASE));
        this.connection = SetatsOptionsUtil.connectionOptions(options);
        this.warehouse = options.get(SetatsConnectorOptions.WAREHOUSE);
        CatalogType type = options.getOptional(SetatsConnectorOptions.CATALOG_TYPE).orElse(CatalogType.hadoop);
        String uri = options.getOptional(SetatsConnectorOptions.URI).orElse("").trim();
        if (type == CatalogType.hive && uri.isEmpty()) {
            throw new ValidationException(
                    "Option '" + SetatsConnectorOptions.URI.key()
                            + "' (Hive Metastore thrift URIs) is required when '"
                            + SetatsConnectorOptions.CATALOG_TYPE.key() + "' = 'hive'.");
        }
        String catalogName = options.getOptional(SetatsConnectorOptions.CATALOG_NAME).orElse(name);
        this.catalogContext =
                CatalogContext.newBuilder()
                        .setWarehouse(warehouse)
                        .setCatalogType(type.toString())
                        .setCatalogName(catalogName)
                        .setUri(uri)
                        .build();
        Map<String, String> o = new LinkedHashMap<>();
        o.put(SetatsConnectorOptions.MANAGER_URL.key(), options.get(SetatsConnectorOptions.MANAGER_URL));
        o.put(SetatsConnectorOptions.WAREHOUSE.key(), warehouse);
        o.put(SetatsConnectorOptions.CATALOG_TYPE.key(), type.toString());
        o.put(SetatsConnectorOptions.CATALOG_NAME.key(), catalogName);
        if (!uri.isEmpty()) {
            o.put(SetatsConnectorOptions.URI.key(), uri);
        }
        // The credentials and the CA go to every table's source and sink (never shown by getTable).
        options.getOptional(SetatsConnectorOptions.USERNAME).ifPresent(v -> o.put(SetatsConnectorOptions.USERNAME.key(), v));
        options.getOptional(SetatsConnectorOptions.PASSWORD).ifPresent(v -> o.put(SetatsConnectorOptions.PASSWORD.key(), v));
        options.getOptional(SetatsConnectorOptions.TLS_CA_CERT).ifPresent(v -> o.put(SetatsConnectorOptions.TLS_CA_CERT.key(), v));
        this.connectorOptions = Collections.unmodifiableMap(o);
    }

    /** The options every table of this catalog is read and written with. */
    Map<String, String> connectorOptions() {
        return connectorOptions;
    }

    @Override
    public void open() throws CatalogException {
        try {
            client = GatewayClient.connect(connection, catalogContext);
            client.checkWarehouse(warehouse);
        } catch (RuntimeException e) {
            if (client != null) {
                client.close();
                client = null;
            }
            throw new CatalogException(
                    "Catalog " + getName() + ": cannot open the Setats gateway at " + connection + ": " + e.getMessage(), e);
        }
    }

    @Override
    public void close() throws CatalogException {
        if (client != null) {
            client.close();
            client = null;
        }
    }

    @Override
    public Optional<Factory> getFactory() {
        return Optional.of(new SetatsCatalogTableFactory(connectorOptions));
    }

    private GatewayClient client() {
        if (client == null) {
            throw new CatalogException("Catalog " + getName() + " is not open.");
        }
        return client;
    }

    private CatalogException failed(String what, SetatsGatewayException e) {
        return new CatalogException("Catalog " + getName() + ": " + what + ": " + e.getMessage(), e);
    }

    private static boolean is(SetatsGatewayException e, String code) {
        return code.equals(e.code());
    }

    // ------------------------------------------------------------------------------------------
    // databases

    @Override
    public List<String> listDatabases() throws CatalogException {
        try {
            return client().listDatabases();
        } catch (SetatsGatewayException e) {
            throw failed("list databases", e);
        }
    }

    @Override
    public CatalogDatabase getDatabase(String databaseName) throws DatabaseNotExistException, CatalogException {
        if (!databaseExists(databaseName)) {
            throw new DatabaseNotExistException(getName(), databaseName);
        }
        return new CatalogDatabaseImpl(Collections.emptyMap(), null);
    }

    @Override
    public boolean databaseExists(String databaseName) throws CatalogException {
        return listDatabases().contains(databaseName);
    }

    @Override
    public void createDatabase(String name, CatalogDatabase database, boolean ignoreIfExists)
            throws DatabaseAlreadyExistException, CatalogException {
        try {
            client().createDatabase(name, false);
        } catch (SetatsGatewayException e) {
            if (is(e, "ALREADY_EXISTS")) {
                if (ignoreIfExists) {
                    return;
                }
                throw new DatabaseAlreadyExistException(getName(), name, e);
            }
            throw failed("create database " + name, e);
        }
    }

    @Override
    public void dropDatabase(String name, boolean ignoreIfNotExists, boolean cascade)
            throws DatabaseNotExistException, DatabaseNotEmptyException, CatalogException {
        if (!databaseExists(name)) {
            if (ignoreIfNotExists) {
                return;
            }
            throw new DatabaseNotExistException(getName(), name);
        }
        if (!cascade && !listTablesOf(name).isEmpty()) {
            throw new DatabaseNotEmptyException(getName(), name);
        }
        try {
            client().dropDatabase(name, ignoreIfNotExists, cascade);
        } catch (SetatsGatewayException e) {
            if (is(e, "NOT_FOUND") && !ignoreIfNotExists) {
                throw new DatabaseNotExistException(getName(), name, e);
            }
            if (is(e, "FAILED_PRECONDITION")) {
                throw new DatabaseNotEmptyException(getName(), name, e);
            }
            throw failed("drop database " + name, e);
        }
    }

    @Override
    public void alterDatabase(String name, CatalogDatabase newDatabase, boolean ignoreIfNotExists)
            throws CatalogException {
        throw new CatalogException("Catalog " + getName() + ": ALTER DATABASE is not supported (database " + name + ").");
    }

    // ------------------------------------------------------------------------------------------
    // tables

    private List<String> listTablesOf(String databaseName) {
        try {
            return client().listTables(databaseName);
        } catch (SetatsGatewayException e) {
            throw failed("list tables of database " + databaseName, e);
        }
    }

    @Override
    public List<String> listTables(String databaseName) throws DatabaseNotExistException, CatalogException {
        if (!databaseExists(databaseName)) {
            throw new DatabaseNotExistException(getName(), databaseName);
        }
        return listTablesOf(databaseName);
    }

    @Override
    public List<String> listViews(String databaseName) throws DatabaseNotExistException, CatalogException {
        if (!databaseExists(databaseName)) {
            throw new DatabaseNotExistException(getName(), databaseName);
        }
        return Collections.emptyList();
    }

    private Optional<TableInfo> info(ObjectPath path) {
        try {
            return client().getTable(path.getDatabaseName(), path.getObjectName());
        } catch (SetatsGatewayException e) {
            throw failed("get table " + path.getFullName(), e);
        }
    }

    @Override
    public CatalogBaseTable getTable(ObjectPath tablePath) throws TableNotExistException, CatalogException {
        TableInfo info = info(tablePath).orElseThrow(() -> new TableNotExistException(getName(), tablePath));
        return toCatalogTable(info.getSpec());
    }

    /** The Flink view of a Setats table: schema, primary key, partition keys, table options. */
    static CatalogTable toCatalogTable(TableSpec spec) {
        Schema.Builder schema = Schema.newBuilder();
        for (Column c : spec.getColumnsList()) {
            LogicalType t = SetatsTypes.parse(c.getName(), c.getType());
            t = t.copy(!c.getNotNull());
            schema.column(c.getName(), TypeConversions.fromLogicalToDataType(t));
            if (!c.getComment().isEmpty()) {
                schema.withComment(c.getComment());
            }
        }
        if (spec.getPrimaryKeyCount() > 0) {
            schema.primaryKeyNamed("PK_" + spec.getTable(), spec.getPrimaryKeyList());
        }
        Map<String, String> options = new LinkedHashMap<>();
        options.put(SetatsConnectorOptions.BUCKET.key(), Integer.toString(spec.getBucketCount()));
        options.put(SetatsConnectorOptions.BUCKET_KEY.key(), String.join(",", spec.getBucketKeyList()));
        options.put(SetatsConnectorOptions.MERGE_ENGINE.key(), spec.getMergeEngine());
        options.putAll(new TreeMap<>(spec.getOptionsMap()));
        return CatalogTable.of(schema.build(), spec.getComment().isEmpty() ? null : spec.getComment(),
                new ArrayList<>(spec.getPartitionKeysList()), options);
    }

    @Override
    public boolean tableExists(ObjectPath tablePath) throws CatalogException {
        return info(tablePath).isPresent();
    }

    @Override
    public void dropTable(ObjectPath tablePath, boolean ignoreIfNotExists)
            throws TableNotExistException, CatalogException {
        try {
            client().dropTable(tablePath.getDatabaseName(), tablePath.getObjectName(), false);
        } catch (SetatsGatewayException e) {
            if (is(e, "NOT_FOUND")) {
                if (ignoreIfNotExists) {
                    return;
                }
                throw new TableNotExistException(getName(), tablePath, e);
            }
            throw failed("drop table " + tablePath.getFullName(), e);
        }
    }

    @Override
    public void renameTable(ObjectPath tablePath, String newTableName, boolean ignoreIfNotExists)
            throws CatalogException {
        throw new CatalogException("Catalog " + getName() + ": renaming tables is not supported (table " + tablePath.getFullName() + ").");
    }

    @Override
    public void createTable(ObjectPath tablePath, CatalogBaseTable table, boolean ignoreIfExists)
            throws TableAlreadyExistException, DatabaseNotExistException, CatalogException {
        if (!(table instanceof ResolvedCatalogTable)) {
            throw new CatalogException("Catalog " + getName() + ": only tables can be created (" + tablePath.getFullName() + " is a " + table.getTableKind() + ").");
        }
        if (!databaseExists(tablePath.getDatabaseName())) {
            throw new DatabaseNotExistException(getName(), tablePath.getDatabaseName());
        }
        TableSpec spec = toSpec(tablePath, (ResolvedCatalogTable) table);
        try {
            client().createTable(spec, false, false);
        } catch (SetatsGatewayException e) {
            if (is(e, "ALREADY_EXISTS")) {
                if (ignoreIfExists) {
                    return;
                }
                throw new TableAlreadyExistException(getName(), tablePath, e);
            }
            if (is(e, "NOT_FOUND")) {
                throw new DatabaseNotExistException(getName(), tablePath.getDatabaseName(), e);
            }
            throw failed("create table " + tablePath.getFullName(), e);
        }
    }

    /** The TableSpec of CREATE TABLE: columns, primary key, partition keys and table options. */
    static TableSpec toSpec(ObjectPath path, ResolvedCatalogTable table) {
        Map<String, String> options = table.getOptions();
        if (options.containsKey("connector")) {
            throw new ValidationException(
                    "Table " + path.getFullName() + ": tables of a Setats catalog are Setats tables; leave out 'connector' (got '"
                            + options.get("connector") + "').");
        }
        ResolvedSchema schema = table.getResolvedSchema();
        List<String> pk = schema.getPrimaryKey().map(UniqueConstraint::getColumns).orElse(Collections.emptyList());
        if (pk.isEmpty()) {
            throw new ValidationException("Table " + path.getFullName() + ": a Setats table needs a PRIMARY KEY (...) NOT ENFORCED.");
        }
        TableSpec.Builder spec =
                TableSpec.newBuilder()
                        .setDatabase(path.getDatabaseName())
                        .setTable(path.getObjectName())
                        .addAllPrimaryKey(pk)
                        .addAllPartitionKeys(table.getPartitionKeys());
        if (table.getComment() != null) {
            spec.setComment(table.getComment());
        }
        RowType row = (RowType) schema.toPhysicalRowDataType().getLogicalType();
        for (RowType.RowField f : row.getFields()) {
            Column.Builder c =
                    Column.newBuilder()
                            .setName(f.getName())
                            .setType(SetatsTypes.toTypeString(f.getName(), f.getType()))
                            .setNotNull(!f.getType().isNullable());
            schema.getColumn(f.getName()).flatMap(org.apache.flink.table.catalog.Column::getComment).ifPresent(c::setComment);
            spec.addColumns(c.build());
        }
        for (Map.Entry<String, String> e : options.entrySet()) {
            String k = e.getKey();
            String v = e.getValue();
            if (k.equals(SetatsConnectorOptions.BUCKET.key())) {
                try {
                    int n = Integer.parseInt(v.trim());
                    spec.setBucketCount(n <= 0 ? 0 : n);
                } catch (NumberFormatException ex) {
                    throw new ValidationException("Table " + path.getFullName() + ": option 'bucket' must be an integer, got '" + v + "'.");
                }
            } else if (k.equals(SetatsConnectorOptions.BUCKET_KEY.key())) {
                spec.addAllBucketKey(SetatsOptionsUtil.parseColumnList(v));
            } else if (k.equals(SetatsConnectorOptions.MERGE_ENGINE.key())) {
                try {
                    spec.setMergeEngine(MergeEngine.parse(v).name());
                } catch (IllegalArgumentException ex) {
                    throw new ValidationException("Table " + path.getFullName() + ": option 'merge-engine': " + ex.getMessage(), ex);
                }
            } else if (k.equals(SetatsConnectorOptions.LOCATION.key())) {
                spec.setLocation(v);
            } else if (TABLE_OPTION_KEYS.contains(k) || k.startsWith("changelog.") || k.startsWith("slot.")) {
                spec.putOptions(k, v);
            } else {
                throw new ValidationException(
                        "Table " + path.getFullName() + ": unsupported option '" + k + "'. Supported: "
                                + String.join(", ", TABLE_OPTION_KEYS) + ", changelog.*, slot.*.");
            }
        }
        return spec.build();
    }

    @Override
    public void alterTable(ObjectPath tablePath, CatalogBaseTable newTable, boolean ignoreIfNotExists)
            throws CatalogException {
        throw new CatalogException("Catalog " + getName() + ": ALTER TABLE is not supported (table " + tablePath.getFullName() + ").");
    }

    // ------------------------------------------------------------------------------------------
    // partitions: the partitions that have buckets (list-buckets); created by writing rows,
    // dropped with drop-partition (ALTER TABLE ... DROP PARTITION)

    /** The partitions of a partitioned table, in name order. */
    private List<CatalogPartitionSpec> partitions(ObjectPath tablePath)
            throws TableNotExistException, TableNotPartitionedException {
        TableInfo info = info(tablePath).orElseThrow(() -> new TableNotExistException(getName(), tablePath));
        if (info.getSpec().getPartitionKeysCount() == 0) {
            throw new TableNotPartitionedException(getName(), tablePath);
        }
        java.util.TreeSet<String> names = new java.util.TreeSet<>();
        try {
            for (io.setats.proto.v1.BucketOffsets b :
                    client().listBuckets(tablePath.getDatabaseName(), tablePath.getObjectName()).getBucketsList()) {
                names.add(b.getPartition());
            }
        } catch (SetatsGatewayException e) {
            throw failed("list partitions of " + tablePath.getFullName(), e);
        }
        List<CatalogPartitionSpec> out = new ArrayList<>(names.size());
        for (String name : names) {
            out.add(new CatalogPartitionSpec(io.setats.flink.utils.PartitionNames.parse(name)));
        }
        return out;
    }

    @Override
    public List<CatalogPartitionSpec> listPartitions(ObjectPath tablePath) throws TableNotExistException, TableNotPartitionedException, CatalogException {
        return partitions(tablePath);
    }

    @Override
    public List<CatalogPartitionSpec> listPartitions(ObjectPath tablePath, CatalogPartitionSpec partitionSpec)
            throws TableNotExistException, TableNotPartitionedException, CatalogException {
        List<CatalogPartitionSpec> out = new ArrayList<>();
        for (CatalogPartitionSpec p : partitions(tablePath)) {
            if (p.getPartitionSpec().entrySet().containsAll(partitionSpec.getPartitionSpec().entrySet())) {
                out.add(p);
            }
        }
        return out;
    }

    @Override
    public List<CatalogPartitionSpec> listPartitionsByFilter(ObjectPath tablePath, List<Expression> filters) throws CatalogException {
        throw new UnsupportedOperationException("Catalog " + getName() + ": listing partitions by filter is not supported");
    }

    @Override
    public CatalogPartition getPartition(ObjectPath tablePath, CatalogPartitionSpec partitionSpec) throws PartitionNotExistException, CatalogException {
        if (!partitionExists(tablePath, partitionSpec)) {
            throw new PartitionNotExistException(getName(), tablePath, partitionSpec);
        }
        return new org.apache.flink.table.catalog.CatalogPartitionImpl(Collections.emptyMap(), null);
    }

    @Override
    public boolean partitionExists(ObjectPath tablePath, CatalogPartitionSpec partitionSpec) throws CatalogException {
        try {
            return partitions(tablePath).contains(partitionSpec);
        } catch (TableNotExistException | TableNotPartitionedException e) {
            return false;
        }
    }

    @Override
    public void createPartition(ObjectPath tablePath, CatalogPartitionSpec partitionSpec, CatalogPartition partition, boolean ignoreIfExists) throws CatalogException {
        throw new CatalogException("Catalog " + getName() + ": partitions are created by writing rows (table " + tablePath.getFullName() + ").");
    }

    /**
     * Drops a partition through the gateway's {@code drop-partition} (its rows, changelog and slot
     * positions, atomically; setats-cdc readers finish its splits). A partition the table does not
     * have (or a table that does not exist) is a {@link PartitionNotExistException} unless
     * ignoreIfNotExists; a spec that is not one of the table's partitions (a missing or unknown
     * key, a non-canonical value) or an unpartitioned table is a CatalogException with the
     * gateway's message.
     */
    @Override
    public void dropPartition(ObjectPath tablePath, CatalogPartitionSpec partitionSpec, boolean ignoreIfNotExists)
            throws PartitionNotExistException, CatalogException {
        try {
            client().dropPartition(
                    tablePath.getDatabaseName(), tablePath.getObjectName(), partitionSpec.getPartitionSpec(), false);
        } catch (SetatsGatewayException e) {
            if (is(e, "NOT_FOUND")) {
                if (ignoreIfNotExists) {
                    return;
                }
                throw new PartitionNotExistException(getName(), tablePath, partitionSpec, e);
            }
            throw failed("drop partition " + partitionSpec + " of " + tablePath.getFullName(), e);
        }
    }

    @Override
    public void alterPartition(ObjectPath tablePath, CatalogPartitionSpec partitionSpec, CatalogPartition newPartition, boolean ignoreIfNotExists) throws CatalogException {
        throw new CatalogException("Catalog " + getName() + ": altering partitions is not supported (table " + tablePath.getFullName() + ").");
    }

    // ------------------------------------------------------------------------------------------
    // functions: none

    @Override
    public List<String> listFunctions(String dbName) throws CatalogException {
        return Collections.emptyList();
    }

    @Override
    public CatalogFunction getFunction(ObjectPath functionPath) throws FunctionNotExistException, CatalogException {
        throw new FunctionNotExistException(getName(), functionPath);
    }

    @Override
    public boolean functionExists(ObjectPath functionPath) throws CatalogException {
        return false;
    }

    @Override
    public void createFunction(ObjectPath functionPath, CatalogFunction function, boolean ignoreIfExists) throws CatalogException {
        throw new CatalogException("Catalog " + getName() + ": functions are not supported (" + functionPath.getFullName() + ").");
    }

    @Override
    public void alterFunction(ObjectPath functionPath, CatalogFunction newFunction, boolean ignoreIfNotExists) throws CatalogException {
        throw new CatalogException("Catalog " + getName() + ": functions are not supported (" + functionPath.getFullName() + ").");
    }

    @Override
    public void dropFunction(ObjectPath functionPath, boolean ignoreIfNotExists) throws CatalogException {
        throw new CatalogException("Catalog " + getName() + ": functions are not supported (" + functionPath.getFullName() + ").");
    }

    // ------------------------------------------------------------------------------------------
    // statistics: unknown

    @Override
    public CatalogTableStatistics getTableStatistics(ObjectPath tablePath) throws CatalogException {
        return CatalogTableStatistics.UNKNOWN;
    }

    @Override
    public CatalogColumnStatistics getTableColumnStatistics(ObjectPath tablePath) throws CatalogException {
        return CatalogColumnStatistics.UNKNOWN;
    }

    @Override
    public CatalogTableStatistics getPartitionStatistics(ObjectPath tablePath, CatalogPartitionSpec partitionSpec) throws CatalogException {
        return CatalogTableStatistics.UNKNOWN;
    }

    @Override
    public CatalogColumnStatistics getPartitionColumnStatistics(ObjectPath tablePath, CatalogPartitionSpec partitionSpec) throws CatalogException {
        return CatalogColumnStatistics.UNKNOWN;
    }

    @Override
    public void alterTableStatistics(ObjectPath tablePath, CatalogTableStatistics tableStatistics, boolean ignoreIfNotExists) throws CatalogException {
        throw new CatalogException("Catalog " + getName() + ": statistics are not stored (table " + tablePath.getFullName() + ").");
    }

    @Override
    public void alterTableColumnStatistics(ObjectPath tablePath, CatalogColumnStatistics columnStatistics, boolean ignoreIfNotExists) throws CatalogException {
        throw new CatalogException("Catalog " + getName() + ": statistics are not stored (table " + tablePath.getFullName() + ").");
    }

    @Override
    public void alterPartitionStatistics(ObjectPath tablePath, CatalogPartitionSpec partitionSpec, CatalogTableStatistics partitionStatistics, boolean ignoreIfNotExists) throws CatalogException {
        throw new CatalogException("Catalog " + getName() + ": statistics are not stored (table " + tablePath.getFullName() + ").");
    }

    @Override
    public void alterPartitionColumnStatistics(ObjectPath tablePath, CatalogPartitionSpec partitionSpec, CatalogColumnStatistics columnStatistics, boolean ignoreIfNotExists) throws CatalogException {
        throw new CatalogException("Catalog " + getName() + ": statistics are not stored (table " + tablePath.getFullName() + ").");
    }
}
