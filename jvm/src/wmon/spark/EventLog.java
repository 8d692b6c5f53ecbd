package wmon.spark;

import java.time.Instant;
import java.time.ZoneOffset;
import java.time.format.DateTimeFormatter;
import java.util.Objects;
import java.util.UUID;
import java.util.function.Supplier;

/** Spark's event-log form of a listener event: its JSON with the class name as "Event". */
final class EventLog {
    /** Our own event, in the same form, for a batch in flight: Spark has none. */
    static final String BATCH_RUNNING = "wmon.BatchRunning";
    /** The form Spark gives the other events' "timestamp" (always UTC, milliseconds). */
    private static final DateTimeFormatter TIMESTAMP =
            DateTimeFormatter.ofPattern("yyyy-MM-dd'T'HH:mm:ss.SSS'Z'").withZone(ZoneOffset.UTC);

    private EventLog() {}

    /**
     * The event's line, rendered only when asked for: on the sender's thread, not Spark's bus.
     * Spark's events are immutable, so their JSON is the same then as now. With a
     * {@code received} time the line is {@link #lineAt}'s, else {@link #line}'s.
     */
    static Supplier<String> later(Object event, Supplier<String> json, Instant received) {
        Objects.requireNonNull(event, "no event");
        if (received == null) {
            return () -> line(event, json.get());
        }
        return () -> lineAt(event, json.get(), received);
    }

    /**
     * A started event's line, rendered only when asked for, with its query's {@code trigger}
     * ({@link Triggers#field}) first, where it was read: Spark's started event does not say.
     */
    static Supplier<String> startedLater(Object event, Supplier<String> json, String trigger) {
        Objects.requireNonNull(event, "no event");
        String extra = trigger == null ? "" : trigger + ",";
        return () -> withFields(event, extra, json.get());
    }

    /** {"Event":"<class>", ...the fields of the event's own JSON object...}. */
    static String line(Object event, String json) {
        return withFields(event, "", json);
    }

    /** As {@link #line}, with a "timestamp" first: Spark's terminated event carries no time. */
    static String lineAt(Object event, String json, Instant received) {
        return withFields(event, "\"timestamp\":\"" + TIMESTAMP.format(received) + "\",", json);
    }

    /**
     * {"Event":"wmon.BatchRunning","id","runId","batchId","timestamp","since"}: at {@code at}
     * the run's trigger was active on {@code batchId} (null: the batch after the last stored,
     * before the run's first progress), as it has been since {@code since}.
     */
    static String batchRunning(UUID id, UUID runId, Long batchId, Instant at, Instant since) {
        String batch = batchId == null ? "null" : batchId.toString();
        return "{\"Event\":\"" + BATCH_RUNNING + "\",\"id\":\"" + id + "\",\"runId\":\"" + runId
                + "\",\"batchId\":" + batch + ",\"timestamp\":\"" + TIMESTAMP.format(at)
                + "\",\"since\":\"" + TIMESTAMP.format(since) + "\"}";
    }

    private static String withFields(Object event, String extra, String json) {
        String body = json.strip();
        if (!body.startsWith("{") || !body.endsWith("}")) {
            throw new IllegalArgumentException("the event's JSON is not an object");
        }
        String fields = body.substring(1, body.length() - 1).strip();
        // Class names are Java identifiers joined by '.' and '$': nothing in them needs escaping.
        String head = "{\"Event\":\"" + event.getClass().getName() + "\"";
        if (fields.isEmpty() && extra.isEmpty()) {
            return head + "}";
        }
        String rest = fields.isEmpty() ? extra.substring(0, extra.length() - 1) : extra + fields;
        return head + "," + rest + "}";
    }
}
