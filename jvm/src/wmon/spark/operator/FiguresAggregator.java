package wmon.spark.operator;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.Encoder;
import org.apache.spark.sql.Encoders;
import org.apache.spark.sql.expressions.Aggregator;

/**
 * What the three ways rows reach a {@link Figures} buffer share: a task's buffer knows its batch
 * and late watermark; buffers merge; the result is the JSON of one task's figures, as the Python
 * operator writes it, so that the listener reads both alike.
 */
abstract class FiguresAggregator<IN> extends Aggregator<IN, Figures, String> {
    private static final long serialVersionUID = 1L;

    private final String checkpoint;
    private final long delayMs;
    private final int samplesPerPartition;
    private final long windowMs;

    FiguresAggregator(String checkpoint, long delayMs, int samplesPerPartition, long windowMs) {
        this.checkpoint = checkpoint;
        this.delayMs = delayMs;
        this.samplesPerPartition = samplesPerPartition;
        this.windowMs = windowMs;
    }

    /**
     * Count a packed row ({@code ms << 1 | 1 when the µs are not a whole ms}): late when the
     * time Spark compares with the watermark is at or below it. Spark drops a row when
     * {@code ts_µs <= W_ms * 1000}, that is when its time rounded up to the ms is; with a
     * window, when the window's end is (epoch times are positive: division floors).
     */
    final void addPacked(Figures figures, int slot, long packed) {
        long ms = (packed >>> 1) & PackedRows.MAX_MS;
        long compared = windowMs > 0 ? ms / windowMs * windowMs + windowMs : ms + (packed & 1);
        figures.add(slot, ms, compared <= figures.lateThresholdMs());
    }

    @Override
    public Figures zero() {
        // A task's buffer; the driver's, which only merges tasks' buffers, knows no batch.
        return TaskContext.get() == null
                ? new Figures(samplesPerPartition)
                : Figures.forBatch(samplesPerPartition, LateWatermarks.current(checkpoint));
    }

    @Override
    public Figures merge(Figures figures, Figures other) {
        return figures.merge(other);
    }

    @Override
    public String finish(Figures figures) {
        return figures.toJson(delayMs);
    }

    @Override
    public Encoder<Figures> bufferEncoder() {
        return Encoders.kryo(Figures.class);
    }

    @Override
    public Encoder<String> outputEncoder() {
        return Encoders.STRING();
    }
}
