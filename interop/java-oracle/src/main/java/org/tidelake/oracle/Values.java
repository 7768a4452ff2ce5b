package org.tidelake.oracle;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.node.ArrayNode;
import com.fasterxml.jackson.databind.node.JsonNodeFactory;
import org.apache.paimon.data.BinaryString;
import org.apache.paimon.data.Decimal;
import org.apache.paimon.data.GenericArray;
import org.apache.paimon.data.GenericMap;
import org.apache.paimon.data.GenericRow;
import org.apache.paimon.data.InternalArray;
import org.apache.paimon.data.InternalMap;
import org.apache.paimon.data.InternalRow;
import org.apache.paimon.data.Timestamp;
import org.apache.paimon.types.ArrayType;
import org.apache.paimon.types.DataField;
import org.apache.paimon.types.DataType;
import org.apache.paimon.types.DecimalType;
import org.apache.paimon.types.LocalZonedTimestampType;
import org.apache.paimon.types.MapType;
import org.apache.paimon.types.MultisetType;
import org.apache.paimon.types.RowType;
import org.apache.paimon.types.TimestampType;

import java.math.BigDecimal;
import java.time.LocalDate;
import java.time.LocalDateTime;
import java.time.LocalTime;
import java.time.format.DateTimeFormatter;
import java.util.HexFormat;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;

/**
 * The canonical JSON form of Paimon values, both ways (the test harness renders tidelake's Arrow
 * results the same way, tests/_peers.py {@code canonical_value}).
 *
 * <ul>
 *   <li>integers and booleans as JSON numbers / booleans; FLOAT and DOUBLE as numbers (a FLOAT
 *       widened to double), NaN and infinities as the strings "NaN", "Infinity", "-Infinity";
 *   <li>DECIMAL as a plain string with exactly {@code scale} fraction digits;
 *   <li>CHAR / VARCHAR as strings, BINARY / VARBINARY as lower-case hex (on input also a sketch
 *       or bitmap spec, {@link Sketches});
 *   <li>DATE as {@code yyyy-MM-dd}, TIME as {@code HH:mm:ss.SSSSSSSSS}, TIMESTAMP and
 *       TIMESTAMP_LTZ (its UTC wall time) as {@code yyyy-MM-ddTHH:mm:ss.SSSSSSSSS};
 *   <li>ARRAY as a list, ROW as the list of its fields, MAP / MULTISET as a list of [key, value]
 *       pairs (callers compare maps order-insensitively).
 * </ul>
 */
final class Values {
    private static final JsonNodeFactory NODES = JsonNodeFactory.instance;
    private static final DateTimeFormatter TIME = DateTimeFormatter.ofPattern("HH:mm:ss.SSSSSSSSS");
    private static final DateTimeFormatter TIMESTAMP =
            DateTimeFormatter.ofPattern("uuuu-MM-dd'T'HH:mm:ss.SSSSSSSSS");

    private Values() {}

    /** Field {@code pos} of {@code row} (of type {@code type}) in canonical JSON. */
    static JsonNode render(InternalRow row, int pos, DataType type) {
        if (row.isNullAt(pos)) {
            return NODES.nullNode();
        }
        return render(InternalRow.createFieldGetter(type, pos).getFieldOrNull(row), type);
    }

    private static JsonNode render(Object v, DataType type) {
        if (v == null) {
            return NODES.nullNode();
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return NODES.booleanNode((Boolean) v);
            case TINYINT:
            case SMALLINT:
            case INTEGER:
                return NODES.numberNode(((Number) v).intValue());
            case BIGINT:
                return NODES.numberNode((Long) v);
            case FLOAT:
                return floating(((Float) v).doubleValue());
            case DOUBLE:
                return floating((Double) v);
            case DECIMAL:
                return NODES.textNode(((Decimal) v).toBigDecimal().toPlainString());
            case CHAR:
            case VARCHAR:
                return NODES.textNode(v.toString());
            case BINARY:
            case VARBINARY:
                return NODES.textNode(HexFormat.of().formatHex((byte[]) v));
            case DATE:
                return NODES.textNode(LocalDate.ofEpochDay((Integer) v).toString());
            case TIME_WITHOUT_TIME_ZONE:
                return NODES.textNode(
                        LocalTime.ofNanoOfDay((Integer) v * 1_000_000L).format(TIME));
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return NODES.textNode(((Timestamp) v).toLocalDateTime().format(TIMESTAMP));
            case ARRAY:
                return renderArray((InternalArray) v, ((ArrayType) type).getElementType());
            case MAP:
                MapType map = (MapType) type;
                return renderMap((InternalMap) v, map.getKeyType(), map.getValueType());
            case MULTISET:
                return renderMap(
                        (InternalMap) v,
                        ((MultisetType) type).getElementType(),
                        new org.apache.paimon.types.IntType(false));
            case ROW:
                return renderRow((InternalRow) v, (RowType) type);
            default:
                throw new UnsupportedOperationException("no canonical form for " + type);
        }
    }

    /** Every field of {@code row} as a JSON list. */
    static ArrayNode renderRow(InternalRow row, RowType type) {
        ArrayNode out = NODES.arrayNode();
        List<DataField> fields = type.getFields();
        for (int i = 0; i < fields.size(); i++) {
            out.add(render(row, i, fields.get(i).type()));
        }
        return out;
    }

    private static JsonNode floating(double d) {
        if (Double.isNaN(d) || Double.isInfinite(d)) {
            return NODES.textNode(Double.toString(d));
        }
        return NODES.numberNode(d);
    }

    private static ArrayNode renderArray(InternalArray array, DataType element) {
        InternalArray.ElementGetter getter = InternalArray.createElementGetter(element);
        ArrayNode out = NODES.arrayNode();
        for (int i = 0; i < array.size(); i++) {
            out.add(render(getter.getElementOrNull(array, i), element));
        }
        return out;
    }

    private static ArrayNode renderMap(InternalMap map, DataType key, DataType value) {
        ArrayNode keys = renderArray(map.keyArray(), key);
        ArrayNode values = renderArray(map.valueArray(), value);
        ArrayNode out = NODES.arrayNode();
        for (int i = 0; i < keys.size(); i++) {
            out.add(NODES.arrayNode().add(keys.get(i)).add(values.get(i)));
        }
        return out;
    }

    /** A canonical JSON value as Paimon's internal value of {@code type} (the inverse). */
    static Object parse(JsonNode v, DataType type) {
        if (v == null || v.isNull()) {
            return null;
        }
        switch (type.getTypeRoot()) {
            case BOOLEAN:
                return v.asBoolean();
            case TINYINT:
                return (byte) v.asInt();
            case SMALLINT:
                return (short) v.asInt();
            case INTEGER:
                return v.asInt();
            case BIGINT:
                return v.asLong();
            case FLOAT:
                return (float) floatingValue(v);
            case DOUBLE:
                return floatingValue(v);
            case DECIMAL:
                DecimalType dec = (DecimalType) type;
                return Decimal.fromBigDecimal(
                        new BigDecimal(v.asText()), dec.getPrecision(), dec.getScale());
            case CHAR:
            case VARCHAR:
                return BinaryString.fromString(v.asText());
            case BINARY:
            case VARBINARY:
                return v.isObject() ? Sketches.build(v) : HexFormat.of().parseHex(v.asText());
            case DATE:
                return (int) LocalDate.parse(v.asText()).toEpochDay();
            case TIME_WITHOUT_TIME_ZONE:
                return (int) (LocalTime.parse(v.asText()).toNanoOfDay() / 1_000_000L);
            case TIMESTAMP_WITHOUT_TIME_ZONE:
            case TIMESTAMP_WITH_LOCAL_TIME_ZONE:
                return Timestamp.fromLocalDateTime(LocalDateTime.parse(v.asText()));
            case ARRAY:
                DataType element = ((ArrayType) type).getElementType();
                Object[] items = new Object[v.size()];
                for (int i = 0; i < items.length; i++) {
                    items[i] = parse(v.get(i), element);
                }
                return new GenericArray(items);
            case MAP:
                MapType map = (MapType) type;
                Map<Object, Object> entries = new LinkedHashMap<>();
                for (JsonNode pair : v) {
                    entries.put(
                            parse(pair.get(0), map.getKeyType()),
                            parse(pair.get(1), map.getValueType()));
                }
                return new GenericMap(entries);
            case ROW:
                return parseRow(v, (RowType) type);
            default:
                throw new UnsupportedOperationException("cannot parse a value of " + type);
        }
    }

    /** A JSON list as a {@link GenericRow} of {@code type}. */
    static GenericRow parseRow(JsonNode values, RowType type) {
        List<DataField> fields = type.getFields();
        if (values.size() != fields.size()) {
            throw new IllegalArgumentException(
                    "row " + values + " has " + values.size() + " values for " + fields.size()
                            + " fields");
        }
        GenericRow row = new GenericRow(fields.size());
        for (int i = 0; i < fields.size(); i++) {
            row.setField(i, parse(values.get(i), fields.get(i).type()));
        }
        return row;
    }

    private static double floatingValue(JsonNode v) {
        return v.isTextual() ? Double.parseDouble(v.asText()) : v.asDouble();
    }
}
