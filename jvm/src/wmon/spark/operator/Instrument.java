package wmon.spark.operator;

import static org.apache.spark.sql.functions.array;
import static org.apache.spark.sql.functions.col;
import static org.apache.spark.sql.functions.lit;
import static org.apache.spark.sql.functions.unix_micros;

import java.util.ArrayList;
import java.util.Arrays;
import java.util.List;
import org.apache.spark.sql.Column;
import org.apache.spark.sql.Dataset;
import org.apache.spark.sql.Row;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.classic.ExpressionUtils;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.IntegralType;
import org.apache.spark.sql.types.TimestampType;
import scala.jdk.javaapi.CollectionConverters;
import wmon.spark.operator.FiguresAggregate.Naming;
import wmon.spark.operator.FiguresAggregate.Settings;

/**
 * The instrumented operator in the JVM: per source partition, records, min/max event time and
 * the record at the max, late records and late samples, future-dated records with their largest
 * lead and samples, and histograms of how far late and on-time rows are from the late
 * watermark, measured by an aggregate inside {@code Dataset.observe}
 * ({@link FiguresAggregate}), with the same figures, in the same JSON, as wmon's Python
 * operator. From PySpark, {@code monitor.instrument(df, ...)} calls {@link #observe}; a JVM job
 * can call it directly.
 */
public final class Instrument {
    private Instrument() {}

    /**
     * {@code df}, observed as {@code observation} with a column {@code tasks}: JSON figures.
     *
     * @param partition the partition column, or null for the Spark input split
     * @param topic the topic column, or null; partitions are then named {@code topic/partition}
     * @param key the key column kept in samples and the max record, or null
     * @param offset the offset column kept in samples and the max record, or null
     * @param windowMs the length of the job's event-time windows, 0 for none
     * @param futureToleranceMs how far ahead of its batch's time a row may be before it is
     *     future-dated
     */
    public static Dataset<Row> observe(
            Dataset<Row> df, String observation, int samplesPerPartition, String checkpoint,
            String eventTime, String partition, String topic, String key, String offset,
            long delayMs, long windowMs, long futureToleranceMs) {
        boolean timeInMs = is(df, eventTime, IntegralType.class);
        Column time = timeInMs || is(df, eventTime, TimestampType.class)
                ? column(eventTime)
                : unix_micros(column(eventTime).cast("timestamp"));
        Naming naming = naming(df, partition, topic);
        Column partitionColumn = switch (naming) {
            case SPLIT -> lit(null).cast("long");
            case NUMBER, TOPIC_AND_NUMBER -> column(partition);
            default -> column(partition).cast("string");
        };
        List<Expression> arguments = new ArrayList<>();
        for (Column argument : new Column[] {
            time, partitionColumn, optional(df, topic, "string"), optional(df, key, "string"),
            optional(df, offset, "long"),
        }) {
            arguments.add(ExpressionUtils.expression(argument));
        }
        FiguresAggregate figures = new FiguresAggregate(
                CollectionConverters.asScala(arguments).toSeq(),
                new Settings(checkpoint, delayMs, samplesPerPartition, windowMs, futureToleranceMs,
                        timeInMs, naming));
        Column tasks = ExpressionUtils.column(figures.toAggregateExpression());
        return df.observe(observation, array(tasks).as("tasks"));
    }

    private static Naming naming(Dataset<Row> df, String partition, String topic) {
        if (!has(df, partition)) {
            return Naming.SPLIT;
        }
        boolean number = is(df, partition, IntegralType.class);
        if (has(df, topic)) {
            return number ? Naming.TOPIC_AND_NUMBER : Naming.TOPIC_AND_TEXT;
        }
        return number ? Naming.NUMBER : Naming.TEXT;
    }

    private static Column optional(Dataset<Row> df, String name, String type) {
        return has(df, name) ? column(name).cast(type) : lit(null).cast(type);
    }

    private static boolean has(Dataset<Row> df, String name) {
        return name != null && Arrays.asList(df.columns()).contains(name);
    }

    private static boolean is(Dataset<Row> df, String name, Class<? extends DataType> kind) {
        return kind.isInstance(df.schema().apply(name).dataType());
    }

    private static Column column(String name) {
        return col("`" + name.replace("`", "``") + "`");
    }
}
