package wmon.spark;

import java.time.Instant;
import java.util.Collection;
import java.util.HashMap;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.UUID;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.Executors;
import java.util.concurrent.ScheduledExecutorService;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicLong;
import org.apache.spark.sql.SparkSession;
import org.apache.spark.sql.streaming.StreamingQuery;
import org.apache.spark.sql.streaming.StreamingQueryListener.QueryStartedEvent;
import org.apache.spark.sql.streaming.StreamingQueryListener.QueryTerminatedEvent;
import org.apache.spark.sql.streaming.StreamingQueryProgress;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import scala.Option;

/**
 * Batches in flight. Spark tells of a batch only when it ends, so a query busy with one long
 * batch would say nothing all that time. Every {@code spark.wmon.runningIntervalMs} a daemon
 * thread ({@code wmon-running}) looks for the runs its listener has seen start and not end
 * among the active queries of the sessions it can reach (the default session, and the one
 * active on the thread that made the watch, which its thread inherits), and offers a
 * {@link EventLog#batchRunning} line for each whose trigger is active: the batch after its last
 * progress, and since when the watch has seen it in flight.
 *
 * <p>Only runs the listener saw start are reported: Spark makes a listener per session's query
 * manager, and each tells of its own session's queries. A query of a session this thread cannot
 * reach is not reported. A look that fails is counted and logged once; the next goes on.
 */
final class RunningWatch {
    private static final Logger LOG = LoggerFactory.getLogger(RunningWatch.class);
    /** How long closing waits for a look under way, so that its lines are queued in time. */
    private static final long STOP_WAIT_MS = 1_000;

    /** One batch of one run: null before the run's first progress. */
    private record Batch(UUID runId, Long batchId) {}

    private final Sender sender;
    private final ScheduledExecutorService thread;
    /** The runs the listener saw start and not yet terminate. */
    private final Set<UUID> runs = ConcurrentHashMap.newKeySet();
    private final AtomicLong failures = new AtomicLong();
    /** When each batch in flight at the last look was first seen; the watch's thread's alone. */
    private Map<Batch, Instant> seen = Map.of();

    RunningWatch(Sender sender, long intervalMs) {
        this.sender = sender;
        this.thread = Executors.newSingleThreadScheduledExecutor(task -> {
            Thread watch = new Thread(task, "wmon-running");
            watch.setDaemon(true);
            return watch;
        });
        thread.scheduleWithFixedDelay(
                this::lookOnce, intervalMs, intervalMs, TimeUnit.MILLISECONDS);
    }

    /** Follow the runs from the listener's events: watched from started until terminated. */
    void noted(Object event) {
        if (event instanceof QueryStartedEvent started) {
            runs.add(started.runId());
        } else if (event instanceof QueryTerminatedEvent terminated) {
            runs.remove(terminated.runId());
        }
    }

    /** Looks that failed. */
    long failures() {
        return failures.get();
    }

    /** Stop looking, after the look under way (if any) has queued its lines. */
    void close() {
        thread.shutdown();
        try {
            if (!thread.awaitTermination(STOP_WAIT_MS, TimeUnit.MILLISECONDS)) {
                thread.shutdownNow();
            }
        } catch (InterruptedException e) {
            thread.shutdownNow();
            Thread.currentThread().interrupt();
        }
    }

    private void lookOnce() {
        try {
            look();
        } catch (Throwable t) {
            // A task that throws is never run again: count it, say it once, look next time.
            if (failures.getAndIncrement() == 0) {
                LOG.warn("wmon: could not read the queries' status (counted as failures)", t);
            }
        }
    }

    private void look() {
        if (runs.isEmpty()) {
            seen = Map.of();
            return;
        }
        // Taken before the queries are read, so no line is later than its run's end.
        Instant now = Instant.now();
        Map<Batch, Instant> inFlight = new HashMap<>();
        for (StreamingQuery query : activeQueries()) {
            if (!runs.contains(query.runId()) || !query.status().isTriggerActive()) {
                continue;
            }
            StreamingQueryProgress last = query.lastProgress();
            Batch batch = new Batch(query.runId(), last == null ? null : last.batchId() + 1);
            Instant since = seen.getOrDefault(batch, now);
            inFlight.put(batch, since);
            String line =
                    EventLog.batchRunning(query.id(), batch.runId(), batch.batchId(), now, since);
            sender.offer(() -> line);
        }
        seen = inFlight;
    }

    /**
     * The active queries of the default session and of this thread's active one (inherited from
     * the thread that made the watch), each once.
     */
    static Collection<StreamingQuery> activeQueries() {
        Map<UUID, StreamingQuery> byRun = new LinkedHashMap<>();
        for (Option<SparkSession> session :
                List.of(SparkSession.getDefaultSession(), SparkSession.getActiveSession())) {
            if (session.isDefined()) {
                for (StreamingQuery query : session.get().streams().active()) {
                    byRun.putIfAbsent(query.runId(), query);
                }
            }
        }
        return byRun.values();
    }
}
