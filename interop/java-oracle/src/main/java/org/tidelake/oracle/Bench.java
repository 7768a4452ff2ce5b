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
import org.apache.paimon.table.sink.CommitMessage;
import org.apache.paimon.table.sink.CommitMessageImpl;
import org.apache.paimon.table.sink.StreamTableCommit;
import org.apache.paimon.table.sink.StreamTableWrite;
import org.apache.paimon.table.sink.StreamWriteBuilder;
import org.apache.paimon.io.DataFileMeta;
import org.apache.paimon.table.source.ReadBuilder;
import org.apache.paimon.types.DataTypes;

import java.io.IOException;
import java.io.PrintStream;
import java.lang.management.ManagementFactory;
import java.lang.management.ThreadMXBean;
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
 *
 * <p>Step {@code sustained} (benches/sustained_ingestion.py {@code --peer java}) is not repeated:
 * see {@link #sustained}.
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
        if (step.equals("plan")) {
            return plan(Paths.get(opt.get("table")), opt.get("kind"), Long.parseLong(opt.getOrDefault("arg", "0")));
        }
        java.nio.file.Path data = Paths.get(opt.get("data"));
        java.nio.file.Path dir = Paths.get(opt.get("dir"));
        if (step.equals("sustained")) {
            java.nio.file.Path table = opt.containsKey("table") ? Paths.get(opt.get("table")) : null;
            return sustained(data, dir, Integer.parseInt(opt.get("buckets")), table);
        }
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

    // ---- planning at scale (issue #35) ---------------------------------------------------------

    /**
     * Step {@code plan} (benches/planning_scale.py {@code --java}): one cold plan of the table at
     * {@code table} (benches/planning_scale.py's layout: {@code id BIGINT}, {@code p INT}, ...)
     * in this fresh JVM, {@code table.newReadBuilder().newScan().plan()} with no filter
     * ({@code kind=full}), {@code p = arg} ({@code partition}) or {@code id = arg} ({@code key});
     * wall and process CPU seconds from opening the table to the plan, the process's peak RSS
     * (JVM start included) and the splits, files and rows planned.
     */
    private static ObjectNode plan(java.nio.file.Path path, String kind, long arg) throws Exception {
        long cpu0 = cpuNanos();
        long t0 = System.nanoTime();
        FileStoreTable table = open(path);
        ReadBuilder rb = table.newReadBuilder();
        PredicateBuilder pb = new PredicateBuilder(table.rowType());
        switch (kind) {
            case "full":
                break;
            case "partition":
                rb = rb.withFilter(pb.equal(table.rowType().getFieldIndex("p"), (int) arg));
                break;
            case "key":
                rb = rb.withFilter(pb.equal(table.rowType().getFieldIndex("id"), arg));
                break;
            default:
                throw new IllegalArgumentException("unknown plan kind '" + kind + "'");
        }
        List<org.apache.paimon.table.source.Split> splits = rb.newScan().plan().splits();
        double wall = (System.nanoTime() - t0) / 1e9;
        double cpu = (cpuNanos() - cpu0) / 1e9;
        long files = 0;
        long rows = 0;
        for (org.apache.paimon.table.source.Split split : splits) {
            rows += split.rowCount();
            if (split instanceof org.apache.paimon.table.source.DataSplit) {
                files += ((org.apache.paimon.table.source.DataSplit) split).dataFiles().size();
            }
        }
        ObjectNode result = Main.JSON.createObjectNode();
        result.put("seconds", wall);
        result.put("cpu", cpu);
        result.put("rss_mb", statusKb("VmHWM") / 1024.0);
        result.put("splits", splits.size());
        result.put("files", files);
        result.put("rows", rows);
        result.put("heap_max_mb", Runtime.getRuntime().maxMemory() / 1048576.0);
        return result;
    }

    // ---- sustained ingestion (issue #35) ------------------------------------------------------

    /**
     * The upsert stream of benches/sustained_ingestion.py (file {@code data}: see its {@code
     * save_stream}) through one long-lived {@link StreamTableWrite} and {@link StreamTableCommit}
     * into a fresh table ({@code id} primary key, {@code ver}, {@code qty}, {@code price},
     * {@code buckets} buckets, default options), as a Flink sink runs it: per batch, write its
     * rows, {@code prepareCommit(false, i)} (background compaction is not waited for) and
     * {@code commit(i, ...)}. Per commit one record with the fields sustained_ingestion.py's
     * {@code windows} reads: the timed phases' wall seconds, process CPU over them and this
     * thread's CPU over them; the cycle's wall and process CPU since the previous commit's
     * bookkeeping, minus this thread's decoding of the batch and listing of the files; bytes of
     * the flushed files ({@code newFiles}) and of the files compaction wrote ({@code
     * compactAfter}); sorted runs per bucket (level-0 files + non-empty levels above 0) from the
     * live files; the JVM's VmHWM and the load average (also on stderr, one {@code COMMIT i
     * {json}} line per commit, as progress). The batch is decoded into rows before its timer. Then the table is read back (rows, sum of {@code ver}).
     * The table is created at option {@code table} and left there when given (its snapshots' deltas are
     * the compaction picks sustained_ingestion.py reports), else in {@code dir}, deleted after.
     */
    private static ObjectNode sustained(java.nio.file.Path data, java.nio.file.Path dir, int buckets,
            java.nio.file.Path keep) throws Exception {
        ByteBuffer b;
        try (FileChannel ch = FileChannel.open(data, StandardOpenOption.READ)) {
            b = ch.map(FileChannel.MapMode.READ_ONLY, 0, ch.size()).order(ByteOrder.LITTLE_ENDIAN);
        }
        int commits = Math.toIntExact(b.getLong());
        int size = Math.toIntExact(b.getLong());
        Files.createDirectories(dir);
        java.nio.file.Path path = keep != null ? keep : dir.resolve("table");
        Schema schema =
                Schema.newBuilder()
                        .column("id", DataTypes.BIGINT().notNull())
                        .column("ver", DataTypes.BIGINT())
                        .column("qty", DataTypes.BIGINT())
                        .column("price", DataTypes.DOUBLE())
                        .primaryKey("id")
                        .option("bucket", Integer.toString(buckets))
                        .build();
        new SchemaManager(LocalFileIO.create(), new Path(path.toString())).createTable(schema);
        FileStoreTable table = open(path);
        ThreadMXBean threads = ManagementFactory.getThreadMXBean();
        ObjectNode result = Main.JSON.createObjectNode();
        ArrayNode records = result.putArray("per_commit");
        StreamWriteBuilder builder = table.newStreamWriteBuilder();
        try (StreamTableWrite write = builder.newWrite(); StreamTableCommit commit = builder.newCommit()) {
            write.withIOManager(IOManager.create(dir.toString()));
            long mark = System.nanoTime();
            long markCpu = cpuNanos();
            for (int i = 0; i < commits; i++) {
                long x0 = System.nanoTime();
                long xc0 = threads.getCurrentThreadCpuTime();
                List<GenericRow> rows = new ArrayList<>(size);
                long base = 16L + (long) i * size * 32;
                for (int r = 0; r < size; r++) {
                    rows.add(GenericRow.of(b.getLong((int) (base + 8L * r)), b.getLong((int) (base + 8L * (size + r))),
                            b.getLong((int) (base + 8L * (2L * size + r))),
                            b.getDouble((int) (base + 8L * (3L * size + r)))));
                }
                long excluded = System.nanoTime() - x0;
                long excludedCpu = threads.getCurrentThreadCpuTime() - xc0;
                long c0 = cpuNanos();
                long m0 = threads.getCurrentThreadCpuTime();
                long t0 = System.nanoTime();
                for (GenericRow row : rows) {
                    write.write(row);
                }
                long t1 = System.nanoTime();
                List<CommitMessage> messages = write.prepareCommit(false, i);
                long t2 = System.nanoTime();
                commit.commit(i, messages);
                long t3 = System.nanoTime();
                ObjectNode rec = records.addObject();
                rec.put("write_s", (t1 - t0) / 1e9);
                rec.put("prepare_s", (t2 - t1) / 1e9);
                rec.put("commit_s", (t3 - t2) / 1e9);
                rec.put("timed_cpu_s", (cpuNanos() - c0) / 1e9);
                rec.put("main_cpu_s", (threads.getCurrentThreadCpuTime() - m0) / 1e9);
                x0 = System.nanoTime();
                xc0 = threads.getCurrentThreadCpuTime();
                long ingested = 0;
                long compaction = 0;
                for (CommitMessage m : messages) {
                    CommitMessageImpl msg = (CommitMessageImpl) m;
                    for (DataFileMeta f : msg.newFilesIncrement().newFiles()) {
                        ingested += f.fileSize();
                    }
                    for (DataFileMeta f : msg.compactIncrement().compactAfter()) {
                        compaction += f.fileSize();
                    }
                }
                boolean compacted = messages.stream()
                        .anyMatch(m -> !((CommitMessageImpl) m).compactIncrement().isEmpty());
                int[] level0 = new int[buckets];
                List<Set<Integer>> levels = new ArrayList<>();
                for (int k = 0; k < buckets; k++) {
                    levels.add(new HashSet<>());
                }
                for (ManifestEntry e : table.store().newScan().plan().files()) {
                    if (e.file().level() == 0) {
                        level0[e.bucket()]++;
                    } else {
                        levels.get(e.bucket()).add(e.file().level());
                    }
                }
                ArrayNode runs = rec.putArray("runs");
                for (int k = 0; k < buckets; k++) {
                    runs.add(level0[k] + levels.get(k).size());
                }
                rec.put("ingested", ingested);
                rec.put("compaction", compaction);
                rec.put("snapshots", compacted ? 2 : 1);
                rec.put("peak_rss_mb", statusKb("VmHWM") / 1024.0);
                rec.put("load_1m", Double.parseDouble(Files.readString(Paths.get("/proc/loadavg")).split(" ")[0]));
                excluded += System.nanoTime() - x0;
                excludedCpu += threads.getCurrentThreadCpuTime() - xc0;
                long now = System.nanoTime();
                long nowCpu = cpuNanos();
                rec.put("cycle_s", (now - mark - excluded) / 1e9);
                rec.put("cycle_cpu_s", (nowCpu - markCpu - excludedCpu) / 1e9);
                mark = now;
                markCpu = nowCpu;
                System.err.println("COMMIT " + i + " " + Main.JSON.writeValueAsString(rec));
            }
        }
        long rows = 0;
        long sumVer = 0;
        ReadBuilder rb = open(path).newReadBuilder();
        try (RecordReader<InternalRow> reader = rb.newRead().createReader(rb.newScan().plan())) {
            var it = reader.toCloseableIterator();
            while (it.hasNext()) {
                InternalRow row = it.next();
                rows++;
                sumVer += row.getLong(1);
            }
            it.close();
        }
        result.put("rows", rows);
        result.put("sum_ver", sumVer);
        result.put("jvm_heap_max_mb", Runtime.getRuntime().maxMemory() / 1048576.0);
        deleteTree(dir);
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
