package org.tidelake.oracle;

import org.apache.paimon.data.BinaryRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.fs.Path;
import org.apache.paimon.io.CompactIncrement;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataFilePathFactory;
import org.apache.paimon.io.DataIncrement;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.table.BucketMode;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;
import org.apache.paimon.table.source.DataSplit;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.TableRead;

import java.util.ArrayList;
import java.util.Collections;
import java.util.Comparator;
import java.util.HashMap;
import java.util.Iterator;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The compaction of postpone-bucket tables, as Paimon 1.3.1's Flink job does it ({@code
 * CompactAction.buildForPostponeBucketCompaction}) with one reader and one writer, on Paimon's
 * core API (the job itself lives in paimon-flink): per partition, the postpone files oldest
 * first ({@code PostponeBucketCompactSplitSource}) are read without merging and written by a
 * fixed-bucket writer of the partition's bucket count (its real buckets', else {@code
 * postpone.default-bucket-num}); its new files become compaction output ({@code
 * PostponeBucketCommittableRewriter}) and the postpone files compaction input ({@code
 * RemovePostponeBucketFilesOperator}), all in one commit.
 */
final class Postpone {
    private Postpone() {}

    static void compact(FileStoreTable table, String tempDir) throws Exception {
        int defaultBuckets =
                Integer.parseInt(table.options().getOrDefault("postpone.default-bucket-num", "1"));
        FileStoreTable scanTable = withBuckets(table, defaultBuckets);
        List<BinaryRow> partitions =
                scanTable.newSnapshotReader().withBucket(BucketMode.POSTPONE_BUCKET).partitions();
        List<CommitMessage> messages = new ArrayList<>();
        for (BinaryRow partition : partitions) {
            int buckets = defaultBuckets;
            Iterator<ManifestEntry> real =
                    table.newSnapshotReader()
                            .withPartitionFilter(Collections.singletonList(partition))
                            .onlyReadRealBuckets()
                            .readFileIterator();
            if (real.hasNext()) {
                buckets = real.next().totalBuckets();
            }
            FileStoreTable realTable = withBuckets(table, buckets);
            List<Split> splits =
                    realTable.newSnapshotReader()
                            .withPartitionFilter(Collections.singletonList(partition))
                            .withBucket(BucketMode.POSTPONE_BUCKET)
                            .read()
                            .splits();
            try (BatchTableWrite write = realTable.newBatchWriteBuilder().newWrite()) {
                write.withIOManager(IOManager.create(tempDir));
                TableRead read = realTable.newRead();
                for (Split split : splits) {
                    DataSplit s = (DataSplit) split;
                    List<DataFileMeta> files = new ArrayList<>(s.dataFiles());
                    files.sort(Comparator.comparing(DataFileMeta::creationTime));
                    for (DataFileMeta file : files) {
                        DataSplit one =
                                DataSplit.builder()
                                        .withPartition(s.partition())
                                        .withBucket(s.bucket())
                                        .withBucketPath(s.bucketPath())
                                        .withTotalBuckets(s.totalBuckets())
                                        .withDataFiles(Collections.singletonList(file))
                                        .isStreaming(false)
                                        .build();
                        try (RecordReader<InternalRow> rows = read.createReader(one)) {
                            rows.forEachRemaining(
                                    row -> {
                                        try {
                                            write.write(row);
                                        } catch (Exception e) {
                                            throw new RuntimeException(e);
                                        }
                                    });
                        }
                    }
                    messages.add(
                            new CommitMessageImpl(
                                    s.partition(),
                                    s.bucket(),
                                    s.totalBuckets(),
                                    DataIncrement.emptyIncrement(),
                                    new CompactIncrement(
                                            s.dataFiles(),
                                            Collections.emptyList(),
                                            Collections.emptyList())));
                }
                for (CommitMessage m : write.prepareCommit()) {
                    messages.add(asCompaction(realTable, (CommitMessageImpl) m));
                }
            }
        }
        try (BatchTableCommit commit = table.newBatchWriteBuilder().newCommit()) {
            commit.commit(messages);
        }
    }

    private static FileStoreTable withBuckets(FileStoreTable table, int buckets) {
        Map<String, String> options = new HashMap<>(table.options());
        options.put("bucket", String.valueOf(buckets));
        return table.copy(table.schema().copy(options));
    }

    /** {@code PostponeBucketCommittableRewriter} for one writer's message. */
    private static CommitMessage asCompaction(FileStoreTable table, CommitMessageImpl m) {
        DataFilePathFactory paths =
                table.store().pathFactory().createDataFilePathFactory(m.partition(), m.bucket());
        Map<String, DataFileMeta> newFiles = new LinkedHashMap<>();
        for (DataFileMeta f : m.newFilesIncrement().newFiles()) {
            newFiles.put(f.fileName(), f);
        }
        List<DataFileMeta> before = new ArrayList<>();
        Map<String, Path> toDelete = new HashMap<>();
        for (DataFileMeta f : m.compactIncrement().compactBefore()) {
            if (newFiles.remove(f.fileName()) != null) {
                toDelete.put(f.fileName(), paths.toPath(f));
            } else {
                before.add(f);
            }
        }
        List<DataFileMeta> after = new ArrayList<>(newFiles.values());
        for (DataFileMeta f : m.compactIncrement().compactAfter()) {
            after.add(f);
            toDelete.remove(f.fileName());
        }
        toDelete.values().forEach(p -> table.fileIO().deleteQuietly(p));
        List<DataFileMeta> changelog = new ArrayList<>(m.newFilesIncrement().changelogFiles());
        changelog.addAll(m.compactIncrement().changelogFiles());
        return new CommitMessageImpl(
                m.partition(),
                m.bucket(),
                m.totalBuckets(),
                DataIncrement.emptyIncrement(),
                new CompactIncrement(
                        before,
                        after,
                        changelog,
                        m.compactIncrement().newIndexFiles(),
                        m.compactIncrement().deletedIndexFiles()));
    }
}
