package org.tidelake.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import com.fasterxml.jackson.databind.node.ObjectNode;
import org.apache.paimon.shade.org.apache.datasketches.hll.HllSketch;
import org.apache.paimon.shade.org.apache.datasketches.memory.Memory;
import org.apache.paimon.shade.org.apache.datasketches.theta.Sketch;
import org.apache.paimon.utils.HllSketchUtil;
import org.apache.paimon.utils.RoaringBitmap32;
import org.apache.paimon.utils.RoaringBitmap64;
import org.apache.paimon.utils.ThetaSketch;

import java.io.IOException;
import java.io.UncheckedIOException;
import java.nio.ByteBuffer;
import java.util.HexFormat;
import java.util.stream.StreamSupport;

/**
 * Serialized sketches and bitmaps of the aggregate functions hll_sketch, theta_sketch, rbm32 and
 * rbm64, built and decoded by the classes Paimon itself uses.
 *
 * <p>In a write job a VARBINARY value may be {@code {"hll": [ints]}}, {@code {"theta": [ints]}},
 * {@code {"rbm32": [ints]}} or {@code {"rbm64": [longs]}}: the bytes of that sketch / bitmap of
 * the values (Paimon's {@code sketchOf} / {@code bitmapOf}). The job {@code {"op": "sketch",
 * "kind": ..., "hex": ...}} decodes bytes: {@code estimate} (HLL, Theta) or {@code values}
 * (bitmaps, ascending); {@code {"op": "sketch", "build": spec}} answers the {@code hex} of a
 * spec.
 */
final class Sketches {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;

    private Sketches() {}

    static byte[] build(JsonNode spec) {
        String kind = spec.fieldNames().next();
        JsonNode values = spec.get(kind);
        switch (kind) {
            case "hll":
                return HllSketchUtil.sketchOf(ints(values));
            case "theta":
                return ThetaSketch.sketchOf(ints(values));
            case "rbm32":
                return RoaringBitmap32.bitmapOf(ints(values)).serialize();
            case "rbm64":
                long[] longs =
                        StreamSupport.stream(values.spliterator(), false)
                                .mapToLong(JsonNode::asLong)
                                .toArray();
                try {
                    return RoaringBitmap64.bitmapOf(longs).serialize();
                } catch (IOException e) {
                    throw new UncheckedIOException(e);
                }
            default:
                throw new IllegalArgumentException("unknown sketch kind '" + kind + "'");
        }
    }

    static ObjectNode decode(JsonNode job) throws Exception {
        ObjectNode answer = NODES.objectNode();
        if (job.has("build")) {
            return answer.put("hex", HexFormat.of().formatHex(build(job.get("build"))));
        }
        byte[] bytes = HexFormat.of().parseHex(job.path("hex").asText());
        switch (job.path("kind").asText()) {
            case "hll":
                answer.put("estimate", HllSketch.heapify(bytes).getEstimate());
                break;
            case "theta":
                answer.put("estimate", Sketch.wrap(Memory.wrap(bytes)).getEstimate());
                break;
            case "rbm32":
                RoaringBitmap32 bitmap = new RoaringBitmap32();
                bitmap.deserialize(ByteBuffer.wrap(bytes));
                ArrayNode out = answer.putArray("values");
                bitmap.iterator().forEachRemaining(out::add);
                break;
            default:
                throw new IllegalArgumentException("cannot decode " + job.path("kind"));
        }
        return answer;
    }

    private static int[] ints(JsonNode values) {
        return StreamSupport.stream(values.spliterator(), false).mapToInt(JsonNode::asInt).toArray();
    }
}
