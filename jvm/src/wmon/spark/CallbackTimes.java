package wmon.spark;

/** How long the listener's callbacks took on Spark's listener bus thread, the last N of them. */
final class CallbackTimes {
    private final long[] recent;
    private long count;

    CallbackTimes(int keep) {
        recent = new long[keep];
    }

    synchronized void add(long nanos) {
        recent[(int) (count % recent.length)] = nanos;
        count++;
    }

    synchronized long count() {
        return count;
    }

    /** The most recent durations in nanoseconds, oldest first. */
    synchronized long[] recent() {
        int size = (int) Math.min(count, recent.length);
        long[] copy = new long[size];
        long first = count - size;
        for (int i = 0; i < size; i++) {
            copy[i] = recent[(int) ((first + i) % recent.length)];
        }
        return copy;
    }
}
