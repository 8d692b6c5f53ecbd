package wmon.spark.operator;

import java.io.Serializable;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.BoundReference;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.types.ByteType;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.IntegerType;
import org.apache.spark.sql.types.LongType;
import org.apache.spark.sql.types.ShortType;
import org.apache.spark.sql.types.StringType;
import org.apache.spark.sql.types.TimestampType;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * One argument of {@link FiguresAggregate}, read from a row: straight from the row's memory when
 * the argument is one of the row's columns (nothing evaluated, nothing made), otherwise by
 * evaluating its expression.
 */
final class RowField implements Serializable {
    private static final long serialVersionUID = 1L;
    /** What {@link #getLong} answers for a null. */
    static final long NULL = Long.MIN_VALUE;

    /** How the row holds the argument; OTHER: not a column of the row, or not read directly. */
    private enum Width { LONG, INT, SHORT, BYTE, TEXT, OTHER }

    private final Expression expression;
    private final int ordinal;
    private final Width width;

    RowField(Expression expression) {
        this.expression = expression;
        if (expression instanceof BoundReference column) {
            this.ordinal = column.ordinal();
            this.width = widthOf(column.dataType());
        } else {
            this.ordinal = -1;
            this.width = Width.OTHER;
        }
    }

    /** The value as a long (a timestamp's µs), or {@link #NULL}. */
    long getLong(InternalRow row) {
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
        if (width == Width.TEXT) {
            return row.isNullAt(ordinal) ? null : row.getUTF8String(ordinal);
        }
        Object value = expression.eval(row);
        if (value == null || value instanceof UTF8String) {
            return (UTF8String) value;
        }
        return UTF8String.fromString(value.toString());
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
