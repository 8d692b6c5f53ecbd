package wmon.spark.operator;

import java.io.IOException;
import java.io.UncheckedIOException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;

/**
 * The few rows the packed paths cannot take whole, as JSON made by Spark's {@code to_json} (null
 * for every other row, which costs nothing): late rows, for their samples (key, offset), and
 * rows whose partition or time does not fit the packed long, which are counted here.
 * Fields: {@code c} partition number or {@code p} name, {@code n} counted here, {@code t} event
 * time in microseconds, {@code l} late, {@code o} offset, {@code k} key.
 */
final class LateRows extends FiguresAggregator<String> {
    private static final long serialVersionUID = 1L;
    private static final ObjectMapper JSON = new ObjectMapper();

    LateRows(
            String checkpoint, long delayMs, int samplesPerPartition, long windowMs) {
        super(checkpoint, delayMs, samplesPerPartition, windowMs);
    }

    @Override
    public Figures reduce(Figures figures, String row) {
        if (row == null) {
            return figures;
        }
        JsonNode fields;
        try {
            fields = JSON.readTree(row);
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        int slot = fields.has("c")
                ? figures.slotOfCode(fields.get("c").asLong())
                : figures.slotOfName(fields.has("p") ? fields.get("p").asText() : "null");
        // Truncated to the millisecond, as the Python operator's figures are.
        long ms = fields.get("t").asLong() / 1000;
        boolean late = fields.get("l").asBoolean();
        if (fields.get("n").asBoolean()) {
            figures.add(slot, ms, late);
        }
        if (late) {
            JsonNode key = fields.get("k");
            JsonNode offset = fields.get("o");
            figures.offerSample(slot, key == null ? null : key.asText(), ms,
                    offset != null, offset == null ? 0 : offset.asLong());
        }
        return figures;
    }
}
