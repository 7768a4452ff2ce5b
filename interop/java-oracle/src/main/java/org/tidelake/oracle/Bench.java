package org.tidelake.oracle;

import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.disk.IOManager;
import org.apache.paimon.fs.Path;
import org.apache.paimon.fs.local.LocalFileIO;
import org.apache.paimon.manifest.ManifestEntry;
import org.apache.paimon.predicate.Predicate;
import org.apache.paimon.predicate.PredicateBuilder;
import org.apache.paimon.reader.RecordReader;
import org.apache.paimon.schema.Schema;
import org.apache.paimon.schema.SchemaManager;
import org.apache.paimon.table.FileStoreTable;
import org.apache.paimon.table.FileStoreTableFactory;
import org.apache.paimon.table.sink.BatchTableCommit;
import org.apache.paimon.table.sink.BatchTableWrite;
import org.apache.paimon.table.sink.BatchWriteBuilder;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.types.DataTypes;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.nio.ByteBuffer;
import java.nio.ByteOrder;
import java.nio.channels.FileChannel;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Paths;
import java.nio.file.StandardCopyOption;
import java.nio.file.StandardOpenOption;
import java.util.ArrayList;
import java.util.Arrays;
import java.util.HashMap;
import java.util.HashSet;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.stream.Stream;

/**
 * {@code Main bench STEP[,STEP...] key=value...}: steps of the benchmark workload
 * (benches/workload.py, driven by benches/java_peer.py) through Paimon's own Java API, each
 * repeated {@code reps} times in this JVM; prints one line {@code RESULT {json}} on stdout, per
 * step: per repetition its wall time,
 * the process CPU time (all threads: GC and JIT included) and the peak RSS of the repetition
 * (the kernel's high-water mark, reset before it through /proc/self/clear_refs).
 *
 * <p>The input rows are decoded before any timer from the workload's raw column files ({@code
 * <name>.cols}, see workload.py {@code save_columns}). Steps: {@code bulk} (one commit into a
 * fresh 4-bucket table), {@code upsert} (the upsert commits, each a {@link BatchTableWrite} with
 * the writer's default compaction, on a copy of a bulk-loaded table made before the timer),
 * {@code read} (merged read of {@code table}), {@code point} / {@code range} ({@code id = point} /
 * {@code lo <= id <= hi} pushed down with {@link ReadBuilder#withFilter}, then applied to the
 * rows, since a pushed filter only prunes), {@code compact} (a full compaction of every bucket
 * through {@link BatchTableWrite#compact} on a copy of {@code table}), {@code commits} ({@code n}
 * one-row upsert commits into a fresh table). Write steps read their table back after the last
 * repetition (untimed) so the caller can compare row counts and checksums across systems.
 */
final class Bench {
    private Bench() {}

    static void run(String[] args, PrintStream out) throws Exception {
        Map<String, String> opt = new HashMap<>();
        for (int i = 1; i < args.length; i++) {
            String[] kv = args[i].split("=", 2);
            opt.put(kv[0], kv[1]);
        }
        ObjectNode result = Main.JSON.createObjectNode();
        for (String step : args[0].split(",")) {
            result.set(step, step(step, opt));
        }
        out.println("RESULT " + Main.JSON.writeValueAsString(result));
    }

    private static ObjectNode step(String step, Map<String, String> opt) throws Exception {
        java.nio.file.Path data = Paths.get(opt.get("data"));
        java.nio.file.Path dir = Paths.get(opt.get("dir"));
        int reps = Integer.parseInt(opt.getOrDefault("reps", "1"));
        int buckets = Integer.parseInt(opt.getOrDefault("buckets", "4"));
        Files.createDirectories(dir);
        IOManager io = IOManager.create(dir.toString());

        List<GenericRow> bulk = null;
        List<List<GenericRow>> upserts = new ArrayList<>();
        if (step.equals("bulk") || step.equals("upsert") || step.equals("commits")) {
            bulk = decode(data.resolve("bulk.cols"));
        }
        if (step.equals("upsert")) {
            int commits = Integer.parseInt(opt.get("commits"));
            for (int c = 0; c < commits; c++) {
                upserts.add(decode(data.resolve(String.format("upsert-%02d.cols", c))));
            }
        }
        java.nio.file.Path base = dir.resolve("base");
        if (step.equals("upsert")) {
            writeCommit(create(base, buckets), bulk, io);
        }

        ObjectNode result = Main.JSON.createObjectNode();
        ArrayNode runs = result.putArray("runs");
        java.nio.file.Path last = null;
        for (int r = 0; r < reps; r++) {
            java.nio.file.Path target = dir.resolve(step + "-" + r);
            FileStoreTable table = null;
            switch (step) {
                case "bulk":
                case "commits":
                    table = create(target, buckets);
                    break;
                case "upsert":
                    copy(base, target);
                    table = open(target);
                    break;
                case "compact":
                    copy(Paths.get(opt.get("table")), target);
                    // the read table is written write-only; the compaction job's writer compacts
                    table = open(target).copy(Map.of("write-only", "false"));
                    break;
                default:
                    table = open(Paths.get(opt.get("table")));
                    target = null;
            }
            System.gc();
            ObjectNode run = runs.addObject();
            resetHighWaterMark();
            long cpu0 = cpuNanos();
            long t0 = System.nanoTime();
            switch (step) {
                case "bulk":
                    writeCommit(table, bulk, io);
                    break;
                case "upsert":
                    for (List<GenericRow> up : upserts) {
                        writeCommit(table, up, io);
                    }
                    break;
                case "read":
                    checksum(table, null, run);
                    break;
                case "point":
                    checksum(table, new long[] {Long.parseLong(opt.get("point")), Long.parseLong(opt.get("point"))}, run);
                    break;
                case "range":
                    checksum(table, new long[] {Long.parseLong(opt.get("lo")), Long.parseLong(opt.get("hi"))}, run);
                    break;
                case "compact":
                    compactFull(table, io);
                    break;
                case "commits":
                    run.set("commit_ms", smallCommits(table, bulk, Integer.parseInt(opt.get("n")), io));
                    break;
                default:
                    throw new IllegalArgumentException("unknown bench step '" + step + "'");
            }
            run.put("wall_s", (System.nanoTime() - t0) / 1e9);
            run.put("cpu_s", (cpuNanos() - cpu0) / 1e9);
            run.put("peak_rss_mb", statusKb("VmHWM") / 1024.0);
            if (last != null) {
                deleteTree(last);
            }
            last = target;
        }
        if (last != null) {
            checksum(open(last), null, result);
            deleteTree(last);
        }
        result.put("heap_max_mb", Runtime.getRuntime().maxMemory() / 1048576.0);
        result.put("gc", ManagementFactory.getGarbageCollectorMXBeans().get(0).getName());
        return result;
    }

    // ---- the workload's rows ------------------------------------------------------------------

    /**
     * One raw column file: int64 n, then id int64[n], qty int32[n], price float64[n], cat and
     * note as int32 offsets[n + 1] + int64 byte length + UTF-8 bytes, ver int64[n]; little-endian.
     */
    static List<GenericRow> decode(java.nio.file.Path file) throws IOException {
        ByteBuffer b;
        try (FileChannel ch = FileChannel.open(file, StandardOpenOption.READ)) {
            b = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size()).order(ByteOrder.LITTLE_ENDIAN);
        }
        int n = Math.toIntExact(b.getLong());
        long[] id = new long[n];
        b.asLongBuffer().get(id);
        b.position(b.position() + 8 * n);
        int[] qty = new int[n];
        b.asIntBuffer().get(qty);
        b.position(b.position() + 4 * n);
        double[] price = new double[n];
        b.asDoubleBuffer().get(price);
        b.position(b.position() + 8 * n);
        BinaryString[] cat = strings(b, n);
        BinaryString[] note = strings(b, n);
        long[] ver = new long[n];
        b.asLongBuffer().get(ver);
        List<GenericRow> rows = new ArrayList<>(n);
        for (int i = 0; i < n; i++) {
            rows.add(GenericRow.of(id[i], qty[i], price[i], cat[i], note[i], ver[i]));
        }
        return rows;
    }

    private static BinaryString[] strings(ByteBuffer b, int n) {
        int[] offsets = new int[n + 1];
        b.asIntBuffer().get(offsets);
        b.position(b.position() + 4 * (n + 1));
        int len = Math.toIntExact(b.getLong());
        byte[] bytes = new byte[len];
        b.get(bytes);
        BinaryString[] out = new BinaryString[n];
        for (int i = 0; i < n; i++) {
            out[i] = BinaryString.fromBytes(Arrays.copyOfRange(bytes, offsets[i], offsets[i + 1]));
        }
        return out;
    }

    // ---- Paimon -------------------------------------------------------------------------------

    /** A new table like tidelake's benchmark table: PK {@code id}, {@code buckets} buckets. */
    private static FileStoreTable create(java.nio.file.Path path, int buckets) throws Exception {
        Schema schema =
                Schema.newBuilder()
                        .column("id", DataTypes.BIGINT().notNull())
                        .column("qty", DataTypes.INT())
                        .column("price", DataTypes.DOUBLE())
                        .column("cat", DataTypes.STRING())
                        .column("note", DataTypes.STRING())
                        .column("ver", DataTypes.BIGINT())
                        .primaryKey("id")
                        .option("bucket", Integer.toString(buckets))
                        .build();
        new SchemaManager(LocalFileIO.create(), new Path(path.toString())).createTable(schema);
        return open(path);
    }

    private static FileStoreTable open(java.nio.file.Path path) {
        return FileStoreTableFactory.create(LocalFileIO.create(), new Path(path.toString()));
    }

    /** One batch commit of {@code rows} (the writer compacts as its defaults say). */
    private static void writeCommit(FileStoreTable table, List<GenericRow> rows, IOManager io)
            throws Exception {
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        try (BatchTableWrite write = builder.newWrite(); BatchTableCommit commit = builder.newCommit()) {
            write.withIOManager(io);
            for (GenericRow row : rows) {
                write.write(row);
            }
            commit.commit(write.prepareCommit());
        }
    }

    /** {@code n} commits of one row each (keys cycle over 1000); their latencies in ms. */
    private static ArrayNode smallCommits(FileStoreTable table, List<GenericRow> rows, int n, IOManager io)
            throws Exception {
        ArrayNode ms = Main.JSON.createArrayNode();
        for (int i = 0; i < n; i++) {
            long t0 = System.nanoTime();
            writeCommit(table, List.of(rows.get(i % Math.min(1000, rows.size()))), io);
            ms.add((System.nanoTime() - t0) / 1e6);
        }
        return ms;
    }

    /** A full compaction of every bucket holding files, in one commit. */
    private static void compactFull(FileStoreTable table, IOManager io) throws Exception {
        BatchWriteBuilder builder = table.newBatchWriteBuilder();
        try (BatchTableWrite write = builder.newWrite(); BatchTableCommit commit = builder.newCommit()) {
            write.withIOManager(io);
            Set<List<Object>> seen = new HashSet<>();
            for (ManifestEntry e : table.store().newScan().plan().files()) {
                if (seen.add(List.of(e.partition(), e.bucket()))) {
                    write.compact(e.partition(), e.bucket(), true);
                }
            }
            commit.commit(write.prepareCommit());
        }
    }

    /**
     * The merged rows of {@code table} (those with {@code lo <= id <= hi} when {@code bounds} is
     * given): their count, sum of {@code ver} and of {@code qty} into {@code out}.
     */
    private static void checksum(FileStoreTable table, long[] bounds, ObjectNode out) throws Exception {
        ReadBuilder rb = table.newReadBuilder();
        if (bounds != null) {
            PredicateBuilder pb = new PredicateBuilder(table.rowType());
            Predicate p =
                    bounds[0] == bounds[1]
                            ? pb.equal(0, bounds[0])
                            : PredicateBuilder.and(pb.greaterOrEqual(0, bounds[0]), pb.lessOrEqual(0, bounds[1]));
            rb = rb.withFilter(p);
        }
        long rows = 0;
        long sumVer = 0;
        long sumQty = 0;
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(rb.newScan().plan())) {
            var it = reader.toCloseableIterator();
            while (it.hasNext()) {
                InternalRow row = it.next();
                long id = row.getLong(0);
                if (bounds != null && (id < bounds[0] || id > bounds[1])) {
                    continue;
                }
                rows++;
                sumQty += row.isNullAt(1) ? 0 : row.getInt(1);
                sumVer += row.isNullAt(5) ? 0 : row.getLong(5);
            }
            it.close();
        }
        out.put("rows", rows);
        out.put("sum_ver", sumVer);
        out.put("sum_qty", sumQty);
    }

    // ---- process measurements -----------------------------------------------------------------

    private static long cpuNanos() {
        return ((com.sun.management.OperatingSystemMXBean) ManagementFactory.getOperatingSystemMXBean())
                .getProcessCpuTime();
    }

    private static void resetHighWaterMark() {
        try {
            Files.writeString(Paths.get("/proc/self/clear_refs"), "5");
        } catch (IOException e) {
            // not Linux (or not permitted): the high-water mark is then the JVM's lifetime peak
        }
    }

    private static long statusKb(String field) throws IOException {
        for (String line : Files.readAllLines(Paths.get("/proc/self/status"), StandardCharsets.UTF_8)) {
            if (line.startsWith(field + ":")) {
                return Long.parseLong(line.split("\\s+")[1]);
            }
        }
        return 0;
    }

    private static void copy(java.nio.file.Path from, java.nio.file.Path to) throws IOException {
        try (Stream<java.nio.file.Path> all = Files.walk(from)) {
            for (java.nio.file.Path p : (Iterable<java.nio.file.Path>) all::iterator) {
                java.nio.file.Path dest = to.resolve(from.relativize(p).toString());
                if (Files.isDirectory(p)) {
                    Files.createDirectories(dest);
                } else {
                    Files.copy(p, dest, StandardCopyOption.REPLACE_EXISTING);
                }
            }
        }
    }

    private static void deleteTree(java.nio.file.Path root) throws IOException {
        try (Stream<java.nio.file.Path> all = Files.walk(root)) {
            for (java.nio.file.Path p : (Iterable<java.nio.file.Path>) all.sorted((a, b) -> b.compareTo(a))::iterator) {
                Files.delete(p);
            }
        }
    }
}
