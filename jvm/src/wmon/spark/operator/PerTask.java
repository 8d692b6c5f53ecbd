package wmon.spark.operator;

import org.apache.spark.TaskContext;
import org.apache.spark.sql.api.java.UDF0;

/**
 * A nondeterministic column whose value is the same for all rows of a task, computed on its
 * first row. Per row it costs one thread-local look-up and returns the same object.
 */
abstract class PerTask<T> implements UDF0<T> {
    private static final long serialVersionUID = 1L;

    /** The value for one task, replaced as a whole so that tasks sharing this object agree. */
    private record ForTask<T>(TaskContext task, T value) {}

    private transient ForTask<T> last;

    /** The value for the running task. */
    abstract T valueFor(TaskContext task);

    @Override
    public T call() {
        TaskContext task = TaskContext.get();
        ForTask<T> known = last;
        if (known == null || known.task() != task) {
            known = new ForTask<>(task, valueFor(task));
            last = known;
        }
        return known.value();
    }
}
