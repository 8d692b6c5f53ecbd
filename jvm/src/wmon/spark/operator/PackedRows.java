package wmon.spark.operator;

/**
 * The hot path: one long per row, {@code partition << 43 | event ms << 1 | part of a ms}, for
 * partitions known by a number (an integral partition column, or the Spark input split); late
 * is decided here, against the buffer's late watermark. Rows that do not fit take
 * {@link LateRows}; a null (no event time, or such a row) is skipped.
 */
final class PackedRows extends FiguresAggregator<Long> {
    private static final long serialVersionUID = 1L;
    static final int CODE_SHIFT = 43;
    static final long MAX_CODE = (1L << (64 - CODE_SHIFT)) - 1;
    static final long MAX_MS = (1L << (CODE_SHIFT - 1)) - 1;

    PackedRows(
            String checkpoint, long delayMs, int samplesPerPartition, long windowMs) {
        super(checkpoint, delayMs, samplesPerPartition, windowMs);
    }

    @Override
    public Figures reduce(Figures figures, Long row) {
        if (row != null) {
            long packed = row;
            addPacked(figures, figures.slotOfCode(packed >>> CODE_SHIFT), packed);
        }
        return figures;
    }
}
