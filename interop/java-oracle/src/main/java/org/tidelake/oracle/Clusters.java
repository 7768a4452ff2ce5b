package org.tidelake.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.paimon.append.cluster.IncrementalClusterManager;
import org.apache.paimon.compact.CompactUnit;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.partition.PartitionPredicate;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.source.DataSplit;

/**
 * Java's incremental clustering picks ({@code "op": "cluster_pick"}): what {@link
 * IncrementalClusterManager#prepareForCluster} (the core of Flink's {@code compact} action on a
 * table with {@code clustering.incremental}) would cluster in the latest snapshot, without
 * clustering.
 *
 * <p>Job: the table ({@code "path"}, or {@code "warehouse"} + {@code "table"}), optional {@code
 * "full"} (Flink's {@code --compact_strategy full}), optional {@code "partitions"} (a list of
 * {@code {column: value}}, Flink's {@code --partition}). Answer: {@code "units"}, one per partition
 * picked: {@code "output_level"} and {@code "files"} (names); {@code "levels"}: every live data
 * file's name and level.
 */
final class Clusters {
    private Clusters() {}

    static ObjectNode pick(JsonNode job) throws Exception {
        FileStoreTable table = (FileStoreTable) Reads.open(job);
        PartitionPredicate partitions = null;
        if (job.has("partitions")) {
            List<Map<String, String>> specs = new ArrayList<>();
            for (JsonNode spec : job.get("partitions")) {
                Map<String, String> values = new LinkedHashMap<>();
                spec.fields().forEachRemaining(e -> values.put(e.getKey(), e.getValue().asText()));
                specs.add(values);
            }
            partitions =
                    PartitionPredicate.fromMaps(
                            table.schema().logicalPartitionType(),
                            specs,
                            table.coreOptions().partitionDefaultName());
        }
        IncrementalClusterManager manager = new IncrementalClusterManager(table, partitions);
        Map<BinaryRow, CompactUnit> units =
                manager.prepareForCluster(job.path("full").asBoolean(false));
        ObjectNode answer = Main.JSON.createObjectNode();
        ArrayNode picked = answer.putArray("units");
        for (CompactUnit unit : units.values()) {
            ObjectNode u = picked.addObject();
            u.put("output_level", unit.outputLevel());
            ArrayNode files = u.putArray("files");
            for (DataFileMeta file : unit.files()) {
                files.add(file.fileName());
            }
        }
        ObjectNode levels = answer.putObject("levels");
        for (DataSplit split : table.newSnapshotReader().read().dataSplits()) {
            for (DataFileMeta file : split.dataFiles()) {
                levels.put(file.fileName(), file.level());
            }
        }
        return answer;
    }
}
