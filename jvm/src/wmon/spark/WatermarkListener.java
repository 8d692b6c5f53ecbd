package wmon.spark;

import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicLong;
import java.util.function.Supplier;
import org.apache.spark.SparkConf;
import org.apache.spark.sql.streaming.StreamingQueryListener;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * Posts every streaming query event of a Spark application, in Spark's event-log form, to the
 * wmon collector ({@code POST <spark.wmon.url>/api/ingest}). Loaded by configuration alone:
 * {@code spark.sql.streaming.streamingQueryListeners=wmon.spark.WatermarkListener}.
 *
 * <p>Callbacks run on Spark's listener bus thread: they only queue the event itself (Spark's
 * events are immutable) and, for a terminated event, the time it arrived; they never throw. A
 * daemon thread renders each event's JSON and delivers the queue; a shutdown hook gives it
 * {@code spark.wmon.closeTimeoutMs} to finish when the JVM exits. Another daemon thread tells
 * of the batches in flight of the queries this listener saw start ({@link RunningWatch}).
 */
public class WatermarkListener extends StreamingQueryListener {
    private static final long serialVersionUID = 1L;
    private static final Logger LOG = LoggerFactory.getLogger(WatermarkListener.class);
    /** The callback durations kept for {@link #callbackNanos()}. */
    private static final int KEEP_TIMES = 10_000;
    /** Every listener not yet closed, so that one Spark created can be read through py4j. */
    private static final List<WatermarkListener> INSTANCES = new CopyOnWriteArrayList<>();

    private final transient Settings settings;
    private final transient Sender sender;
    private final transient RunningWatch running;
    private final transient Thread shutdownHook;
    private final transient CallbackTimes times = new CallbackTimes(KEEP_TIMES);
    private final AtomicLong failures = new AtomicLong();

    /** The constructor Spark calls for a listener named in its configuration. */
    public WatermarkListener(SparkConf conf) {
        settings = new Settings(conf);
        settings.warnings.forEach(warning -> LOG.warn("wmon: {}", warning));
        if (settings.ingestUri == null) {
            sender = null;
            running = null;
            shutdownHook = null;
        } else {
            sender = new Sender(settings);
            sender.start();
            running = new RunningWatch(sender, settings.runningIntervalMs);
            shutdownHook = new Thread(this::deliverAndStop, "wmon-listener-shutdown");
            Runtime.getRuntime().addShutdownHook(shutdownHook);
            LOG.info("wmon: posting streaming query events to {}", settings.ingestUri);
        }
        INSTANCES.add(this);
    }

    /** Reads the settings from the JVM's spark.* system properties, as SparkConf does. */
    public WatermarkListener() {
        this(new SparkConf());
    }

    @Override
    public void onQueryStarted(QueryStartedEvent event) {
        // Spark posts the started event on the query's own thread while the query is active:
        // its trigger is read now (a look-up and a few reflective calls).
        handle(event, () -> EventLog.startedLater(
                event, named(event::json), Triggers.field(event.runId())));
    }

    @Override
    public void onQueryProgress(QueryProgressEvent event) {
        handle(event, () -> EventLog.later(event, named(event::json), null));
    }

    @Override
    public void onQueryIdle(QueryIdleEvent event) {
        handle(event, () -> EventLog.later(event, event::json, null));
    }

    @Override
    public void onQueryTerminated(QueryTerminatedEvent event) {
        handle(event, () -> EventLog.later(event, event::json, Instant.now()));
    }

    /** The event's JSON, with its query named as its pipeline's flow where one is set. */
    private Supplier<String> named(Supplier<String> json) {
        String pipeline = settings.pipeline;
        return pipeline == null ? json : () -> FlowNames.named(json.get(), pipeline);
    }

    /**
     * Queue one event's line, to be rendered on the sender's thread (its JSON is asked for
     * there); nothing can escape from here.
     */
    private void handle(Object event, Supplier<Supplier<String>> line) {
        long start = System.nanoTime();
        try {
            if (sender != null) {
                running.noted(event);
                sender.offer(line.get());
            }
        } catch (Throwable t) {
            // Monitoring must never break the query: count it, say it once.
            if (failures.getAndIncrement() == 0) {
                LOG.warn("wmon: could not queue a streaming query event (counted as failures)", t);
            }
        } finally {
            times.add(System.nanoTime() - start);
        }
    }

    /**
     * Stop telling of batches in flight, deliver what is queued for at most
     * spark.wmon.closeTimeoutMs, then stop sending.
     */
    public void close() {
        if (shutdownHook != null) {
            try {
                Runtime.getRuntime().removeShutdownHook(shutdownHook);
            } catch (IllegalStateException shuttingDown) {
                // The hook is running or about to: it does the same.
            }
        }
        deliverAndStop();
    }

    private void deliverAndStop() {
        INSTANCES.remove(this);
        if (sender == null) {
            return;
        }
        running.close();
        try {
            sender.close(settings.closeTimeoutMs);
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
        Map<String, Long> stats = sender.stats();
        if (stats.get("dropped") > 0 || stats.get("rejected") > 0) {
            LOG.warn("wmon: listener stopped: {}", stats);
        }
    }

    /** Whether events are sent: spark.wmon.url is set and usable. */
    public boolean enabled() {
        return sender != null;
    }

    /**
     * Counters since the start: queued, delivered, dropped (queue full, or left at close),
     * rejected (refused by the collector as invalid, or too large: never sent again), retries
     * (posts whose events go again: an outage, or a 413 of several), pending (in the queue now),
     * failures (callbacks that could not queue their event, queued events whose JSON the
     * sender's thread could not render, and looks for batches in flight that failed: none is
     * sent) and callbacks.
     */
    public Map<String, Long> stats() {
        Map<String, Long> stats = sender != null
                ? sender.stats()
                : new java.util.LinkedHashMap<>(Map.of("queued", 0L, "delivered", 0L,
                        "dropped", 0L, "rejected", 0L, "retries", 0L, "pending", 0L,
                        "failures", 0L));
        long watchFailures = running == null ? 0 : running.failures();
        stats.merge("failures", failures.get() + watchFailures, Long::sum);
        stats.put("callbacks", times.count());
        return stats;
    }

    /** How long the most recent callbacks (up to 10,000) took on the bus thread, oldest first. */
    public long[] callbackNanos() {
        return times.recent();
    }

    /** What was wrong with the settings, one sentence each (also logged as warnings). */
    public List<String> warnings() {
        return settings.warnings;
    }

    /** Why the last events were rejected (the collector's message, cut), or null. */
    public String lastRejection() {
        return sender == null ? null : sender.lastRejection();
    }

    /** The identity sent as Wmon-Sender: spark.app.id, else a name made for this listener. */
    public String senderId() {
        return settings.sender;
    }

    /** Every listener created in this JVM and not closed, oldest first. */
    public static List<WatermarkListener> instances() {
        return List.copyOf(INSTANCES);
    }
}
