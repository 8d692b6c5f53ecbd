package wmon.spark;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.MissingNode;
import java.util.Set;

/**
 * What the collector's answer to one request of {@code POST /api/ingest} means for its events.
 * Only an outage is retried; an event the collector refuses as invalid is never sent again,
 * whatever the status it was refused with, so that it cannot hold back the events behind it.
 *
 * @param fate     what the sender does with the request's events
 * @param rejected of a taken request, how many of its events were rejected (the rest delivered)
 * @param waitMs   of an outage, how long the collector asked to be left alone (Retry-After)
 * @param reason   why events were rejected or will be sent again, else null
 */
record CollectorAnswer(Fate fate, int rejected, long waitMs, String reason) {
    /** Messages are cut to this length in the log and in lastRejection. */
    private static final int MAX_MESSAGE_CHARS = 500;
    /**
     * Answers that mean the collector cannot take events now, not that these events are bad: a
     * refused token (it may be being rotated), a timeout, too many requests, a proxy that cannot
     * reach the collector, the collector's store unavailable.
     */
    private static final Set<Integer> OUTAGE = Set.of(401, 403, 408, 429, 502, 503, 504);
    private static final ObjectMapper JSON = new ObjectMapper();

    /** What to do with the events of a request once it is answered. */
    enum Fate {
        /** Answered for: {@code rejected} of the events are rejected, the rest delivered. */
        TAKEN,
        /** Too large: the same events go again, in smaller requests. */
        SMALLER,
        /** An outage: the same events go again after a backoff of at least {@code waitMs}. */
        RETRY
    }

    /**
     * The answer with {@code status}, {@code body} and {@code retryAfter} (the header, or null)
     * to a request of {@code events} events. 2xx: taken, less the events its body counts as
     * "rejected" (set aside by the collector; none if absent). An outage: retried. 413: too
     * large. Anything else (400, 422, 500, ...): every event rejected.
     */
    static CollectorAnswer of(int status, String body, String retryAfter, int events) {
        if (status >= 200 && status < 300) {
            long said = parse(body).path("rejected").asLong(0);
            int rejected = (int) Math.max(0, Math.min(said, events));
            return new CollectorAnswer(Fate.TAKEN, rejected, 0, rejected > 0 ? reason(body) : null);
        }
        if (status == 401 || status == 403) {
            return new CollectorAnswer(Fate.RETRY, 0, retryAfterMs(retryAfter),
                    "refused the token (" + status + ": " + reason(body)
                            + "): check spark.wmon.token");
        }
        if (OUTAGE.contains(status)) {
            return new CollectorAnswer(Fate.RETRY, 0, retryAfterMs(retryAfter),
                    "answered " + status + " (" + reason(body) + ")");
        }
        if (status == 413) {
            return tooLarge(events, "answered 413 (" + reason(body) + ")");
        }
        return new CollectorAnswer(Fate.TAKEN, events, 0,
                "answered " + status + " (" + reason(body) + ")");
    }

    /** The collector could not be reached or did not answer in time. */
    static CollectorAnswer unreachable(String reason) {
        return new CollectorAnswer(Fate.RETRY, 0, 0, reason);
    }

    /** Several events go again in smaller requests; a single one could never be sent. */
    static CollectorAnswer tooLarge(int events, String reason) {
        if (events > 1) {
            return new CollectorAnswer(Fate.SMALLER, 0, 0, reason);
        }
        return new CollectorAnswer(Fate.TAKEN, 1, 0, "event too large: " + reason);
    }

    /** The seconds of a Retry-After header, in ms; 0 without one (an HTTP date is not read). */
    private static long retryAfterMs(String header) {
        try {
            long seconds = header == null ? 0 : Long.parseLong(header.strip());
            return Math.max(0, Math.min(seconds, Long.MAX_VALUE / 1000)) * 1000;
        } catch (NumberFormatException e) {
            return 0;
        }
    }

    /**
     * The collector's message, cut: its first error, with the index of the event in the
     * request; else its "error"; else the body as it is.
     */
    private static String reason(String body) {
        JsonNode answer = parse(body);
        JsonNode first = answer.path("errors").path(0);
        String reason = body;
        if (first.hasNonNull("error")) {
            reason = "event " + first.path("event").asText("?") + ": " + first.get("error").asText();
        } else if (answer.hasNonNull("error")) {
            reason = answer.get("error").asText();
        }
        return reason.length() > MAX_MESSAGE_CHARS
                ? reason.substring(0, MAX_MESSAGE_CHARS) + "..." : reason;
    }

    /** The body as JSON, or a missing node when it is not JSON. */
    private static JsonNode parse(String body) {
        try {
            return JSON.readTree(body);
        } catch (JsonProcessingException e) {
            return MissingNode.getInstance();
        }
    }
}
