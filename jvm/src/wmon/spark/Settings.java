package wmon.spark;

import java.net.URI;
import java.util.ArrayList;
import java.util.Collections;
import java.util.List;
import org.apache.spark.SparkConf;

/** The listener's settings, read once from the SparkConf; a bad value becomes a warning. */
final class Settings {
    static final String URL = "spark.wmon.url";
    static final String TOKEN = "spark.wmon.token";
    static final String QUEUE_SIZE = "spark.wmon.queueSize";
    static final String BATCH_SIZE = "spark.wmon.batchSize";
    static final String MAX_BACKOFF_MS = "spark.wmon.maxBackoffMs";
    static final String CLOSE_TIMEOUT_MS = "spark.wmon.closeTimeoutMs";
    static final String RUNNING_INTERVAL_MS = "spark.wmon.runningIntervalMs";
    static final String PIPELINE = "spark.wmon.pipeline";

    /** Where events go: {@code <spark.wmon.url>/api/ingest}, or null when unset or unusable. */
    final URI ingestUri;
    final String token;
    final String sender;
    final int queueSize;
    final int batchSize;
    final long maxBackoffMs;
    final long closeTimeoutMs;
    /** How often the active queries are asked which of them runs a batch now. */
    final long runningIntervalMs;
    /** The Declarative Pipeline whose flows the queries are ({@code wmon pipelines}), or null. */
    final String pipeline;
    /** What was wrong with the configuration, one sentence per setting. */
    final List<String> warnings;

    Settings(SparkConf conf) {
        List<String> found = new ArrayList<>();
        ingestUri = ingestUri(conf.get(URL, ""), found);
        token = token(conf.get(TOKEN, ""), found);
        sender = conf.get("spark.app.id", "wmon-listener-" + java.util.UUID.randomUUID());
        queueSize = (int) number(conf, QUEUE_SIZE, 10_000, 1, 10_000_000, found);
        batchSize = (int) number(conf, BATCH_SIZE, 200, 1, 100_000, found);
        maxBackoffMs = number(conf, MAX_BACKOFF_MS, 30_000, 1, 3_600_000, found);
        closeTimeoutMs = number(conf, CLOSE_TIMEOUT_MS, 10_000, 0, 3_600_000, found);
        runningIntervalMs = number(conf, RUNNING_INTERVAL_MS, 5_000, 100, 3_600_000, found);
        String named = conf.get(PIPELINE, "").strip();
        pipeline = named.isEmpty() ? null : named;
        warnings = Collections.unmodifiableList(found);
    }

    private static URI ingestUri(String raw, List<String> warnings) {
        String url = raw.strip();
        if (url.isEmpty()) {
            warnings.add(URL + " is not set: the wmon listener is disabled");
            return null;
        }
        try {
            URI base = new URI(url.replaceAll("/+$", ""));
            String scheme = base.getScheme() == null ? "" : base.getScheme().toLowerCase();
            if (!(scheme.equals("http") || scheme.equals("https")) || base.getHost() == null) {
                throw new IllegalArgumentException("not an http(s) URL with a host");
            }
            return URI.create(base + "/api/ingest");
        } catch (Exception e) {
            warnings.add(URL + "=" + raw + " is not usable (" + e.getMessage()
                    + "): the wmon listener is disabled");
            return null;
        }
    }

    private static String token(String raw, List<String> warnings) {
        if (raw.isEmpty()) {
            return null;
        }
        if (raw.chars().anyMatch(c -> c < 0x21 || c > 0x7e)) {
            warnings.add(TOKEN + " may only hold visible ASCII characters: sending no token");
            return null;
        }
        return raw;
    }

    private static long number(
            SparkConf conf, String key, long fallback, long low, long high, List<String> warnings) {
        String raw = conf.get(key, "").strip();
        if (raw.isEmpty()) {
            return fallback;
        }
        try {
            long value = Long.parseLong(raw);
            if (value >= low && value <= high) {
                return value;
            }
        } catch (NumberFormatException e) {
            // Reported below, as an out-of-range value is.
        }
        warnings.add(key + "=" + raw + " must be a whole number from " + low + " to " + high
                + ": using the default, " + fallback);
        return fallback;
    }
}
