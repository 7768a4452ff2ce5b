package org.tidelake.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.DelegateCatalog;
import org.apache.paimon.catalog.Identifier;

import java.lang.reflect.Method;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.Paths;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;

/**
 * Paimon's {@code HiveCatalog} at work on a Hive Metastore. Job: the catalog ({@link Tables},
 * {@code metastore=hive}) and {@code "table"}.
 *
 * <ul>
 *   <li>{@code hms} ({@link #table}): what the metastore keeps for the table, read by the
 *       catalog's own client: the database, the table and its partitions, each as Thrift's
 *       simple JSON (field names as keys); with {@code "events"} (partition specs), whether
 *       each partition has a load-done event ({@code isPartitionMarkedForEvent});
 *   <li>{@code hold_lock} ({@link #holdLock}): the catalog's commit lock of the table (its Hive
 *       lock, {@code lock.enabled}) held for {@code "seconds"}; the file {@code "marker"} is
 *       created once it is held.
 * </ul>
 *
 * <p>Hive's classes are on the classpath of the oracle's Hive jobs only (interop/hive), not on
 * the one it is compiled against, so they are reached by reflection.
 */
final class Hms {
    private Hms() {}

    static ObjectNode table(JsonNode job) throws Exception {
        Identifier id = Tables.identifier(job);
        ObjectNode answer = Main.JSON.createObjectNode();
        try (Catalog catalog = Tables.catalog(job)) {
            Catalog hive = DelegateCatalog.rootCatalog(catalog);
            Object client = hive.getClass().getMethod("getHmsClient").invoke(hive);
            Class<?> api = Class.forName("org.apache.hadoop.hive.metastore.IMetaStoreClient");
            Method getDatabase = api.getMethod("getDatabase", String.class);
            Method getTable = api.getMethod("getTable", String.class, String.class);
            Method listPartitions =
                    api.getMethod("listPartitions", String.class, String.class, short.class);
            answer.set("database", json(getDatabase.invoke(client, id.getDatabaseName())));
            answer.set(
                    "table",
                    json(getTable.invoke(client, id.getDatabaseName(), id.getTableName())));
            ArrayNode partitions = answer.putArray("partitions");
            for (Object p :
                    (List<?>)
                            listPartitions.invoke(
                                    client, id.getDatabaseName(), id.getTableName(), (short) -1)) {
                partitions.add(json(p));
            }
            if (job.has("events")) {
                Class<?> eventType =
                        Class.forName("org.apache.hadoop.hive.metastore.api.PartitionEventType");
                Method marked =
                        api.getMethod(
                                "isPartitionMarkedForEvent",
                                String.class,
                                String.class,
                                Map.class,
                                eventType);
                Object loadDone = eventType.getField("LOAD_DONE").get(null);
                ArrayNode events = answer.putArray("events");
                for (JsonNode spec : job.get("events")) {
                    Map<String, String> values = new LinkedHashMap<>();
                    spec.fields().forEachRemaining(e -> values.put(e.getKey(), e.getValue().asText()));
                    events.add(
                            (Boolean)
                                    marked.invoke(
                                            client,
                                            id.getDatabaseName(),
                                            id.getTableName(),
                                            values,
                                            loadDone));
                }
            }
        }
        return answer;
    }

    static ObjectNode holdLock(JsonNode job) throws Exception {
        long millis = (long) (job.get("seconds").asDouble() * 1000);
        Path marker = Paths.get(job.get("marker").asText());
        Callable<Object> section =
                () -> {
                    Files.createFile(marker);
                    Thread.sleep(millis);
                    return null;
                };
        try (Catalog catalog = Tables.catalog(job)) {
            Catalog hive = DelegateCatalog.rootCatalog(catalog);
            hive.getClass()
                    .getMethod("runWithLock", Identifier.class, Callable.class)
                    .invoke(hive, Tables.identifier(job), section);
        }
        return Main.JSON.createObjectNode();
    }

    /** A Thrift object as {@code TSimpleJSONProtocol} writes it. */
    private static JsonNode json(Object thrift) throws Exception {
        Class<?> protocols = Class.forName("org.apache.thrift.protocol.TProtocolFactory");
        Object factory =
                Class.forName("org.apache.thrift.protocol.TSimpleJSONProtocol$Factory")
                        .getConstructor()
                        .newInstance();
        Class<?> serializerClass = Class.forName("org.apache.thrift.TSerializer");
        Object serializer = serializerClass.getConstructor(protocols).newInstance(factory);
        Method toString =
                serializerClass.getMethod("toString", Class.forName("org.apache.thrift.TBase"));
        return Main.JSON.readTree((String) toString.invoke(serializer, thrift));
    }
}
