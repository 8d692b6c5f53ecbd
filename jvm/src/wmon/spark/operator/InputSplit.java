package wmon.spark.operator;

import org.apache.spark.TaskContext;

/**
 * The Spark input split a row was read in: the partition of the running task. Spark's own
 * {@code spark_partition_id()} is not set up inside an aggregate's arguments (it reads 0 there).
 */
final class InputSplit extends PerTask<Long> {
    private static final long serialVersionUID = 1L;

    @Override
    Long valueFor(TaskContext task) {
        return (long) task.partitionId();
    }
}
