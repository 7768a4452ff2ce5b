package org.tidelake.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.catalog.Catalog;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.table.Table;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;

import java.io.FileWriter;
import java.io.PrintWriter;
import java.util.Collections;

/**
 * A Java writer racing others on one table: one batch commit per write, each inserting the rows
 * {@code (k, writer, n)} for its own keys, until {@code "writes"} commits were tried or {@code
 * "seconds"} passed. Each acknowledged write (its commit returned) is appended to {@code "acks"}
 * as one line {@code writer n k1,k2,...} and flushed before the next begins; a failed commit is
 * counted and logged to {@code "acks" + ".failed"} as {@code writer n keys unknown} (it may or may
 * not have landed), never as acknowledged. The writer is {@code write-only} (compaction is left
 * to a dedicated compactor, as Paimon's documentation asks of several writers).
 *
 * <p>Job: the catalog ({@link Tables}), {@code "table"}, {@code "writer"} (a name), {@code
 * "first_key"} (keys {@code first_key + n * keys_per_write + i}), {@code "keys_per_write"}.
 * Answer: {@code "acked"}, {@code "failed"} and {@code "errors"} (the first few messages).
 */
final class Race {
    private Race() {}

    static ObjectNode run(JsonNode job) throws Exception {
        String writer = job.get("writer").asText();
        long firstKey = job.get("first_key").asLong();
        int perWrite = job.path("keys_per_write").asInt(1);
        int writes = job.path("writes").asInt(Integer.MAX_VALUE);
        long deadline = System.nanoTime() + (long) (job.path("seconds").asDouble(60) * 1e9);
        int acked = 0;
        int failed = 0;
        ObjectNode answer = Main.JSON.createObjectNode();
        var errors = answer.putArray("errors");
        try (Catalog catalog = Tables.catalog(job);
                PrintWriter acks = new PrintWriter(new FileWriter(job.get("acks").asText(), true))) {
            for (int n = 0; n < writes && System.nanoTime() < deadline; n++) {
                StringBuilder keys = new StringBuilder();
                try {
                    // write-only, as Paimon's docs ask of writers next to a dedicated compactor:
                    // a writer's own compaction would conflict with the compactor's
                    Table table =
                            catalog.getTable(Tables.identifier(job))
                                    .copy(Collections.singletonMap("write-only", "true"));
                    BatchWriteBuilder builder = table.newBatchWriteBuilder();
                    try (BatchTableWrite write = builder.newWrite();
                            BatchTableCommit commit = builder.newCommit()) {
                        for (int i = 0; i < perWrite; i++) {
                            long k = firstKey + (long) n * perWrite + i;
                            write.write(GenericRow.of(k, BinaryString.fromString(writer), n));
                            keys.append(i == 0 ? "" : ",").append(k);
                        }
                        commit.commit(write.prepareCommit());
                    }
                } catch (Exception e) {
                    failed++;
                    if (errors.size() < 5) {
                        errors.add(e.toString());
                    }
                    // whether it landed is not known here
                    try (PrintWriter unknown =
                            new PrintWriter(new FileWriter(job.get("acks").asText() + ".failed", true))) {
                        unknown.println(writer + " " + n + " " + keys + " unknown");
                    }
                    continue;
                }
                acks.println(writer + " " + n + " " + keys);
                acks.flush();
                acked++;
            }
        }
        answer.put("acked", acked);
        answer.put("failed", failed);
        return answer;
    }
}
