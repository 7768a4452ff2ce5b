package org.tidelake.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.CoreOptions;
import org.apache.paimon.crosspartition.GlobalIndexAssigner;
import org.apache.paimon.crosspartition.IndexBootstrap;
import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.index.SimpleHashBucketAssigner;
import org.apache.paimon.io.CompactIncrement;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataIncrement;
import org.apache.paimon.manifest.ManifestCommittable;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.operation.ListUnexistingFiles;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaChange;
import org.apache.paimon.table.BucketMode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;
import org.apache.paimon.table.sink.StreamTableCommit;
import org.apache.paimon.table.sink.StreamTableWrite;
import org.apache.paimon.table.sink.RowKeyExtractor;
import org.apache.paimon.table.sink.StreamWriteBuilder;
import org.apache.paimon.table.sink.TableCommitImpl;
import org.apache.paimon.table.sink.TableWrite;
import org.apache.paimon.types.RowKind;
import org.apache.paimon.types.RowType;

import javax.annotation.Nullable;

import java.nio.file.Files;
import java.util.ArrayList;
import java.util.HashSet;
import java.util.Set;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * Creates a table and writes it with Java's own writers.
 *
 * <p>Job: {@code "warehouse"}, {@code "table"} ({@code db.name}), {@code "schema"}: {@code
 * {"fields": [{"name", "type", "description"?}], "primary_keys", "partition_keys", "options"}} (types in
 * schema-file JSON; optionally {@code "comment"}), {@code "mode"}: {@code "batch"} (one {@code BatchWriteBuilder} write per
 * commit) or {@code "stream"} (one long-lived {@code StreamWriteBuilder} writer committing with
 * identifiers 1, 2, ..., so Java compacts as it does by default), and {@code "steps"}, in order:
 *
 * <ul>
 *   <li>{@code {"rows": [...]}}: one commit; a row is a list of canonical values ({@link Values})
 *       inserted, or {@code {"kind": "-D", "values": [...]}}; batch mode takes {@code
 *       "overwrite": true} or a partition spec object, or {@code "columns": [...]} and {@code
 *       "first_row_id": n} (data-evolution tables: rows of only those columns, replacing them in
 *       the rows from row id n on, as Spark's MERGE INTO writes them);
 *   <li>{@code {"alter": [...]}}: schema changes, each {@code {"add": name, "type": t}} (with
 *       {@code "first": true} or {@code "after": sibling}), {@code
 *       {"rename": old, "to": new}}, {@code {"drop": name}}, {@code {"update_type": name,
 *       "type": t}}, {@code {"set": key, "value": v}}, {@code {"remove": key}}, {@code {"move":
 *       name}} (first) or {@code {"move": name, "after": other}}, {@code {"nullable": name,
 *       "value": true|false}}, {@code {"comment": name, "value": text}} or {@code {"default":
 *       name, "value": text}}; a name other than a move's may be an array of names reaching a
 *       nested field ({@code ["s", "x"]}, Paimon's {@code fieldNames}) (ends the current stream
 *       writer; the next commit opens a new one);
 *   <li>{@code {"tag": name}}: a tag of the latest snapshot; {@code {"delete_tag": name}}:
 *       {@code Table.deleteTag} (both run the table's tag callbacks);
 *   <li>{@code {"compact": true}}: a full compaction of every bucket holding files, committed;
 *   <li>{@code {"create_branch": name}}: a branch, empty or {@code "from_tag"} (Java has no
 *       other starting point); {@code {"fast_forward": name}}: main takes the branch's history;
 *   <li>a {@code "rows"} step with {@code "branch": name} commits to that branch (batch mode),
 *       with {@code "watermark": ms} commits with that watermark (stream mode);
 *   <li>{@code {"compact_postpone": true}}: {@link Postpone#compact}, the compaction of a
 *       postpone-bucket table ({@code bucket = -2});
 *   <li>{@code {"compact_manifest": true}}: {@code BatchTableCommit.compactManifests()}, the
 *       {@code compact_manifest} procedure;
 *   <li>{@code {"remove_unexisting_files": true}}: {@link #removeUnexistingFiles};
 *   <li>{@code {"purge_files": true}}: {@code FileStoreTable.purgeFiles()}, the {@code
 *       purge_files} procedure (ends the current stream writer).
 * </ul>
 *
 * <p>{@code "existing": true} writes into the table as it is instead of creating it.
 *
 * <p>Writers get a temporary directory for lookups (spill files). Dynamic-bucket tables ({@code
 * bucket = -1} with a primary key) are written as Flink does, through a hash bucket assigner
 * ({@link Rows}); the job's table must be new so the assigner starts from an empty index.
 * Cross-partition-upsert tables are written through Java's global key index ({@link Rows}).
 *
 * <p>Answer: {@code "snapshot"}, the latest snapshot id (none for a table that is not Paimon's
 * own: a Hive catalog's format table, created and left empty).
 */
final class Writes {
    private Writes() {}

    private static final String TEMP_DIR = tempDir();

    private static String tempDir() {
        try {
            return Files.createTempDirectory("java-oracle").toString();
        } catch (java.io.IOException e) {
            throw new java.io.UncheckedIOException(e);
        }
    }

    /**
     * Writes rows into a {@link TableWrite}, picking buckets for dynamic-bucket tables, and for
     * cross-partition-upsert tables ({@code bucket = -1}, a primary key without a partition key)
     * through Java's global key index, bootstrapped from the table when the writer opens.
     */
    private static final class Rows implements AutoCloseable {
        private final RowType type;
        private final TableWrite write;
        private final RowKeyExtractor keys;
        private final SimpleHashBucketAssigner assigner;
        private final GlobalIndexAssigner index;

        /** {@code assigner}: the job's bucket assigner, used when the table is dynamic-bucket. */
        Rows(Table table, TableWrite write, SimpleHashBucketAssigner assigner) throws Exception {
            this.type = table.rowType();
            this.write = write.withIOManager(IOManager.create(TEMP_DIR));
            FileStoreTable store = (FileStoreTable) table;
            boolean dynamic = store.bucketMode() == BucketMode.HASH_DYNAMIC;
            this.keys = dynamic ? store.createRowKeyExtractor() : null;
            this.assigner = dynamic ? assigner : null;
            if (store.bucketMode() == BucketMode.KEY_DYNAMIC) {
                TableWrite target = this.write;
                index = new GlobalIndexAssigner(table);
                index.open(0, IOManager.create(TEMP_DIR), 1, 0, (row, bucket) -> {
                    try {
                        target.write(row, bucket);
                    } catch (Exception e) {
                        throw new RuntimeException(e);
                    }
                });
                new IndexBootstrap(store).bootstrap(1, 0, row -> {
                    try {
                        index.bootstrapKey(row);
                    } catch (java.io.IOException e) {
                        throw new java.io.UncheckedIOException(e);
                    }
                });
                index.endBoostrap(false);
            } else {
                index = null;
            }
        }

        /**
         * A bucket assigner for one job over {@code table} (new, so its index is empty); none for
         * a table that is not Paimon's own (a Hive catalog's format table).
         */
        static SimpleHashBucketAssigner assigner(Table table) {
            if (!(table instanceof FileStoreTable)) {
                return null;
            }
            CoreOptions options = ((FileStoreTable) table).coreOptions();
            Integer max = options.dynamicBucketMaxBuckets();
            return new SimpleHashBucketAssigner(
                    1, 0, options.dynamicBucketTargetRowNum(), max == null ? -1 : max);
        }

        @Override
        public void close() throws Exception {
            if (index != null) {
                index.close();
            }
        }

        void write(JsonNode rows) throws Exception {
            for (JsonNode r : rows) {
                GenericRow row = row(r, type);
                if (index != null) {
                    index.processInput(row);
                } else if (assigner == null) {
                    write.write(row);
                } else {
                    keys.setRecord(row);
                    write.write(row, assigner.assign(keys.partition(), keys.trimmedPrimaryKey().hashCode()));
                }
            }
        }
    }

    static ObjectNode run(JsonNode job) throws Exception {
        Identifier id = Tables.identifier(job);
        try (Catalog catalog = Tables.catalog(job)) {
            catalog.createDatabase(id.getDatabaseName(), true);
            if (!job.path("existing").asBoolean(false)) {
                catalog.createTable(id, schema(job.get("schema")), false);
            }
            boolean stream = job.path("mode").asText("batch").equals("stream");
            SimpleHashBucketAssigner assigner = Rows.assigner(catalog.getTable(id));
            Streaming streaming = null;
            long identifier = 0;
            for (JsonNode step : job.path("steps")) {
                if (step.has("alter")) {
                    if (streaming != null) {
                        streaming.close();
                        streaming = null;
                    }
                    catalog.alterTable(id, changes(step.get("alter")), false);
                } else if (step.has("compact_postpone")) {
                    if (streaming != null) {
                        streaming.close();
                        streaming = null;
                    }
                    Postpone.compact((FileStoreTable) catalog.getTable(id), TEMP_DIR);
                } else if (step.has("tag")) {
                    catalog.getTable(id).createTag(step.get("tag").asText());
                } else if (step.has("delete_tag")) {
                    catalog.getTable(id).deleteTag(step.get("delete_tag").asText());
                } else if (step.has("create_branch")) {
                    String branch = step.get("create_branch").asText();
                    if (step.has("from_tag")) {
                        catalog.getTable(id).createBranch(branch, step.get("from_tag").asText());
                    } else {
                        catalog.getTable(id).createBranch(branch);
                    }
                } else if (step.has("fast_forward")) {
                    catalog.getTable(id).fastForward(step.get("fast_forward").asText());
                } else if (step.has("remove_unexisting_files")) {
                    removeUnexistingFiles((FileStoreTable) catalog.getTable(id));
                } else if (step.has("purge_files")) {
                    if (streaming != null) {
                        streaming.close();
                        streaming = null;
                    }
                    ((FileStoreTable) catalog.getTable(id)).purgeFiles();
                } else if (step.has("compact_manifest")) {
                    try (BatchTableCommit commit =
                            catalog.getTable(id).newBatchWriteBuilder().newCommit()) {
                        commit.compactManifests();
                    }
                } else if (step.has("compact") && stream) {
                    if (streaming == null) {
                        streaming = new Streaming(catalog.getTable(id), assigner);
                    }
                    streaming.compact(++identifier, catalog.getTable(id));
                } else if (step.has("compact")) {
                    BatchWriteBuilder builder = catalog.getTable(id).newBatchWriteBuilder();
                    try (BatchTableWrite write = builder.newWrite();
                            BatchTableCommit commit = builder.newCommit()) {
                        write.withIOManager(IOManager.create(TEMP_DIR));
                        compactAll(catalog.getTable(id), write);
                        commit.commit(write.prepareCommit());
                    }
                } else if (stream && !step.has("branch")) {
                    if (streaming != null && step.has("overwrite")) {
                        throw new IllegalArgumentException("overwrite needs batch mode");
                    }
                    if (streaming == null) {
                        streaming = new Streaming(catalog.getTable(id), assigner);
                    }
                    streaming.commit(
                            ++identifier,
                            step.get("rows"),
                            step.has("watermark") ? step.get("watermark").asLong() : null);
                } else {
                    batchCommit(catalog.getTable(Tables.identifier(job, step)), step, assigner);
                }
            }
            if (streaming != null) {
                streaming.close();
            }
            ObjectNode answer = Main.JSON.createObjectNode();
            Table table = catalog.getTable(id);
            if (table instanceof FileStoreTable) {
                table.latestSnapshot().ifPresent(s -> answer.put("snapshot", s.id()));
            }
            return answer;
        }
    }

    private static Schema schema(JsonNode s) {
        Schema.Builder b = Schema.newBuilder();
        for (JsonNode f : s.path("fields")) {
            b.column(
                    f.get("name").asText(),
                    Tables.type(f.get("type")),
                    f.hasNonNull("description") ? f.get("description").asText() : null);
        }
        b.primaryKey(strings(s.path("primary_keys")));
        b.partitionKeys(strings(s.path("partition_keys")));
        s.path("options").fields().forEachRemaining(e -> b.option(e.getKey(), e.getValue().asText()));
        if (s.hasNonNull("comment")) {
            b.comment(s.get("comment").asText());
        }
        return b.build();
    }

    private static List<String> strings(JsonNode list) {
        List<String> out = new ArrayList<>();
        list.forEach(n -> out.add(n.asText()));
        return out;
    }

    /** A column: a name, or an array of names reaching a nested field (Paimon's fieldNames). */
    private static String[] path(JsonNode column) {
        if (!column.isArray()) {
            return new String[] {column.asText()};
        }
        String[] out = new String[column.size()];
        for (int i = 0; i < out.length; i++) {
            out[i] = column.get(i).asText();
        }
        return out;
    }

    private static List<SchemaChange> changes(JsonNode alter) {
        List<SchemaChange> out = new ArrayList<>();
        for (JsonNode c : alter) {
            if (c.has("add")) {
                String[] path = path(c.get("add"));
                String name = path[path.length - 1];
                SchemaChange.Move move =
                        c.has("after")
                                ? SchemaChange.Move.after(name, c.get("after").asText())
                                : c.path("first").asBoolean() ? SchemaChange.Move.first(name) : null;
                out.add(SchemaChange.addColumn(path, Tables.type(c.get("type")), null, move));
            } else if (c.has("rename")) {
                out.add(SchemaChange.renameColumn(path(c.get("rename")), c.get("to").asText()));
            } else if (c.has("drop")) {
                out.add(SchemaChange.dropColumn(path(c.get("drop"))));
            } else if (c.has("update_type")) {
                out.add(SchemaChange.updateColumnType(
                        path(c.get("update_type")), Tables.type(c.get("type")), false));
            } else if (c.has("set")) {
                out.add(SchemaChange.setOption(c.get("set").asText(), c.get("value").asText()));
            } else if (c.has("remove")) {
                out.add(SchemaChange.removeOption(c.get("remove").asText()));
            } else if (c.has("move")) {
                String name = c.get("move").asText();
                out.add(SchemaChange.updateColumnPosition(
                        c.has("after")
                                ? SchemaChange.Move.after(name, c.get("after").asText())
                                : SchemaChange.Move.first(name)));
            } else if (c.has("nullable")) {
                out.add(SchemaChange.updateColumnNullability(
                        path(c.get("nullable")), c.get("value").asBoolean()));
            } else if (c.has("comment")) {
                out.add(SchemaChange.updateColumnComment(
                        path(c.get("comment")), c.get("value").asText()));
            } else if (c.has("default")) {
                out.add(SchemaChange.updateColumnDefaultValue(
                        path(c.get("default")), c.get("value").asText()));
            } else {
                throw new IllegalArgumentException("unknown schema change " + c);
            }
        }
        return out;
    }

    private static GenericRow row(JsonNode r, RowType type) {
        if (r.isArray()) {
            return Values.parseRow(r, type);
        }
        GenericRow row = Values.parseRow(r.get("values"), type);
        row.setRowKind(RowKind.fromShortString(r.get("kind").asText()));
        return row;
    }

    private static void batchCommit(Table table, JsonNode step, SimpleHashBucketAssigner assigner)
            throws Exception {
        if (step.has("columns")) {
            columnCommit(table, step);
            return;
        }
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        JsonNode overwrite = step.path("overwrite");
        if (overwrite.isBoolean() && overwrite.asBoolean()) {
            builder = builder.withOverwrite();
        } else if (overwrite.isObject()) {
            Map<String, String> partition = new LinkedHashMap<>();
            overwrite.fields().forEachRemaining(e -> partition.put(e.getKey(), e.getValue().asText()));
            builder = builder.withOverwrite(partition);
        }
        try (BatchTableWrite write = builder.newWrite();
                BatchTableCommit commit = builder.newCommit()) {
            // lookups (deletion vectors, lookup changelogs) spill to a temp directory
            write.withIOManager(IOManager.create(TEMP_DIR));
            try (Rows rows = new Rows(table, write, assigner)) {
                rows.write(step.path("rows"));
            }
            List<CommitMessage> messages = write.prepareCommit();
            commit.commit(messages);
            if (table instanceof FileStoreTable) {
                MarkDone.afterBatchWrite((FileStoreTable) table, messages);
            }
        }
    }

    /** A data-evolution write: files of some columns only, for existing row ids. */
    private static void columnCommit(Table table, JsonNode step) throws Exception {
        RowType type = table.rowType().project(strings(step.get("columns")));
        long firstRowId = step.get("first_row_id").asLong();
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        try (BatchTableWrite write = builder.newWrite().withWriteType(type);
                BatchTableCommit commit = builder.newCommit()) {
            for (JsonNode r : step.path("rows")) {
                write.write(Values.parseRow(r, type));
            }
            List<CommitMessage> messages = new ArrayList<>();
            for (CommitMessage m : write.prepareCommit()) {
                CommitMessageImpl c = (CommitMessageImpl) m;
                List<DataFileMeta> files = new ArrayList<>();
                for (DataFileMeta f : c.newFilesIncrement().newFiles()) {
                    files.add(f.assignFirstRowId(firstRowId));
                }
                messages.add(
                        new CommitMessageImpl(
                                c.partition(),
                                c.bucket(),
                                c.totalBuckets(),
                                new DataIncrement(files, List.of(), List.of()),
                                c.compactIncrement()));
            }
            commit.commit(messages);
        }
    }

    /** Asks {@code write} for a full compaction of every (partition, bucket) holding files. */
    private static void compactAll(Table table, TableWrite write) throws Exception {
        Set<List<Object>> seen = new HashSet<>();
        for (ManifestEntry e : ((FileStoreTable) table).store().newScan().plan().files()) {
            if (seen.add(List.of(e.partition(), e.bucket()))) {
                write.compact(e.partition(), e.bucket(), true);
            }
        }
    }

    /** A long-lived streaming writer and its committer. */
    private static final class Streaming implements AutoCloseable {
        private final StreamTableWrite write;
        private final StreamTableCommit commit;
        private final Rows rows;
        /** As Flink's writer: a table that needs lookup (deletion vectors, lookup changelog)
         * waits for its compaction at each commit ({@code lookup-wait}), others do not. */
        private final boolean waitCompaction;

        Streaming(Table table, SimpleHashBucketAssigner assigner) throws Exception {
            StreamWriteBuilder builder = table.newStreamWriteBuilder();
            write = builder.newWrite();
            commit = builder.newCommit();
            rows = new Rows(table, write, assigner);
            waitCompaction = ((FileStoreTable) table).coreOptions().prepareCommitWaitCompaction();
        }

        void commit(long identifier, JsonNode input, @Nullable Long watermark) throws Exception {
            rows.write(input);
            List<CommitMessage> messages = write.prepareCommit(waitCompaction, identifier);
            if (watermark == null) {
                commit.commit(identifier, messages);
                return;
            }
            ManifestCommittable committable = new ManifestCommittable(identifier, watermark);
            messages.forEach(committable::addFileCommittable);
            ((TableCommitImpl) commit).commit(committable);
        }

        void compact(long identifier, Table table) throws Exception {
            compactAll(table, write);
            commit.commit(identifier, write.prepareCommit(true, identifier));
        }

        @Override
        public void close() throws Exception {
            rows.close();
            write.close();
            commit.close();
        }
    }

    /**
     * The {@code remove_unexisting_files} procedure as Paimon's Spark and Flink actions run it:
     * {@link ListUnexistingFiles} per partition, then one commit (identifier {@code
     * Long.MAX_VALUE}) of messages deleting those files.
     */
    static void removeUnexistingFiles(FileStoreTable table) throws Exception {
        ListUnexistingFiles operation = new ListUnexistingFiles(table);
        List<CommitMessage> messages = new ArrayList<>();
        for (BinaryRow partition : table.newScan().listPartitions()) {
            for (Map.Entry<Integer, Map<String, DataFileMeta>> bucket :
                    operation.list(partition).entrySet()) {
                messages.add(
                        new CommitMessageImpl(
                                partition,
                                bucket.getKey(),
                                table.coreOptions().bucket(),
                                new DataIncrement(
                                        java.util.Collections.emptyList(),
                                        new ArrayList<>(bucket.getValue().values()),
                                        java.util.Collections.emptyList()),
                                CompactIncrement.emptyIncrement()));
            }
        }
        if (!messages.isEmpty()) {
            try (TableCommitImpl commit = table.newCommit(java.util.UUID.randomUUID().toString())) {
                commit.commit(Long.MAX_VALUE, messages);
            }
        }
    }
}
