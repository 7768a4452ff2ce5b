package org.tidelake.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.fileindex.FileIndexPredicate;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.io.DataFilePathFactory;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.table.FileStoreTable;
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
 * no row matches); {@code "planned"}: how many data files Java's scan with the filter plans.
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
                    f.put("index", "embedded");
                    index = new FileIndexPredicate(file.embeddedIndex(), rowType);
                } else {
                    for (String extra : file.extraFiles()) {
                        if (extra.endsWith(DataFilePathFactory.INDEX_PATH_SUFFIX)) {
                            f.put("index", "file");
                            index =
                                    new FileIndexPredicate(
                                            dir.toAlignedPath(extra, file), table.fileIO(), rowType);
                        }
                    }
                }
                if (index == null) {
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
}
