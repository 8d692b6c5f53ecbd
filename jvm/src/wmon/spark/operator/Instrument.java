package wmon.spark.operator;

import static org.apache.spark.sql.functions.array;
import static org.apache.spark.sql.functions.call_function;
import static org.apache.spark.sql.functions.coalesce;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.concat;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.not;
import static org.apache.spark.sql.functions.shiftleft;
import static org.apache.spark.sql.functions.struct;
import static org.apache.spark.sql.functions.to_json;
import static org.apache.spark.sql.functions.udaf;
import static org.apache.spark.sql.functions.udf;
import static org.apache.spark.sql.functions.unix_micros;
import static org.apache.spark.sql.functions.when;

import java.util.Arrays;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.sql.types.IntegralType;

/**
 * The instrumented operator in the JVM: per source partition, records, min/max event time, late
 * records and late samples, measured by aggregates inside {@code Dataset.observe}, with the same
 * figures, in the same JSON, as wmon's Python operator. From PySpark, {@code
 * monitor.instrument(df, ...)} calls {@link #observe}; a JVM job can call it directly.
 *
 * <p>Late: the time Spark compares with the watermark (the event time rounded up to the
 * millisecond, or the end of its window) is at or below the previous batch's watermark.
 */
public final class Instrument {
    private Instrument() {}

    /**
     * {@code df}, observed as {@code observation} with a column {@code tasks}: JSON figures.
     *
     * @param partition the partition column, or null for the Spark input split
     * @param topic the topic column, or null; used with an integral partition when present
     * @param key the key column kept in late samples, or null
     * @param offset the offset column kept in late samples, or null
     * @param windowMs the length of the job's event-time windows, 0 for none
     */
    public static Dataset<Row> observe(
            Dataset<Row> df, String observation, int samplesPerPartition, String checkpoint,
            String eventTime, String partition, String topic, String key, String offset,
            long delayMs, long windowMs) {
        Aggregates aggregates = new Aggregates(checkpoint, delayMs, samplesPerPartition, windowMs);
        Times times = Times.of(micros(df, eventTime), checkpoint, windowMs,
                optional(df, offset, "long").as("o"), optional(df, key, "string").as("k"));
        Column[] figures;
        if (has(df, partition) && (has(df, topic) || !integral(df, partition))) {
            Column name = has(df, topic)
                    ? concat(column(topic), lit("/"), column(partition).cast("string"))
                    : column(partition).cast("string");
            figures = aggregates.byName(times, name);
        } else {
            figures = aggregates.byNumber(times, has(df, partition)
                    ? column(partition).cast("long")
                    : udf(new InputSplit(), DataTypes.LongType).asNondeterministic().apply());
        }
        return df.observe(observation, array(figures).as("tasks"));
    }

    /**
     * A row's times: event time in µs and in ms (truncated, as the Python operator's figures
     * are), whether it is late (the compared time at or below the late watermark: for the late
     * rows' JSON; the packed aggregates decide it themselves), whether its ms fit the packed
     * long, and what a late sample keeps of it.
     */
    private record Times(Column micros, Column ms, Column late, Column fits, Column[] sample) {
        static Times of(Column micros, String checkpoint, long windowMs, Column o, Column k) {
            Column ms = div(micros, 1000);
            Column compared = windowMs > 0
                    ? div(ms, windowMs).multiply(windowMs).plus(windowMs)
                    : div(micros.plus(999), 1000);
            Column threshold = udf(new LateThreshold(checkpoint), DataTypes.LongType)
                    .asNondeterministic().apply();
            Column late = coalesce(compared.leq(threshold), lit(false));
            Column fits = micros.geq(0).and(ms.leq(PackedRows.MAX_MS));
            return new Times(micros, ms, late, fits,
                    new Column[] {micros.as("t"), late.as("l"), o, k});
        }

        /** The event ms and whether the µs go past it, as the low bits of the packed long. */
        Column packed() {
            Column partial = when(micros.mod(1000).notEqual(0), lit(1L)).otherwise(lit(0L));
            return shiftleft(ms, 1).bitwiseOR(partial);
        }

        /** The row as JSON for {@link LateRows} when it is late or did not fit, else null. */
        Column details(Column fitted, Column... where) {
            Column[] fields = Arrays.copyOf(where, where.length + sample.length + 1);
            fields[where.length] = not(fitted).as("n");
            System.arraycopy(sample, 0, fields, where.length + 1, sample.length);
            return when(micros.isNotNull().and(not(fitted).or(late)), to_json(struct(fields)));
        }
    }

    /** The aggregates of one instrumented query. */
    private record Aggregates(
            String checkpoint, long delayMs, int samplesPerPartition, long windowMs) {
        /** Partitions known by number: the packed long, and the rows that need more. */
        Column[] byNumber(Times times, Column code) {
            Column fitted = times.fits().and(code.between(0, PackedRows.MAX_CODE));
            Column packed = shiftleft(code, PackedRows.CODE_SHIFT).bitwiseOR(times.packed());
            return new Column[] {
                udaf(new PackedRows(checkpoint, delayMs, samplesPerPartition, windowMs), Encoders.LONG())
                        .apply(when(fitted, packed)),
                lateRows(times.details(fitted, when(fitted, code).as("c"),
                        when(not(fitted), code.cast("string")).as("p"))),
            };
        }

        /** Partitions known by name: the packed time with the name, and the late rows. */
        Column[] byName(Times times, Column name) {
            return new Column[] {
                udaf(new NamedRows(checkpoint, delayMs, samplesPerPartition, windowMs),
                        Encoders.tuple(Encoders.LONG(), Encoders.STRING()))
                        .apply(when(times.fits(), times.packed()), name),
                lateRows(times.details(times.fits(), name.as("p"))),
            };
        }

        private Column lateRows(Column details) {
            return udaf(new LateRows(checkpoint, delayMs, samplesPerPartition, windowMs), Encoders.STRING())
                    .apply(details);
        }
    }

    /** Event time in microseconds, Spark's precision; integral columns hold milliseconds. */
    private static Column micros(Dataset<Row> df, String eventTime) {
        if (integral(df, eventTime)) {
            return column(eventTime).cast("long").multiply(1000);
        }
        return unix_micros(column(eventTime).cast("timestamp"));
    }

    private static Column div(Column dividend, long divisor) {
        return call_function("div", dividend, lit(divisor));
    }

    private static Column optional(Dataset<Row> df, String name, String type) {
        return has(df, name) ? column(name).cast(type) : lit(null).cast(type);
    }

    private static boolean has(Dataset<Row> df, String name) {
        return name != null && Arrays.asList(df.columns()).contains(name);
    }

    private static boolean integral(Dataset<Row> df, String name) {
        DataType type = df.schema().apply(name).dataType();
        return type instanceof IntegralType;
    }

    private static Column column(String name) {
        return col("`" + name.replace("`", "``") + "`");
    }
}
