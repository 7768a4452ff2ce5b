package org.tidelake.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

import java.io.BufferedReader;
import java.io.InputStreamReader;
import java.io.PrintStream;
import java.io.PrintWriter;
import java.io.StringWriter;
import java.nio.charset.StandardCharsets;

/**
 * The Java Paimon oracle: one JVM serves many jobs. Each line on stdin is a JSON job, answered
 * by one JSON line on stdout: {@code {"ok": true, ...}} or {@code {"ok": false, "error": ...}}.
 *
 * <p>Jobs ({@code "op"}): {@code read} ({@link Reads}), {@code write} ({@link Writes}), {@code
 * race} ({@link Race}: a writer racing others, logging what it acknowledged), {@code
 * partitions} ({@link Tables#partitions}: a catalog's listing), {@code hms} and {@code
 * hold_lock} ({@link Hms}: a Hive catalog's metastore and lock), {@code mark_done} and {@code
 * success_file} ({@link MarkDone}: marking partitions done, reading a {@code _SUCCESS} file),
 * {@code file_index} ({@link FileIndexes}: Java's file-index verdict on each data file), {@code
 * cluster_pick} ({@link Clusters}: what Java's incremental clustering would pick). Anything
 * Paimon or Hadoop prints goes to stderr so stdout carries answers only. {@code Main bench ...}
 * runs one benchmark step instead ({@link Bench}).
 */
public final class Main {
    static final ObjectMapper JSON = new ObjectMapper();

    public static void main(String[] args) throws Exception {
        PrintStream answers = new PrintStream(System.out, true, StandardCharsets.UTF_8);
        System.setOut(System.err);
        if (args.length > 0 && args[0].equals("bench")) {
            Bench.run(java.util.Arrays.copyOfRange(args, 1, args.length), answers);
            System.exit(0);
        }
        BufferedReader in =
                new BufferedReader(new InputStreamReader(System.in, StandardCharsets.UTF_8));
        String line;
        while ((line = in.readLine()) != null) {
            if (line.isBlank()) {
                continue;
            }
            ObjectNode answer;
            try {
                answer = run(JSON.readTree(line));
                answer.put("ok", true);
            } catch (Throwable e) {
                StringWriter trace = new StringWriter();
                e.printStackTrace(new PrintWriter(trace));
                answer = JSON.createObjectNode();
                answer.put("ok", false);
                answer.put("error", e.toString());
                answer.put("trace", trace.toString());
            }
            answers.println(JSON.writeValueAsString(answer));
        }
    }

    private static ObjectNode run(JsonNode job) throws Exception {
        String op = job.path("op").asText();
        switch (op) {
            case "read":
                return Reads.run(job);
            case "write":
                return Writes.run(job);
            case "sketch":
                return Sketches.decode(job);
            case "race":
                return Race.run(job);
            case "partitions":
                return Tables.partitions(job);
            case "hms":
                return Hms.table(job);
            case "hold_lock":
                return Hms.holdLock(job);
            case "mark_done":
                return MarkDone.procedure(job);
            case "system_table":
                return SystemTables.read(job);
            case "analyze":
                return SystemTables.analyze(job);
            case "success_file":
                return MarkDone.successFile(job);
            case "file_index":
                return FileIndexes.evaluate(job);
            case "hive_table":
                return HiveTables.create(job);
            case "migrate_table":
                return HiveTables.migrate(job);
            case "rewrite_file_index":
                return FileIndexes.rewrite(job);
            case "cluster_pick":
                return Clusters.pick(job);
            default:
                throw new IllegalArgumentException("unknown op '" + op + "'");
        }
    }
}
