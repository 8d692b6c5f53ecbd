package wmon.spark.operator;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.util.Arrays;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import org.apache.spark.sql.catalyst.InternalRow;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The aggregation buffer: per partition, records, min/max event time and the record at the max
 * ({@link MaxRecords}), late records, late and future-dated samples ({@link Samples}),
 * future-dated records and their largest lead over the batch time, and histograms of how far
 * late and on-time rows are from the late watermark ({@link Buckets}; none from Spark's 1970
 * placeholder, {@link #NO_WATERMARK_MS}). Each partition has a slot ({@link Slots}) in flat
 * arrays; adding a row allocates nothing. Serialized once per task
 * ({@link #toBytes}).
 */
public final class Figures {
    private static final JsonFactory JSON = new JsonFactory();
    /** No batch known: a buffer no task has written, such as the driver's empty one. */
    static final long NO_BATCH = -1;
    /**
     * The watermark Spark writes for a batch before it has one (1970). Rows at or below it are
     * late, but their distance from 1970 says nothing: the histograms leave them out.
     */
    static final long NO_WATERMARK_MS = 0;

    private long batch = NO_BATCH;
    private boolean hasLateWatermark;
    private long lateWatermarkMs;
    private boolean hasBatchTime;
    private long batchTimeMs;
    private final int samplesPerPartition;
    private final Slots slots = new Slots();
    private long[] records = new long[0];
    private long[] minMs = new long[0];
    private long[] late = new long[0];
    private long[] future = new long[0];
    private long[] futureLeadMs = new long[0];
    private final MaxRecords maxRecords = new MaxRecords();
    private final Samples lateSamples;
    private final Samples futureSamples;
    /** By how far late rows are behind the late watermark, and on-time rows ahead of it. */
    private final Buckets lateBuckets = new Buckets();
    private final Buckets slackBuckets = new Buckets();

    /** The Spark input split of the task that writes this buffer. */
    private transient int inputSplit;
    /** A row further ahead of the batch time than this is future-dated. */
    private transient long futureToleranceMs;

    Figures(int samplesPerPartition) {
        this.samplesPerPartition = samplesPerPartition;
        lateSamples = new Samples(samplesPerPartition);
        futureSamples = new Samples(samplesPerPartition);
    }

    /**
     * A buffer for a task of the running batch, with the watermark its late rows are dropped at,
     * its batch time, the tolerance future-dated rows exceed and the task's input split.
     */
    static Figures forTask(
            int samplesPerPartition, LateWatermarks.Batch current, long futureToleranceMs,
            int inputSplit) {
        Figures figures = new Figures(samplesPerPartition);
        figures.batch = current.id();
        if (current.watermarkMs() != null) {
            figures.hasLateWatermark = true;
            figures.lateWatermarkMs = current.watermarkMs();
        }
        if (current.timeMs() != null) {
            figures.hasBatchTime = true;
            figures.batchTimeMs = current.timeMs();
        }
        figures.futureToleranceMs = futureToleranceMs;
        figures.inputSplit = inputSplit;
        return figures;
    }

    /** The Spark input split of the task that writes this buffer. */
    int inputSplit() {
        return inputSplit;
    }

    /** Whether a row Spark compares with the watermark at {@code comparedMs} is late. */
    boolean isLate(long comparedMs) {
        return hasLateWatermark && comparedMs <= lateWatermarkMs;
    }

    /** Whether a row at {@code ms} is further ahead of the batch time than the tolerance. */
    boolean isFuture(long ms) {
        return hasBatchTime && ms - batchTimeMs > futureToleranceMs;
    }

    /** The slot of partition number {@code code} (not negative), made on first sight. */
    int slotOfCode(long code) {
        return room(slots.ofCode(code));
    }

    /** The slot of the partition called {@code name}, made on first sight. */
    int slotOfName(String name) {
        return room(slots.ofName(name));
    }

    /** The slot of the partition a row names by its parts ({@link Slots#ofParts}). */
    int slotOfParts(UTF8String topic, UTF8String text, long number) {
        return room(slots.ofParts(topic, text, number));
    }

    /**
     * Count one record of the slot's partition at {@code ms}, compared with the late watermark
     * at {@code comparedMs}; {@code isLate} and {@code isFuture} as this buffer answered them.
     */
    void add(int slot, long ms, long comparedMs, boolean isLate, boolean isFuture) {
        records[slot]++;
        if (ms < minMs[slot]) {
            minMs[slot] = ms;
        }
        boolean measured = hasLateWatermark && lateWatermarkMs != NO_WATERMARK_MS;
        if (isLate) {
            late[slot]++;
            if (measured) {
                lateBuckets.add(slot, lateWatermarkMs - comparedMs);
            }
        } else if (measured) {
            slackBuckets.add(slot, comparedMs - lateWatermarkMs);
        }
        if (isFuture) {
            future[slot]++;
            futureLeadMs[slot] = Math.max(futureLeadMs[slot], ms - batchTimeMs);
        }
    }

    /** The slot's largest event time, the smallest long while it has no record. */
    long maxMs(int slot) {
        return maxRecords.ms(slot);
    }

    /** Keep a row at or above the slot's largest event time if it is the new max. */
    void offerMax(int slot, long ms, RowField key, InternalRow row, boolean hasOffset, long offset) {
        maxRecords.offer(slot, ms, key, row, hasOffset, offset);
    }

    /** Keep a late record as a sample if it is among the slot's smallest. */
    void offerLate(int slot, String key, long ms, boolean hasOffset, long offset) {
        lateSamples.offer(slot, key, ms, hasOffset, offset);
    }

    /** Keep a future-dated record as a sample if it is among the slot's smallest. */
    void offerFuture(int slot, String key, long ms, boolean hasOffset, long offset) {
        futureSamples.offer(slot, key, ms, hasOffset, offset);
    }

    /** Fold another buffer (another task's) into this one. */
    Figures merge(Figures other) {
        if (batch == NO_BATCH) {
            batch = other.batch;
            hasLateWatermark = other.hasLateWatermark;
            lateWatermarkMs = other.lateWatermarkMs;
            hasBatchTime = other.hasBatchTime;
            batchTimeMs = other.batchTimeMs;
        }
        for (int from = 0; from < other.slots.size(); from++) {
            int slot = room(slots.of(other.slots, from));
            records[slot] += other.records[from];
            late[slot] += other.late[from];
            future[slot] += other.future[from];
            minMs[slot] = Math.min(minMs[slot], other.minMs[from]);
            futureLeadMs[slot] = Math.max(futureLeadMs[slot], other.futureLeadMs[from]);
            maxRecords.merge(slot, other.maxRecords, from);
            lateSamples.merge(slot, other.lateSamples, from);
            futureSamples.merge(slot, other.futureSamples, from);
            lateBuckets.merge(slot, other.lateBuckets, from);
            slackBuckets.merge(slot, other.slackBuckets, from);
        }
        return this;
    }

    /** The buffer as bytes, to leave its task; {@link #fromBytes} makes it again. */
    byte[] toBytes() {
        int size = slots.size();
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + 96 * size);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeInt(samplesPerPartition);
            out.writeLong(batch);
            out.writeBoolean(hasLateWatermark);
            out.writeLong(lateWatermarkMs);
            out.writeBoolean(hasBatchTime);
            out.writeLong(batchTimeMs);
            out.writeInt(size);
            for (int slot = 0; slot < size; slot++) {
                slots.write(out, slot);
                out.writeLong(records[slot]);
                out.writeLong(minMs[slot]);
                out.writeLong(late[slot]);
                out.writeLong(future[slot]);
                out.writeLong(futureLeadMs[slot]);
                maxRecords.write(out, slot);
                lateSamples.write(out, slot);
                futureSamples.write(out, slot);
                lateBuckets.write(out, slot);
                slackBuckets.write(out, slot);
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /** A buffer made again from {@link #toBytes}. */
    static Figures fromBytes(byte[] bytes) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
            Figures figures = new Figures(in.readInt());
            figures.batch = in.readLong();
            figures.hasLateWatermark = in.readBoolean();
            figures.lateWatermarkMs = in.readLong();
            figures.hasBatchTime = in.readBoolean();
            figures.batchTimeMs = in.readLong();
            int size = in.readInt();
            figures.grow(size);
            for (int slot = 0; slot < size; slot++) {
                figures.slots.read(in);
                figures.records[slot] = in.readLong();
                figures.minMs[slot] = in.readLong();
                figures.late[slot] = in.readLong();
                figures.future[slot] = in.readLong();
                figures.futureLeadMs[slot] = in.readLong();
                figures.maxRecords.read(in, slot);
                figures.lateSamples.read(in, slot);
                figures.futureSamples.read(in, slot);
                figures.lateBuckets.read(in, slot);
                figures.slackBuckets.read(in, slot);
            }
            return figures;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** The figures as one task's JSON for the listener; null when no task wrote any. */
    String toJson(long delayMs, long futureToleranceMs) {
        if (batch == NO_BATCH) {
            return null;
        }
        StringWriter text = new StringWriter();
        try (JsonGenerator json = JSON.createGenerator(text)) {
            json.writeStartObject();
            json.writeNumberField("batch", batch);
            json.writeNumberField("delay_ms", delayMs);
            json.writeNumberField("future_tolerance_ms", futureToleranceMs);
            json.writeFieldName("late_watermark_ms");
            Encoding.writeNumber(json, hasLateWatermark, lateWatermarkMs);
            json.writeFieldName("batch_time_ms");
            Encoding.writeNumber(json, hasBatchTime, batchTimeMs);
            json.writeObjectFieldStart("partitions");
            for (int slot = 0; slot < slots.size(); slot++) {
                json.writeObjectFieldStart(slots.name(slot));
                writePartition(json, slot);
                json.writeEndObject();
            }
            json.writeEndObject();
            json.writeEndObject();
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return text.toString();
    }

    private void writePartition(JsonGenerator json, int slot) throws IOException {
        boolean counted = records[slot] > 0;
        json.writeNumberField("records", records[slot]);
        json.writeFieldName("min_ms");
        Encoding.writeNumber(json, counted, minMs[slot]);
        json.writeFieldName("max_ms");
        Encoding.writeNumber(json, counted, maxRecords.ms(slot));
        json.writeFieldName("max_record");
        if (counted) {
            maxRecords.writeJson(json, slot);
        } else {
            json.writeNull();
        }
        json.writeNumberField("late", late[slot]);
        json.writeFieldName("samples");
        lateSamples.writeJson(json, slot);
        json.writeNumberField("future", future[slot]);
        json.writeFieldName("future_lead_ms");
        Encoding.writeNumber(json, future[slot] > 0, futureLeadMs[slot]);
        json.writeFieldName("future_samples");
        futureSamples.writeJson(json, slot);
        json.writeFieldName("late_buckets");
        lateBuckets.writeJson(json, slot);
        json.writeFieldName("slack_buckets");
        slackBuckets.writeJson(json, slot);
    }

    /** The slot, with room for its figures: a new slot is the next after the known ones. */
    private int room(int slot) {
        if (slot == records.length) {
            grow(Math.max(16, 2 * slot));
        }
        return slot;
    }

    /** Room for {@code capacity} slots; a new one has no figures yet. */
    private void grow(int capacity) {
        int known = records.length;
        records = Arrays.copyOf(records, capacity);
        minMs = Arrays.copyOf(minMs, capacity);
        Arrays.fill(minMs, known, capacity, Long.MAX_VALUE);
        late = Arrays.copyOf(late, capacity);
        future = Arrays.copyOf(future, capacity);
        futureLeadMs = Arrays.copyOf(futureLeadMs, capacity);
        Arrays.fill(futureLeadMs, known, capacity, Long.MIN_VALUE);
        maxRecords.grow(capacity);
        lateSamples.grow(capacity);
        futureSamples.grow(capacity);
        lateBuckets.grow(capacity);
        slackBuckets.grow(capacity);
    }
}
