package wmon.spark.operator;

import scala.Tuple2;

/**
 * Rows of partitions known by name ({@code topic/partition}, a text partition column): the
 * event time packed as in {@link PackedRows}, and the name. Costs one name per row.
 */
final class NamedRows extends FiguresAggregator<Tuple2<Long, String>> {
    private static final long serialVersionUID = 1L;

    NamedRows(
            String checkpoint, long delayMs, int samplesPerPartition, long windowMs) {
        super(checkpoint, delayMs, samplesPerPartition, windowMs);
    }

    @Override
    public Figures reduce(Figures figures, Tuple2<Long, String> row) {
        Long time = row._1();
        if (time != null) {
            String name = row._2();
            addPacked(figures, figures.slotOfName(name == null ? "null" : name), time);
        }
        return figures;
    }
}
