package wmon.spark;

import java.util.Set;
import java.util.UUID;
import java.util.regex.Pattern;
import org.apache.spark.sql.streaming.StreamingQuery;

/**
 * How a running query is triggered, read from the query itself: Spark's events do not say. Its
 * execution holds a {@code ProcessingTimeTrigger} (every {@code intervalMs}; 0, the default,
 * runs each batch as soon as the last ends), {@code AvailableNowTrigger}, {@code OneTimeTrigger}
 * or {@code ContinuousTrigger} (every {@code intervalMs}). They are Spark's internals, so they
 * are read by name: what cannot be read is not known.
 */
final class Triggers {
    /** The kinds of trigger that run on an interval. */
    private static final Set<String> PERIODIC = Set.of("ProcessingTime", "Continuous");
    private static final Pattern KIND = Pattern.compile("[A-Za-z]{1,32}");

    private Triggers() {}

    /**
     * {@code "trigger":{"kind":…,"intervalMs":…}} for the active query of run {@code runId}, as
     * a started event carries it; null when the query is not found or its trigger not read.
     */
    static String field(UUID runId) {
        for (StreamingQuery query : RunningWatch.activeQueries()) {
            if (query.runId().equals(runId)) {
                return field(query);
            }
        }
        return null;
    }

    private static String field(StreamingQuery query) {
        try {
            Object execution = query.getClass().getMethod("streamingQuery").invoke(query);
            Object trigger = execution.getClass().getMethod("trigger").invoke(execution);
            String name = trigger.getClass().getSimpleName().replace("$", "");
            String kind = name.endsWith("Trigger") ? name.substring(0, name.length() - 7) : name;
            if (!KIND.matcher(kind).matches()) {
                return null;
            }
            String interval = PERIODIC.contains(kind)
                    ? trigger.getClass().getMethod("intervalMs").invoke(trigger).toString()
                    : "null";
            return "\"trigger\":{\"kind\":\"" + kind + "\",\"intervalMs\":" + interval + "}";
        } catch (ReflectiveOperationException | RuntimeException unreadable) {
            return null;
        }
    }
}
