package wmon.spark;

import java.io.ByteArrayOutputStream;
import java.net.http.HttpClient;
import java.net.http.HttpRequest;
import java.net.http.HttpResponse;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.ArrayDeque;
import java.util.ArrayList;
import java.util.LinkedHashMap;
import java.util.List;
import java.util.Map;
import java.util.function.Supplier;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import wmon.spark.CollectorAnswer.Fate;

/**
 * A bounded queue of events and the one daemon thread that renders them as event-log lines and
 * posts them, in order, to the collector. Events stay at the head of the queue until the
 * collector has answered for them, so a collector that is down for minutes loses nothing the
 * queue holds; beyond that the oldest are dropped, and counted.
 *
 * <p>An event is rendered once, by this thread, outside the lock {@link #offer} takes, when a
 * request first needs it. One whose rendering fails is taken out of the queue, logged once and
 * counted in {@code failures}; the thread goes on with the next.
 *
 * <p>Only an outage is retried ({@link CollectorAnswer}): events the collector refuses are
 * counted in {@code rejected} and never sent again, so they cannot hold back those behind them.
 */
final class Sender implements Runnable {
    private static final Logger LOG = LoggerFactory.getLogger(Sender.class);
    private static final long FIRST_BACKOFF_MS = 100;
    /** Requests stay well under the collector's 16 MiB limit (a character is 1-3 bytes). */
    private static final int MAX_BODY_CHARS = 1 << 20;
    /** A request the collector could never accept (413 forever) is not sent. */
    private static final int MAX_BODY_BYTES = 15 << 20;
    private static final Duration REQUEST_TIMEOUT = Duration.ofSeconds(30);

    /** A queued event: its line once this thread has rendered it, else null. */
    private static final class Entry {
        final long seq;
        final Supplier<String> source;
        String json;

        Entry(long seq, Supplier<String> source) {
            this.seq = seq;
            this.source = source;
        }
    }

    private final Settings settings;
    private final HttpClient http;
    private final Thread thread;
    private final ArrayDeque<Entry> queue = new ArrayDeque<>();
    private long nextSeq;
    /** The last sequence number of the request under way; -1 when there is none. */
    private long inFlightLast = -1;
    /** Dropped from the queue while being posted: dropped only if that post fails. */
    private long droppedInFlight;
    /** After a 413, the events up to this sequence number go in requests of smallerSize. */
    private long smallerUntil = -1;
    private int smallerSize;
    private long queued;
    private long delivered;
    private long dropped;
    private long rejected;
    private long retries;
    private long failures;
    private String lastRejection;
    private String lastFailure;
    private boolean closing;
    private boolean stopped;

    Sender(Settings settings) {
        this.settings = settings;
        this.http = HttpClient.newBuilder()
                .version(HttpClient.Version.HTTP_1_1)
                .connectTimeout(Duration.ofSeconds(10))
                .build();
        this.thread = new Thread(this, "wmon-listener-sender");
        thread.setDaemon(true);
    }

    void start() {
        thread.start();
    }

    /**
     * Queue one event, rendered by {@code line} on this thread later; when the queue is full
     * the oldest event makes room. Never blocks.
     */
    synchronized void offer(Supplier<String> line) {
        if (stopped) {
            dropped++;
            return;
        }
        if (queue.size() >= settings.queueSize) {
            Entry oldest = queue.pollFirst();
            if (oldest.seq <= inFlightLast) {
                droppedInFlight++;
            } else {
                dropped++;
            }
        }
        queue.addLast(new Entry(nextSeq++, line));
        queued++;
        if (queue.size() == 1) {
            notifyAll();
        }
    }

    /** Deliver what is queued for at most timeoutMs, then stop; what is left counts as dropped. */
    void close(long timeoutMs) throws InterruptedException {
        synchronized (this) {
            closing = true;
            notifyAll();
        }
        if (timeoutMs > 0) {
            thread.join(timeoutMs);
        }
        if (thread.isAlive()) {
            thread.interrupt();
            thread.join(1_000);
        }
        synchronized (this) {
            stopped = true;
            dropped += queue.size() + droppedInFlight;
            droppedInFlight = 0;
            queue.clear();
        }
    }

    synchronized Map<String, Long> stats() {
        Map<String, Long> stats = new LinkedHashMap<>();
        stats.put("queued", queued);
        stats.put("delivered", delivered);
        stats.put("dropped", dropped);
        stats.put("rejected", rejected);
        stats.put("retries", retries);
        stats.put("pending", (long) queue.size());
        stats.put("failures", failures);
        return stats;
    }

    synchronized String lastRejection() {
        return lastRejection;
    }

    @Override
    public void run() {
        long backoffMs = FIRST_BACKOFF_MS;
        try {
            while (true) {
                List<Entry> next;
                synchronized (this) {
                    while (queue.isEmpty() && !closing) {
                        wait();
                    }
                    if (queue.isEmpty()) {
                        return;
                    }
                    next = oldest(settings.batchSize);
                }
                render(next);
                List<Entry> batch;
                long droppedSoFar;
                synchronized (this) {
                    batch = head();
                    if (batch.isEmpty()) {
                        continue; // what was rendered was dropped meanwhile, or failed
                    }
                    inFlightLast = batch.get(batch.size() - 1).seq;
                    droppedSoFar = dropped;
                }
                CollectorAnswer answer = post(batch, droppedSoFar);
                settle(batch, answer);
                if (answer.fate() == Fate.RETRY) {
                    // At least as long as Retry-After asks, at most the longest backoff.
                    long waitMs = Math.max(backoffMs, answer.waitMs());
                    Thread.sleep(Math.min(waitMs, settings.maxBackoffMs));
                    backoffMs = Math.min(backoffMs * 2, settings.maxBackoffMs);
                } else {
                    backoffMs = FIRST_BACKOFF_MS;
                }
            }
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        } catch (RuntimeException | Error e) {
            LOG.error("wmon: the listener's sender stopped: events are no longer delivered", e);
        }
    }

    /**
     * Render the events not yet rendered, outside the lock: Spark's thread may queue meanwhile.
     * An event that cannot be rendered is taken out of the queue and counted in failures.
     */
    private void render(List<Entry> entries) {
        for (Entry entry : entries) {
            if (entry.json != null) {
                continue;
            }
            try {
                entry.json = entry.source.get();
            } catch (Throwable t) {
                // Whatever Spark's JSON rendering throws, the thread must live on.
                failedToRender(entry, t);
            }
        }
    }

    private synchronized void failedToRender(Entry entry, Throwable t) {
        if (!queue.remove(entry)) {
            return; // dropped from the queue meanwhile, and counted as dropped
        }
        failures++;
        if (failures == 1) {
            LOG.warn("wmon: could not render a streaming query event (counted as failures)", t);
        }
    }

    /** The oldest queued events, up to count of them. */
    private List<Entry> oldest(int count) {
        List<Entry> entries = new ArrayList<>();
        for (Entry entry : queue) {
            if (entries.size() == count) {
                break;
            }
            entries.add(entry);
        }
        return entries;
    }

    /**
     * The oldest rendered events, up to batchSize of them (fewer again after a 413) and about
     * MAX_BODY_CHARS (at least one, unless the oldest is not rendered yet).
     */
    private List<Entry> head() {
        List<Entry> batch = new ArrayList<>();
        boolean smaller = !queue.isEmpty() && queue.peekFirst().seq <= smallerUntil;
        int size = smaller ? smallerSize : settings.batchSize;
        long chars = 0;
        for (Entry entry : queue) {
            if (entry.json == null) {
                break;
            }
            chars += entry.json.length() + 1;
            if (batch.size() == size || (!batch.isEmpty() && chars > MAX_BODY_CHARS)) {
                break;
            }
            batch.add(entry);
        }
        return batch;
    }

    private CollectorAnswer post(List<Entry> batch, long droppedSoFar)
            throws InterruptedException {
        byte[] body = body(batch);
        if (body.length > MAX_BODY_BYTES) {
            return logged(CollectorAnswer.tooLarge(batch.size(), "a request of " + body.length
                    + " bytes is larger than the collector accepts"), batch.size());
        }
        HttpRequest.Builder request = HttpRequest.newBuilder(settings.ingestUri)
                .timeout(REQUEST_TIMEOUT)
                .header("Content-Type", "application/json")
                .header("Wmon-Sender", settings.sender)
                .header("Wmon-Dropped", Long.toString(droppedSoFar))
                .POST(HttpRequest.BodyPublishers.ofByteArray(body));
        if (settings.token != null) {
            request.header("Authorization", "Bearer " + settings.token);
        }
        CollectorAnswer answer;
        try {
            HttpResponse<String> response =
                    http.send(request.build(), HttpResponse.BodyHandlers.ofString());
            String retryAfter = response.headers().firstValue("Retry-After").orElse(null);
            answer = CollectorAnswer.of(
                    response.statusCode(), response.body(), retryAfter, batch.size());
        } catch (java.io.IOException e) {
            answer = CollectorAnswer.unreachable("cannot be reached (" + e + ")");
        }
        return logged(answer, batch.size());
    }

    /**
     * Log an outage once, not at every retry, until the collector answers again or the reason
     * changes; and every answer that rejects events.
     */
    private CollectorAnswer logged(CollectorAnswer answer, int events) {
        if (answer.fate() == Fate.RETRY) {
            if (!answer.reason().equals(lastFailure)) {
                LOG.warn("wmon: {} {}; retrying", settings.ingestUri, answer.reason());
                lastFailure = answer.reason();
            }
            return answer;
        }
        if (answer.fate() == Fate.TAKEN && lastFailure != null) {
            LOG.info("wmon: {} answers again", settings.ingestUri);
            lastFailure = null;
        }
        if (answer.rejected() > 0) {
            LOG.warn("wmon: {}: {} of {} events rejected (not sent again): {}",
                    settings.ingestUri, answer.rejected(), events, answer.reason());
        }
        return answer;
    }

    private synchronized void settle(List<Entry> batch, CollectorAnswer answer) {
        long last = inFlightLast;
        inFlightLast = -1;
        if (answer.fate() == Fate.TAKEN) {
            // Events dropped from the queue during the post were answered for all the same.
            delivered += batch.size() - answer.rejected();
            rejected += answer.rejected();
            if (answer.rejected() > 0) {
                lastRejection = answer.reason();
            }
            while (!queue.isEmpty() && queue.peekFirst().seq <= last) {
                queue.pollFirst();
            }
        } else {
            // The same events go again: those dropped from the queue meanwhile are lost.
            retries++;
            dropped += droppedInFlight;
            if (answer.fate() == Fate.SMALLER) {
                smallerUntil = Math.max(smallerUntil, last);
                smallerSize = Math.max(1, batch.size() / 2);
            }
        }
        droppedInFlight = 0;
    }

    private static byte[] body(List<Entry> batch) {
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        out.write('[');
        for (int i = 0; i < batch.size(); i++) {
            if (i > 0) {
                out.write(',');
            }
            out.writeBytes(batch.get(i).json.getBytes(StandardCharsets.UTF_8));
        }
        out.write(']');
        return out.toByteArray();
    }
}
