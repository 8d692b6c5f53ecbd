package wmon.spark.operator;

import java.io.Serializable;
import org.apache.spark.TaskContext;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.sql.catalyst.expressions.Expression;
import org.apache.spark.sql.catalyst.expressions.aggregate.ImperativeAggregate;
import org.apache.spark.sql.catalyst.expressions.aggregate.TypedImperativeAggregate;
import org.apache.spark.sql.types.DataType;
import org.apache.spark.sql.types.DataTypes;
import org.apache.spark.unsafe.types.UTF8String;
import scala.collection.immutable.IndexedSeq;
import scala.collection.immutable.Seq;

/**
 * The instrumented operator's aggregate, a Catalyst aggregate of its own: per source partition,
 * records, min/max event time and the record at the max, late records and late samples,
 * future-dated records, their largest lead and samples, and histograms of how far late and
 * on-time rows are from the late watermark, of one task's rows, folded into a {@link Figures}
 * buffer; the result is the task's figures as the listener reads them (JSON).
 *
 * <p>Each row's arguments are read straight from Spark's row ({@link RowField}): no projection,
 * no object per row, and text only for a late or future-dated row's key or a partition name
 * that changed (a new max's key is copied as bytes). Arguments, in order: event time,
 * partition, topic, key, offset (literal nulls for columns the rows do not have). A row
 * without an event time is not counted.
 *
 * <p>Late: the time Spark compares with the watermark (the event time rounded up to the
 * millisecond, or the end of its window) is at or below the batch's late watermark, which the
 * task's buffer holds ({@link LateWatermarks}). Spark drops a row when {@code ts_µs <= W_ms *
 * 1000}, that is when its time rounded up to the ms is. Future-dated: the event time (ms) is
 * more than the tolerance ahead of the batch's time, which the buffer holds too.
 */
final class FiguresAggregate extends TypedImperativeAggregate<Figures> implements Serializable {
    private static final long serialVersionUID = 1L;

    /** How the rows name their source partition. */
    enum Naming {
        /** By an integral partition column: its number. */
        NUMBER,
        /** By no column: the Spark input split, the running task's partition. */
        SPLIT,
        /** By a partition column as text. */
        TEXT,
        /** By a topic column and an integral partition column: {@code topic/partition}. */
        TOPIC_AND_NUMBER,
        /** By a topic column and a partition column as text: {@code topic/partition}. */
        TOPIC_AND_TEXT
    }

    /** What one instrumented query's aggregate is told. */
    record Settings(
            String checkpoint, long delayMs, int samplesPerPartition, long windowMs,
            long futureToleranceMs, boolean timeInMs, Naming naming) implements Serializable {}

    private static final int TIME = 0;
    private static final int PARTITION = 1;
    private static final int TOPIC = 2;
    private static final int KEY = 3;
    private static final int OFFSET = 4;

    private final Seq<Expression> arguments;
    private final Settings settings;
    private final int mutableAggBufferOffset;
    private final int inputAggBufferOffset;
    /** The arguments as bound to the rows' columns, made where the rows are read. */
    private transient RowField[] fields;

    FiguresAggregate(Seq<Expression> arguments, Settings settings) {
        this(arguments, settings, 0, 0);
    }

    private FiguresAggregate(
            Seq<Expression> arguments, Settings settings, int mutableAggBufferOffset,
            int inputAggBufferOffset) {
        this.arguments = arguments;
        this.settings = settings;
        this.mutableAggBufferOffset = mutableAggBufferOffset;
        this.inputAggBufferOffset = inputAggBufferOffset;
    }

    @Override
    public Figures createAggregationBuffer() {
        // A task's buffer; the driver's, which only merges tasks' buffers, knows no batch.
        TaskContext task = TaskContext.get();
        if (task == null) {
            return new Figures(settings.samplesPerPartition());
        }
        return Figures.forTask(settings.samplesPerPartition(),
                LateWatermarks.current(settings.checkpoint()), settings.futureToleranceMs(),
                task.partitionId());
    }

    @Override
    public Figures update(Figures figures, InternalRow row) {
        RowField[] read = fields();
        long micros = read[TIME].getLong(row);
        if (micros == RowField.NULL) {
            return figures;
        }
        if (settings.timeInMs()) {
            micros *= 1000;
        }
        int slot = slot(figures, read, row);
        // Truncated to the millisecond, as the Python operator's figures are.
        long ms = micros / 1000;
        long windowMs = settings.windowMs();
        long compared = windowMs > 0 ? ms / windowMs * windowMs + windowMs : (micros + 999) / 1000;
        boolean late = figures.isLate(compared);
        boolean future = figures.isFuture(ms);
        figures.add(slot, ms, compared, late, future);
        boolean max = ms >= figures.maxMs(slot);
        // Key and offset only for a row that may be kept: a sample, or the partition's max.
        if (late || future || max) {
            offer(figures, slot, ms, read, row, late, future, max);
        }
        return figures;
    }

    /** Offer the row, by its key and offset, as the slot's max and as a late or future sample. */
    private static void offer(
            Figures figures, int slot, long ms, RowField[] read, InternalRow row, boolean late,
            boolean future, boolean max) {
        long offset = read[OFFSET].getLong(row);
        boolean hasOffset = offset != RowField.NULL;
        if (!hasOffset) {
            offset = 0;
        }
        if (max) {
            figures.offerMax(slot, ms, read[KEY], row, hasOffset, offset);
        }
        if (late || future) {
            String key = read[KEY].getString(row);
            if (late) {
                figures.offerLate(slot, key, ms, hasOffset, offset);
            }
            if (future) {
                figures.offerFuture(slot, key, ms, hasOffset, offset);
            }
        }
    }

    private int slot(Figures figures, RowField[] read, InternalRow row) {
        switch (settings.naming()) {
            case SPLIT:
                return figures.slotOfCode(figures.inputSplit());
            case NUMBER:
                long code = read[PARTITION].getLong(row);
                if (code == RowField.NULL) {
                    return figures.slotOfName("null");
                }
                return code >= 0 ? figures.slotOfCode(code) : figures.slotOfName(Long.toString(code));
            case TEXT:
                return figures.slotOfParts(null, read[PARTITION].getText(row), RowField.NULL);
            default:
                UTF8String topic = read[TOPIC].getText(row);
                if (topic == null) {
                    return figures.slotOfName("null");
                }
                return settings.naming() == Naming.TOPIC_AND_TEXT
                        ? figures.slotOfParts(topic, read[PARTITION].getText(row), RowField.NULL)
                        : figures.slotOfParts(topic, null, read[PARTITION].getLong(row));
        }
    }

    private RowField[] fields() {
        RowField[] known = fields;
        if (known == null) {
            known = new RowField[arguments.size()];
            for (int i = 0; i < known.length; i++) {
                known[i] = new RowField(arguments.apply(i));
            }
            fields = known;
        }
        return known;
    }

    @Override
    public Figures merge(Figures figures, Figures other) {
        return figures.merge(other);
    }

    @Override
    public Object eval(Figures figures) {
        String json = figures.toJson(settings.delayMs(), settings.futureToleranceMs());
        return json == null ? null : UTF8String.fromString(json);
    }

    @Override
    public byte[] serialize(Figures figures) {
        return figures.toBytes();
    }

    @Override
    public Figures deserialize(byte[] bytes) {
        return Figures.fromBytes(bytes);
    }

    @Override
    public Seq<Expression> children() {
        return arguments;
    }

    @Override
    public boolean nullable() {
        return true;
    }

    @Override
    public DataType dataType() {
        return DataTypes.StringType;
    }

    @Override
    public int mutableAggBufferOffset() {
        return mutableAggBufferOffset;
    }

    @Override
    public int inputAggBufferOffset() {
        return inputAggBufferOffset;
    }

    @Override
    public ImperativeAggregate withNewMutableAggBufferOffset(int offset) {
        return new FiguresAggregate(arguments, settings, offset, inputAggBufferOffset);
    }

    @Override
    public ImperativeAggregate withNewInputAggBufferOffset(int offset) {
        return new FiguresAggregate(arguments, settings, mutableAggBufferOffset, offset);
    }

    @Override
    public Expression withNewChildrenInternal(IndexedSeq<Expression> newArguments) {
        return new FiguresAggregate(newArguments, settings, mutableAggBufferOffset,
                inputAggBufferOffset);
    }

    @Override
    public Expression makeCopy(Object[] newArgs) {
        return new FiguresAggregate(arguments, settings, mutableAggBufferOffset,
                inputAggBufferOffset);
    }

    @Override
    public String prettyName() {
        return "wmon_figures";
    }

    // Catalyst trees are Scala case classes; this one shows no fields of its own.
    @Override
    public int productArity() {
        return 0;
    }

    @Override
    public Object productElement(int n) {
        throw new IndexOutOfBoundsException(n);
    }

    @Override
    public boolean canEqual(Object that) {
        return that instanceof FiguresAggregate;
    }
}
