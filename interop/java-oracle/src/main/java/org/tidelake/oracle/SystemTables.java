package org.tidelake.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.Identifier;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.stats.Statistics;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.TableCommitImpl;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.RowType;
import org.apache.paimon.utils.JsonSerdeUtil;

import java.util.Iterator;
import java.util.UUID;

/**
 * System tables through Java's catalog.
 *
 * <p>{@code system_table}: every row of the table {@code "table"} names, a data table's system
 * table ({@code db.t$ro}, {@code db.t$branch_b$files}) or a global one ({@code
 * sys.all_table_options}). Answer: {@code "fields"} (names), {@code "types"} (each column's type
 * as Java prints it, nullability included), {@code "rows"} (canonical JSON, {@link Values}).
 *
 * <p>{@code analyze}: commit statistics for the job's table as Spark's {@code ANALYZE} does (an
 * {@code ANALYZE} snapshot with a statistics file): {@code "statistics"} holds the statistics
 * file's JSON without {@code snapshotId} and {@code schemaId}, which are the latest snapshot's
 * and the table's current schema.
 */
final class SystemTables {
    private SystemTables() {}

    static ObjectNode read(JsonNode job) throws Exception {
        Table table;
        try (Catalog catalog = Tables.catalog(job)) {
            table = catalog.getTable(Identifier.fromString(job.path("table").asText()));
        }
        RowType type = table.rowType();
        ObjectNode answer = Main.JSON.createObjectNode();
        ArrayNode fields = answer.putArray("fields");
        ArrayNode types = answer.putArray("types");
        for (DataField f : type.getFields()) {
            fields.add(f.name());
            types.add(f.type().toString());
        }
        ArrayNode rows = answer.putArray("rows");
        ReadBuilder builder = table.newReadBuilder();
        try (RecordReader<InternalRow> reader =
                builder.newRead().createReader(builder.newScan().plan().splits())) {
            Iterator<InternalRow> it = reader.toCloseableIterator();
            while (it.hasNext()) {
                rows.add(Values.renderRow(it.next(), type));
            }
        }
        return answer;
    }

    static ObjectNode analyze(JsonNode job) throws Exception {
        try (Catalog catalog = Tables.catalog(job)) {
            FileStoreTable table = (FileStoreTable) catalog.getTable(Tables.identifier(job));
            ObjectNode json = ((ObjectNode) job.get("statistics")).deepCopy();
            json.put("snapshotId", table.snapshotManager().latestSnapshotId());
            json.put("schemaId", table.schema().id());
            Statistics stats = JsonSerdeUtil.fromJson(json.toString(), Statistics.class);
            try (TableCommitImpl commit = table.newCommit(UUID.randomUUID().toString())) {
                commit.updateStatistics(stats);
            }
            return Main.JSON.createObjectNode();
        }
    }
}
