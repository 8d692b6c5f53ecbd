package wmon.spark.operator;

import org.apache.spark.TaskContext;

/** The running batch's late watermark W_{N-1} in ms, null before the first watermark. */
final class LateThreshold extends PerTask<Long> {
    private static final long serialVersionUID = 1L;

    private final String checkpoint;

    LateThreshold(String checkpoint) {
        this.checkpoint = checkpoint;
    }

    @Override
    Long valueFor(TaskContext task) {
        return LateWatermarks.current(checkpoint).watermarkMs();
    }
}
