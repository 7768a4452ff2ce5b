package org.tidelake.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.catalog.CatalogContext;
import org.apache.paimon.fs.FileIO;
import org.apache.paimon.fs.Path;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.table.FileStoreTableFactory;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.table.source.Split;
import org.apache.paimon.table.source.StreamTableScan;
import org.apache.paimon.table.source.TableRead;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.RowType;
import org.apache.paimon.utils.JsonSerdeUtil;

import java.util.ArrayList;
import java.util.HashMap;
import java.util.Iterator;
import java.util.List;
import java.util.Map;

/**
 * A batch read with Paimon's {@code ReadBuilder}.
 *
 * <p>Job: {@code "path"} (a table directory) or {@code "warehouse"} + {@code "table"}; {@code
 * "options"}: dynamic options selecting what is read ({@code scan.snapshot-id}, {@code
 * scan.tag-name}, {@code scan.timestamp-millis}, {@code incremental-between}, ...); {@code
 * "projection"}: column names; {@code "filter"}: a predicate (below), applied exactly ({@code
 * executeFilter}); {@code "branch"}: read that branch ({@link Tables}). Answer: {@code "fields"}, {@code "type"} (the read row type as schema-file JSON, nested
 * field ids included), {@code "rows"} (canonical JSON, {@link Values}) and {@code "kinds"} (each
 * row's kind, {@code +I -U +U -D}).
 *
 * <p>{@code "stream": {"from": a, "to": b}} reads instead what a streaming read starting at
 * snapshot {@code a} ({@code scan.mode = from-snapshot}) returns until it has consumed snapshot
 * {@code b}: the changes of snapshots a..b (changelog files, or the deltas of APPEND commits).
 * {@code "stream": {"first": true}} reads instead the first plan of a streaming read started as
 * the options say ({@code scan.mode}, ...) and also answers {@code "next_snapshot"}: the scan's
 * checkpoint after it (the snapshot whose changes come next).
 *
 * <p>Predicates: {@code {"op": "and"|"or", "args": [...]}}, {@code {"op": "="|"!="|"<"|"<="|">"|
 * ">=", "field": f, "value": v}}, {@code {"op": "is_null"|"is_not_null", "field": f}}, {@code
 * {"op": "in", "field": f, "values": [...]}}.
 */
final class Reads {
    private Reads() {}

    static ObjectNode run(JsonNode job) throws Exception {
        Table table = open(job);
        Map<String, String> dynamic = new HashMap<>();
        job.path("options").fields().forEachRemaining(e -> dynamic.put(e.getKey(), e.getValue().asText()));
        JsonNode stream = job.get("stream");
        boolean firstPlan = stream != null && stream.path("first").asBoolean(false);
        if (stream != null && !firstPlan) {
            dynamic.put("scan.mode", "from-snapshot");
            dynamic.put("scan.snapshot-id", stream.get("from").asText());
        }
        if (!dynamic.isEmpty()) {
            table = table.copy(dynamic);
        }
        RowType rowType = table.rowType();
        ReadBuilder builder = table.newReadBuilder();
        RowType outType = rowType;
        if (job.has("projection")) {
            List<String> names = new ArrayList<>();
            job.get("projection").forEach(n -> names.add(n.asText()));
            int[] projection = names.stream().mapToInt(rowType::getFieldIndex).toArray();
            for (int i = 0; i < projection.length; i++) {
                if (projection[i] < 0) {
                    throw new IllegalArgumentException("no column '" + names.get(i) + "'");
                }
            }
            builder = builder.withProjection(projection);
            outType = rowType.project(names);
        }
        if (job.has("filter")) {
            builder = builder.withFilter(predicate(job.get("filter"), rowType));
        }
        TableRead read = builder.newRead();
        if (job.has("filter")) {
            read = read.executeFilter();
        }
        ObjectNode answer = Main.JSON.createObjectNode();
        ArrayNode fields = answer.putArray("fields");
        outType.getFieldNames().forEach(fields::add);
        answer.set("type", Main.JSON.readTree(JsonSerdeUtil.toJson(outType)));
        ArrayNode rows = answer.putArray("rows");
        ArrayNode kinds = answer.putArray("kinds");
        if (stream == null) {
            collect(read, builder.newScan().plan().splits(), outType, rows, kinds);
            return answer;
        }
        if (firstPlan) {
            StreamTableScan scan = builder.newStreamScan();
            collect(read, scan.plan().splits(), outType, rows, kinds);
            Long next = scan.checkpoint();
            answer.put("next_snapshot", next == null ? -1 : next);
            return answer;
        }
        long to = stream.get("to").asLong();
        StreamTableScan scan = builder.newStreamScan();
        Long next = null;
        int stalled = 0;
        while (next == null || next <= to) {
            List<Split> splits = scan.plan().splits();
            Long after = scan.checkpoint();
            // A plan with data read snapshot after - 1 (a plan skips snapshots without changes).
            if (!splits.isEmpty() && after != null && after - 1 > to) {
                break;
            }
            collect(read, splits, outType, rows, kinds);
            stalled = splits.isEmpty() && after != null && after.equals(next) ? stalled + 1 : 0;
            if (stalled > 3) {
                throw new IllegalStateException("the streaming read stopped at snapshot " + next);
            }
            next = after;
        }
        return answer;
    }

    private static void collect(
            TableRead read, List<Split> splits, RowType type, ArrayNode rows, ArrayNode kinds)
            throws Exception {
        try (RecordReader<InternalRow> reader = read.createReader(splits)) {
            Iterator<InternalRow> it = reader.toCloseableIterator();
            while (it.hasNext()) {
                InternalRow row = it.next();
                rows.add(Values.renderRow(row, type));
                kinds.add(row.getRowKind().shortString());
            }
        }
    }

    static Table open(JsonNode job) throws Exception {
        if (job.has("path")) {
            if (job.has("branch")) {
                throw new IllegalArgumentException("a branch is read through its warehouse and table");
            }
            Path path = new Path(job.get("path").asText());
            FileIO io = FileIO.get(path, CatalogContext.create(new org.apache.paimon.options.Options()));
            return FileStoreTableFactory.create(io, path);
        }
        try (Catalog catalog = Tables.catalog(job)) {
            return catalog.getTable(Tables.identifier(job));
        }
    }

    static Predicate predicate(JsonNode p, RowType rowType) {
        String op = p.path("op").asText();
        if (op.equals("and") || op.equals("or")) {
            List<Predicate> args = new ArrayList<>();
            p.get("args").forEach(a -> args.add(predicate(a, rowType)));
            return op.equals("and") ? PredicateBuilder.and(args) : PredicateBuilder.or(args);
        }
        PredicateBuilder b = new PredicateBuilder(rowType);
        String name = p.path("field").asText();
        int idx = rowType.getFieldIndex(name);
        if (idx < 0) {
            throw new IllegalArgumentException("no column '" + name + "'");
        }
        DataType type = rowType.getTypeAt(idx);
        switch (op) {
            case "is_null":
                return b.isNull(idx);
            case "is_not_null":
                return b.isNotNull(idx);
            case "in":
                List<Object> values = new ArrayList<>();
                p.get("values").forEach(v -> values.add(Values.parse(v, type)));
                return b.in(idx, values);
            default:
                break;
        }
        Object v = Values.parse(p.get("value"), type);
        switch (op) {
            case "=":
                return b.equal(idx, v);
            case "!=":
                return b.notEqual(idx, v);
            case "<":
                return b.lessThan(idx, v);
            case "<=":
                return b.lessOrEqual(idx, v);
            case ">":
                return b.greaterThan(idx, v);
            case ">=":
                return b.greaterOrEqual(idx, v);
            default:
                throw new IllegalArgumentException("unknown predicate op '" + op + "'");
        }
    }
}
