package org.tidelake.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.catalog.CatalogFactory;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.options.Options;
import org.apache.paimon.partition.Partition;
import org.apache.paimon.types.DataType;
import org.apache.paimon.utils.JsonSerdeUtil;

/**
 * Where a job's table lives: {@code "warehouse"} (a filesystem catalog), or {@code "catalog"}
 * (any catalog's options as Paimon's {@code CatalogFactory} takes them: {@code metastore=jdbc},
 * {@code uri}, {@code lock.enabled}, ...), and {@code "table"}; a
 * {@code "branch"} in the job (reads) or in a step (writes) names a branch of it, loaded as
 * Paimon's catalogs load {@code db.table$branch_name} (with that branch's own options).
 */
final class Tables {
    private Tables() {}

    static Catalog catalog(JsonNode job) {
        Options options = new Options();
        if (job.has("catalog")) {
            job.get("catalog").fields().forEachRemaining(e -> options.set(e.getKey(), e.getValue().asText()));
        } else {
            options.set("warehouse", job.path("warehouse").asText());
        }
        return CatalogFactory.createCatalog(CatalogContext.create(options));
    }

    /** The catalog's {@code listPartitions} of the job's table, as Paimon's JSON. */
    static ObjectNode partitions(JsonNode job) throws Exception {
        ObjectNode answer = Main.JSON.createObjectNode();
        ArrayNode list = answer.putArray("partitions");
        try (Catalog catalog = catalog(job)) {
            for (Partition p : catalog.listPartitions(identifier(job))) {
                list.add(Main.JSON.readTree(JsonSerdeUtil.toJson(p)));
            }
        }
        return answer;
    }

    static Identifier identifier(JsonNode job) {
        return identifier(job, job);
    }

    /** The job's table on the branch {@code node} names (main if none). */
    static Identifier identifier(JsonNode job, JsonNode node) {
        Identifier main = Identifier.fromString(job.path("table").asText());
        return node.has("branch")
                ? new Identifier(main.getDatabaseName(), main.getObjectName(), node.get("branch").asText())
                : main;
    }

    /** A Paimon type from its schema-file JSON (an SQL string for atomic types). */
    static DataType type(JsonNode json) {
        return JsonSerdeUtil.fromJson(json.toString(), DataType.class);
    }
}
