package org.tidelake.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.CoreOptions;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.fs.Path;
import org.apache.paimon.partition.actions.PartitionMarkDoneAction;
import org.apache.paimon.partition.file.SuccessFile;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.tag.SuccessFileTagCallback;
import org.apache.paimon.types.RowType;
import org.apache.paimon.utils.InternalRowPartitionComputer;
import org.apache.paimon.utils.PartitionPathUtils;

import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Set;

/**
 * Marking partitions done as Java's engines do: after a batch write ({@link #afterBatchWrite},
 * Spark's {@code markDoneIfNeeded} with {@code partition.end-input-to-done}), by the
 * {@code mark_partition_done} procedure ({@code "op": "mark_done"}, {@code "partitions"}: a
 * list of {@code {"key": "value"}} specs), and reading a partition's {@code _SUCCESS} file
 * with Paimon's {@link SuccessFile} ({@code "op": "success_file"}, {@code "partition"}: its
 * path such as {@code dt=2024-01-01}; or {@code "tag"}: a tag's success file where {@link
 * SuccessFileTagCallback} puts it, of branch {@code "branch"} if given).
 */
final class MarkDone {
    private MarkDone() {}

    /** After a batch commit of {@code messages}: mark their partitions done if the table asks. */
    static void afterBatchWrite(FileStoreTable table, List<CommitMessage> messages) throws Exception {
        CoreOptions options = table.coreOptions();
        if (!options.toConfiguration().get(CoreOptions.PARTITION_MARK_DONE_WHEN_END_INPUT)
                || table.partitionKeys().isEmpty()) {
            return;
        }
        InternalRowPartitionComputer computer =
                new InternalRowPartitionComputer(
                        options.partitionDefaultName(),
                        table.rowType().project(table.partitionKeys()),
                        table.partitionKeys().toArray(new String[0]),
                        options.legacyPartitionName());
        Set<BinaryRow> partitions = new LinkedHashSet<>();
        messages.forEach(m -> partitions.add(m.partition()));
        List<String> paths = new ArrayList<>();
        for (BinaryRow p : partitions) {
            paths.add(PartitionPathUtils.generatePartitionPath(computer.generatePartValues(p)));
        }
        markDone(table, paths);
    }

    static ObjectNode procedure(JsonNode job) throws Exception {
        try (Catalog catalog = Tables.catalog(job)) {
            FileStoreTable table = (FileStoreTable) catalog.getTable(Tables.identifier(job));
            List<String> paths = new ArrayList<>();
            for (JsonNode spec : job.path("partitions")) {
                LinkedHashMap<String, String> values = new LinkedHashMap<>();
                for (String key : table.partitionKeys()) {
                    values.put(key, spec.get(key).asText());
                }
                paths.add(PartitionPathUtils.generatePartitionPath(values));
            }
            markDone(table, paths);
            return Main.JSON.createObjectNode();
        }
    }

    private static void markDone(FileStoreTable table, List<String> paths) throws Exception {
        List<PartitionMarkDoneAction> actions =
                PartitionMarkDoneAction.createActions(
                        MarkDone.class.getClassLoader(), table, table.coreOptions());
        try {
            for (String path : paths) {
                for (PartitionMarkDoneAction action : actions) {
                    action.markDone(path);
                }
            }
        } finally {
            for (PartitionMarkDoneAction action : actions) {
                action.close();
            }
        }
    }

    static ObjectNode successFile(JsonNode job) throws Exception {
        try (Catalog catalog = Tables.catalog(job)) {
            FileStoreTable table = (FileStoreTable) catalog.getTable(Tables.identifier(job));
            Path path;
            if (job.has("tag")) {
                FileStoreTable branch =
                        job.has("branch") ? table.switchToBranch(job.get("branch").asText()) : table;
                path =
                        new SuccessFileTagCallback(
                                        branch.fileIO(), branch.tagManager().tagDirectory())
                                .tagSuccessFilePath(job.get("tag").asText());
            } else {
                path = new Path(new Path(table.location(), job.get("partition").asText()), "_SUCCESS");
            }
            SuccessFile file = SuccessFile.safelyFromPath(table.fileIO(), path);
            ObjectNode answer = Main.JSON.createObjectNode();
            answer.put("exists", file != null);
            if (file != null) {
                answer.put("creationTime", file.creationTime());
                answer.put("modificationTime", file.modificationTime());
            }
            return answer;
        }
    }
}
