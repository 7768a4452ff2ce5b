package org.tidelake.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.DelegateCatalog;
import org.apache.paimon.catalog.Identifier;

import java.lang.reflect.Method;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * Hive's own tables (not Paimon's) on a Hive Metastore, through Paimon's {@code HiveCatalog}
 * ({@link Tables}, {@code metastore=hive}). Jobs:
 *
 * <ul>
 *   <li>{@code hive_table} ({@link #create}): a managed Hive table {@code "table"} of Parquet,
 *       ORC or Avro files ({@code "format"}) at {@code "location"}, with {@code "columns"} and
 *       {@code "partition_keys"} (each {@code {"name", "type"}} in Hive's type names) and its
 *       {@code "partitions"} ({@code {"values", "location"}}), registered as Hive registers
 *       them (its input/output formats and serde); the database is created if missing;
 *   <li>{@code migrate_table} ({@link #migrate}): Paimon's {@code HiveMigrator} on
 *       {@code "table"}, into {@code "target"} when given (else the source's name, as the
 *       {@code migrate_table} procedure), with {@code "options"} and {@code "delete_origin"}.
 * </ul>
 *
 * <p>Hive's and Paimon's Hive classes are on the classpath of the oracle's Hive jobs only
 * (interop/hive), so they are reached by reflection.
 */
final class HiveTables {
    private HiveTables() {}

    private static final String API = "org.apache.hadoop.hive.metastore.api.";

    /** Input format, output format and serde of each file format, as Hive's DDL sets them. */
    private static final Map<String, String[]> FORMATS = new HashMap<>();

    static {
        FORMATS.put(
                "parquet",
                new String[] {
                    "org.apache.hadoop.hive.ql.io.parquet.MapredParquetInputFormat",
                    "org.apache.hadoop.hive.ql.io.parquet.MapredParquetOutputFormat",
                    "org.apache.hadoop.hive.ql.io.parquet.serde.ParquetHiveSerDe"
                });
        FORMATS.put(
                "orc",
                new String[] {
                    "org.apache.hadoop.hive.ql.io.orc.OrcInputFormat",
                    "org.apache.hadoop.hive.ql.io.orc.OrcOutputFormat",
                    "org.apache.hadoop.hive.ql.io.orc.OrcSerde"
                });
        FORMATS.put(
                "avro",
                new String[] {
                    "org.apache.hadoop.hive.ql.io.avro.AvroContainerInputFormat",
                    "org.apache.hadoop.hive.ql.io.avro.AvroContainerOutputFormat",
                    "org.apache.hadoop.hive.serde2.avro.AvroSerDe"
                });
    }

    static ObjectNode create(JsonNode job) throws Exception {
        Identifier id = Tables.identifier(job);
        try (Catalog catalog = Tables.catalog(job)) {
            catalog.createDatabase(id.getDatabaseName(), true);
            Object client = client(catalog);
            Class<?> api = Class.forName("org.apache.hadoop.hive.metastore.IMetaStoreClient");
            String[] format = FORMATS.get(job.get("format").asText());
            Object sd = storage(job.get("columns"), job.get("location").asText(), format);
            Object table = newApi("Table");
            set(table, "setDbName", String.class, id.getDatabaseName());
            set(table, "setTableName", String.class, id.getObjectName());
            set(table, "setTableType", String.class, "MANAGED_TABLE");
            set(table, "setSd", sd.getClass(), sd);
            set(table, "setPartitionKeys", List.class, fields(job.get("partition_keys")));
            Map<String, String> parameters = new HashMap<>();
            if (job.has("comment")) {
                parameters.put("comment", job.get("comment").asText());
            }
            set(table, "setParameters", Map.class, parameters);
            api.getMethod("createTable", table.getClass()).invoke(client, table);
            List<Object> partitions = new ArrayList<>();
            for (JsonNode p : job.path("partitions")) {
                Object partition = newApi("Partition");
                List<String> values = new ArrayList<>();
                p.get("values").forEach(v -> values.add(v.asText()));
                set(partition, "setDbName", String.class, id.getDatabaseName());
                set(partition, "setTableName", String.class, id.getObjectName());
                set(partition, "setValues", List.class, values);
                Object partitionSd = storage(job.get("columns"), p.get("location").asText(), format);
                set(partition, "setSd", partitionSd.getClass(), partitionSd);
                partitions.add(partition);
            }
            if (!partitions.isEmpty()) {
                api.getMethod("add_partitions", List.class).invoke(client, partitions);
            }
        }
        return Main.JSON.createObjectNode();
    }

    static ObjectNode migrate(JsonNode job) throws Exception {
        Identifier source = Tables.identifier(job);
        Identifier target =
                Identifier.fromString(
                        job.has("target")
                                ? job.get("target").asText()
                                : source.getFullName() + "_paimon_");
        Map<String, String> options = new HashMap<>();
        job.path("options").fields().forEachRemaining(e -> options.put(e.getKey(), e.getValue().asText()));
        try (Catalog catalog = Tables.catalog(job)) {
            Catalog hive = DelegateCatalog.rootCatalog(catalog);
            Class<?> migratorClass = Class.forName("org.apache.paimon.hive.migrate.HiveMigrator");
            Object migrator =
                    migratorClass
                            .getConstructor(
                                    Class.forName("org.apache.paimon.hive.HiveCatalog"),
                                    String.class,
                                    String.class,
                                    String.class,
                                    String.class,
                                    Integer.class,
                                    Map.class)
                            .newInstance(
                                    hive,
                                    source.getDatabaseName(),
                                    source.getObjectName(),
                                    target.getDatabaseName(),
                                    target.getObjectName(),
                                    1,
                                    options);
            migratorClass
                    .getMethod("deleteOriginTable", boolean.class)
                    .invoke(migrator, job.path("delete_origin").asBoolean(true));
            migratorClass.getMethod("executeMigrate").invoke(migrator);
            if (!job.has("target")) {
                migratorClass.getMethod("renameTable", boolean.class).invoke(migrator, false);
            }
        }
        return Main.JSON.createObjectNode();
    }

    private static Object client(Catalog catalog) throws Exception {
        Catalog hive = DelegateCatalog.rootCatalog(catalog);
        return hive.getClass().getMethod("getHmsClient").invoke(hive);
    }

    private static Object storage(JsonNode columns, String location, String[] format)
            throws Exception {
        Object serde = newApi("SerDeInfo");
        set(serde, "setSerializationLib", String.class, format[2]);
        set(serde, "setParameters", Map.class, new HashMap<String, String>());
        Object sd = newApi("StorageDescriptor");
        set(sd, "setCols", List.class, fields(columns));
        set(sd, "setLocation", String.class, location);
        set(sd, "setInputFormat", String.class, format[0]);
        set(sd, "setOutputFormat", String.class, format[1]);
        set(sd, "setSerdeInfo", serde.getClass(), serde);
        return sd;
    }

    private static List<Object> fields(JsonNode columns) throws Exception {
        List<Object> fields = new ArrayList<>();
        for (JsonNode c : columns) {
            Object field = newApi("FieldSchema");
            set(field, "setName", String.class, c.get("name").asText());
            set(field, "setType", String.class, c.get("type").asText());
            if (c.has("comment")) {
                set(field, "setComment", String.class, c.get("comment").asText());
            }
            fields.add(field);
        }
        return fields;
    }

    private static Object newApi(String name) throws Exception {
        return Class.forName(API + name).getConstructor().newInstance();
    }

    private static void set(Object target, String setter, Class<?> type, Object value)
            throws Exception {
        Method method = target.getClass().getMethod(setter, type);
        method.invoke(target, value);
    }
}
