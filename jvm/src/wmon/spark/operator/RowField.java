package wmon.spark.operator;

import java.io.Serializable;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.UnsafeRow;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * One argument of {@link FiguresAggregate}, read from a row: straight from the row's memory when
 * the argument is one of the row's columns (nothing evaluated, nothing made), null without a
 * look when it is a constant null (a column the rows do not have), otherwise by evaluating its
 * expression.
 */
final class RowField implements Serializable {
    private static final long serialVersionUID = 1L;
    /** What {@link #getLong} answers for a null. */
    static final long NULL = Long.MIN_VALUE;

    /**
     * How the row holds the argument; NONE: a constant null; OTHER: not a column of the row, or
     * not read directly.
     */
    private enum Width { LONG, INT, SHORT, BYTE, TEXT, NONE, OTHER }

    private final Expression expression;
    private final int ordinal;
    private final Width width;

    RowField(Expression expression) {
        this.expression = expression;
        if (expression instanceof BoundReference column) {
            this.ordinal = column.ordinal();
            this.width = widthOf(column.dataType());
        } else if (expression.foldable() && expression.eval(null) == null) {
            this.ordinal = -1;
            this.width = Width.NONE;
        } else {
            this.ordinal = -1;
            this.width = Width.OTHER;
        }
    }

    /** The value as a long (a timestamp's µs), or {@link #NULL}. */
    long getLong(InternalRow row) {
        if (width == Width.NONE) {
            return NULL;
        }
        if (width != Width.OTHER && width != Width.TEXT) {
            if (row.isNullAt(ordinal)) {
                return NULL;
            }
            return switch (width) {
                case INT -> row.getInt(ordinal);
                case SHORT -> row.getShort(ordinal);
                case BYTE -> row.getByte(ordinal);
                default -> row.getLong(ordinal);
            };
        }
        Object value = expression.eval(row);
        return value == null ? NULL : ((Number) value).longValue();
    }

    /** The value as text, or null. */
    UTF8String getText(InternalRow row) {
        if (width == Width.NONE) {
            return null;
        }
        if (width == Width.TEXT) {
            return row.isNullAt(ordinal) ? null : row.getUTF8String(ordinal);
        }
        Object value = expression.eval(row);
        if (value == null || value instanceof UTF8String) {
            return (UTF8String) value;
        }
        return UTF8String.fromString(value.toString());
    }

    /** The value as a String, or null. */
    String getString(InternalRow row) {
        UTF8String text = getText(row);
        return text == null ? null : text.toString();
    }

    /**
     * The length of the value's text in UTF-8 bytes, -1 for null; the bytes are copied to the
     * start of {@code into} when they fit. A text column of an {@link UnsafeRow} is copied
     * straight from the row's memory, with no object made.
     */
    int copyText(InternalRow row, byte[] into) {
        if (width == Width.TEXT && row instanceof UnsafeRow unsafe) {
            if (unsafe.isNullAt(ordinal)) {
                return -1;
            }
            // A variable-length column: its offset in the row's memory, then its size.
            long offsetAndSize = unsafe.getLong(ordinal);
            int length = (int) offsetAndSize;
            copy(unsafe.getBaseObject(), unsafe.getBaseOffset() + (offsetAndSize >>> 32), length,
                    into);
            return length;
        }
        UTF8String text = getText(row);
        if (text == null) {
            return -1;
        }
        copy(text.getBaseObject(), text.getBaseOffset(), text.numBytes(), into);
        return text.numBytes();
    }

    /**
     * The {@code length} bytes at {@code base} + {@code from} to {@code into}, if they fit. Byte
     * by byte: for a key's few bytes, Unsafe.copyMemory measured slower than all the rest of a
     * row's figures together.
     */
    private static void copy(Object base, long from, int length, byte[] into) {
        if (length > into.length) {
            return;
        }
        for (int i = 0; i < length; i++) {
            into[i] = Platform.getByte(base, from + i);
        }
    }

    private static Width widthOf(DataType type) {
        if (type instanceof IntegerType) {
            return Width.INT;
        }
        if (type instanceof ShortType) {
            return Width.SHORT;
        }
        if (type instanceof ByteType) {
            return Width.BYTE;
        }
        if (type instanceof StringType) {
            return Width.TEXT;
        }
        // A timestamp is its µs since the epoch, a long in the row.
        return type instanceof LongType || type instanceof TimestampType ? Width.LONG : Width.OTHER;
    }
}
