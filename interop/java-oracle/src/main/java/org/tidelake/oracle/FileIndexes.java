package org.tidelake.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import java.io.File;
import java.io.InputStream;
import java.lang.reflect.Method;
import java.net.URL;
import java.net.URLClassLoader;
import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import org.apache.paimon.CoreOptions;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.fileindex.FileIndexPredicate;
import org.apache.paimon.io.CompactIncrement;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataFilePathFactory;
import org.apache.paimon.io.DataIncrement;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.Split;

/**
 * Java's own data-file index reader over a table's files ({@code "op": "file_index"}): for each
 * data file of the latest snapshot, whether {@link FileIndexPredicate} (what Paimon's scan and
 * read skip files with) keeps it under {@code "filter"} (a {@link Reads} predicate).
 *
 * <p>Job: {@code "path"} (or {@code "warehouse"} + {@code "table"}), {@code "filter"}. Answer:
 * {@code "files"}: per data file {@code "file"}, {@code "rows"}, {@code "index"} ({@code
 * "embedded"}, {@code "file"} or {@code "none"}) and {@code "remain"} (false: the index proves
 * no row matches), {@code "hex"} (the index bytes, embedded or of the index file);
 * {@code "planned"}: how many data files Java's scan with the filter plans.
 *
 * <p>{@code "op": "rewrite_file_index"} runs Java's own rewrite of a table's file indexes
 * ({@code RewriteFileIndexSink.FileIndexProcessor}, what Flink's {@code rewrite_file_index}
 * procedure runs per live data file; loaded alone from Paimon's Flink connector, listed in
 * {@code target/flink-classpath.txt}, since the connector's factories need Flink), committed as the procedure's sink commits it: one
 * compaction increment per file (before: the entry, after: the entry with the new index).
 * Job: the table, optional {@code "partitions"} (a list of {@code {column: value}}). Answer:
 * {@code "files"} rewritten, {@code "snapshot"} (the latest snapshot id, null without one).
 */
final class FileIndexes {
    private FileIndexes() {}

    static ObjectNode evaluate(JsonNode job) throws Exception {
        FileStoreTable table = (FileStoreTable) Reads.open(job);
        Predicate filter = Reads.predicate(job.get("filter"), table.rowType());
        ObjectNode answer = Main.JSON.createObjectNode();
        ArrayNode files = answer.putArray("files");
        for (Split split : table.newReadBuilder().newScan().plan().splits()) {
            DataSplit data = (DataSplit) split;
            DataFilePathFactory dir =
                    table.store()
                            .pathFactory()
                            .createDataFilePathFactory(data.partition(), data.bucket());
            for (DataFileMeta file : data.dataFiles()) {
                ObjectNode f = files.addObject();
                f.put("file", file.fileName());
                f.put("rows", file.rowCount());
                org.apache.paimon.types.RowType rowType =
                        table.schemaManager().schema(file.schemaId()).logicalRowType();
                FileIndexPredicate index = null;
                if (file.embeddedIndex() != null) {
                    f.put("hex", HexFormat.of().formatHex(file.embeddedIndex()));
                    f.put("index", "embedded");
                    index = new FileIndexPredicate(file.embeddedIndex(), rowType);
                } else {
                    for (String extra : file.extraFiles()) {
                        if (extra.endsWith(DataFilePathFactory.INDEX_PATH_SUFFIX)) {
                            f.put("index", "file");
                            try (InputStream in =
                                    table.fileIO().newInputStream(dir.toAlignedPath(extra, file))) {
                                f.put("hex", HexFormat.of().formatHex(in.readAllBytes()));
                            }
                            index =
                                    new FileIndexPredicate(
                                            dir.toAlignedPath(extra, file), table.fileIO(), rowType);
                        }
                    }
                }
                if (index == null) {
                    f.putNull("hex");
                    f.put("index", "none");
                    f.put("remain", true);
                    continue;
                }
                try (FileIndexPredicate p = index) {
                    f.put("remain", p.evaluate(filter).remain());
                }
            }
        }
        int planned = 0;
        for (Split split : table.newReadBuilder().withFilter(filter).newScan().plan().splits()) {
            planned += ((DataSplit) split).dataFiles().size();
        }
        answer.put("planned", planned);
        return answer;
    }

    static ObjectNode rewrite(JsonNode job) throws Exception {
        FileStoreTable table = (FileStoreTable) Reads.open(job);
        Predicate partitions = null;
        if (job.has("partitions")) {
            List<Predicate> specs = new ArrayList<>();
            for (JsonNode spec : job.get("partitions")) {
                Map<String, String> values = new LinkedHashMap<>();
                spec.fields().forEachRemaining(e -> values.put(e.getKey(), e.getValue().asText()));
                specs.add(
                        PredicateBuilder.partition(
                                values,
                                table.schema().logicalPartitionType(),
                                CoreOptions.PARTITION_DEFAULT_NAME.defaultValue()));
            }
            partitions = PredicateBuilder.or(specs.toArray(new Predicate[0]));
        }
        Class<?> processorClass = flinkConnector().loadClass(PROCESSOR);
        Object processor = processorClass.getConstructor(FileStoreTable.class).newInstance(table);
        Method process =
                processorClass.getMethod(
                        "process", BinaryRow.class, int.class, ManifestEntry.class);
        List<CommitMessage> messages = new ArrayList<>();
        for (ManifestEntry entry :
                table.store().newScan().withPartitionFilter(partitions).plan().files()) {
            DataFileMeta indexed =
                    (DataFileMeta)
                            process.invoke(processor, entry.partition(), entry.bucket(), entry);
            messages.add(
                    new CommitMessageImpl(
                            entry.partition(),
                            entry.bucket(),
                            entry.totalBuckets(),
                            DataIncrement.emptyIncrement(),
                            new CompactIncrement(
                                    List.of(entry.file()), List.of(indexed), List.of())));
        }
        try (BatchTableCommit commit = table.newBatchWriteBuilder().newCommit()) {
            commit.commit(messages);
        }
        ObjectNode answer = Main.JSON.createObjectNode();
        answer.put("files", messages.size());
        Long latest = table.snapshotManager().latestSnapshotId();
        if (latest == null) {
            answer.putNull("snapshot");
        } else {
            answer.put("snapshot", latest);
        }
        return answer;
    }

    private static final String PROCESSOR =
            "org.apache.paimon.flink.sink.RewriteFileIndexSink$FileIndexProcessor";

    /** Paimon's Flink connector jar over the oracle's classes (Paimon's own classes from here). */
    private static ClassLoader flinkConnector() throws Exception {
        java.nio.file.Path listed =
                java.nio.file.Path.of(
                                FileIndexes.class
                                        .getProtectionDomain()
                                        .getCodeSource()
                                        .getLocation()
                                        .toURI())
                        .resolveSibling("flink-classpath.txt");
        List<URL> urls = new ArrayList<>();
        for (String jar : Files.readString(listed).trim().split(File.pathSeparator)) {
            urls.add(new File(jar).toURI().toURL());
        }
        return new URLClassLoader(urls.toArray(new URL[0]), FileIndexes.class.getClassLoader());
    }
}
