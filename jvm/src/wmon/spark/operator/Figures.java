package wmon.spark.operator;

import java.io.ByteArrayInputStream;
import java.io.ByteArrayOutputStream;
import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.io.StringWriter;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import com.fasterxml.jackson.core.JsonFactory;
import com.fasterxml.jackson.core.JsonGenerator;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The aggregation buffer: per partition, records, min/max event time, late records and the
 * late samples with the smallest (offset, event time, key). Partitions live in slots of flat
 * arrays, found by a number (an integral partition, the Spark input split) through an
 * open-addressing table, or by a name; adding a row allocates nothing. Serialized once per
 * task ({@link #toBytes}); the look-up tables are rebuilt after that.
 */
public final class Figures {
    private static final JsonFactory JSON = new JsonFactory();
    /** No batch known: a buffer no task has written, such as the driver's empty one. */
    static final long NO_BATCH = -1;

    private long batch = NO_BATCH;
    private boolean hasLateWatermark;
    private long lateWatermarkMs;
    private int samplesPerPartition;
    private int size;
    /** The slot's partition number, or -1 when it is known by name. */
    private long[] codes = new long[0];
    private String[] names = new String[0];
    private long[] records = new long[0];
    private long[] minMs = new long[0];
    private long[] maxMs = new long[0];
    private long[] late = new long[0];
    private int[] sampleCounts = new int[0];
    private long[] sampleMs = new long[0];
    private long[] sampleOffsets = new long[0];
    private boolean[] sampleHasOffset = new boolean[0];
    private String[] sampleKeys = new String[0];

    /** The Spark input split of the task that writes this buffer. */
    private transient int inputSplit;
    private transient int[] codeTable;
    private transient Map<String, Integer> nameSlots;
    private transient long lastCode;
    private transient int lastSlot;
    private transient String lastName;
    private transient int lastNameSlot;
    private transient UTF8String lastTopic;
    private transient UTF8String lastText;
    private transient long lastNumber;
    private transient int lastPartsSlot = -1;

    Figures(int samplesPerPartition) {
        this.samplesPerPartition = samplesPerPartition;
    }

    /**
     * A buffer for a task of the running batch, with the watermark its late rows are dropped at
     * and the task's input split.
     */
    static Figures forTask(int samplesPerPartition, LateWatermarks.Batch current, int inputSplit) {
        Figures figures = new Figures(samplesPerPartition);
        figures.batch = current.id();
        if (current.watermarkMs() != null) {
            figures.hasLateWatermark = true;
            figures.lateWatermarkMs = current.watermarkMs();
        }
        figures.inputSplit = inputSplit;
        return figures;
    }

    /** The Spark input split of the task that writes this buffer. */
    int inputSplit() {
        return inputSplit;
    }

    /** The late watermark of the buffer's batch, or the smallest long when it has none. */
    long lateThresholdMs() {
        return hasLateWatermark ? lateWatermarkMs : Long.MIN_VALUE;
    }

    /** The slot of partition number {@code code} (not negative), made on first sight. */
    int slotOfCode(long code) {
        if (codeTable == null) {
            reindex();
        }
        if (code == lastCode) {
            return lastSlot;
        }
        int mask = codeTable.length - 1;
        int at = (int) ((code * 0x9E3779B97F4A7C15L) >>> 40) & mask;
        while (codeTable[at] != 0 && codes[codeTable[at] - 1] != code) {
            at = (at + 1) & mask;
        }
        int slot = codeTable[at] - 1;
        if (slot < 0) {
            slot = newSlot(code, null);
            codeTable[at] = slot + 1;
            if (2 * size > codeTable.length) {
                reindex();
            }
        }
        lastCode = code;
        lastSlot = slot;
        return slot;
    }

    /** The slot of the partition called {@code name}, made on first sight. */
    int slotOfName(String name) {
        if (nameSlots == null) {
            reindex();
        }
        if (name.equals(lastName)) {
            return lastNameSlot;
        }
        Integer known = nameSlots.get(name);
        int slot;
        if (known != null) {
            slot = known;
        } else {
            slot = newSlot(-1, name);
            nameSlots.put(name, slot);
        }
        lastName = name;
        lastNameSlot = slot;
        return slot;
    }

    /**
     * The slot of the partition a row names by {@code topic/partition}, or by {@code partition}
     * when {@code topic} is null; the partition is {@code text}, or else {@code number} unless
     * that is {@link RowField#NULL}. The name is made only when the parts are not the last
     * row's: the rows of a task mostly come from one partition.
     */
    int slotOfParts(UTF8String topic, UTF8String text, long number) {
        if (lastPartsSlot >= 0 && number == lastNumber && Objects.equals(text, lastText)
                && Objects.equals(topic, lastTopic)) {
            return lastPartsSlot;
        }
        String partition = text != null ? text.toString()
                : number != RowField.NULL ? Long.toString(number) : null;
        String name = partition == null ? "null"
                : topic == null ? partition : topic + "/" + partition;
        lastTopic = topic == null ? null : topic.clone();
        lastText = text == null ? null : text.clone();
        lastNumber = number;
        lastPartsSlot = slotOfName(name);
        return lastPartsSlot;
    }

    /** Count one record of the slot's partition, at {@code ms}, late or not. */
    void add(int slot, long ms, boolean isLate) {
        records[slot]++;
        if (ms < minMs[slot]) {
            minMs[slot] = ms;
        }
        if (ms > maxMs[slot]) {
            maxMs[slot] = ms;
        }
        if (isLate) {
            late[slot]++;
        }
    }

    /** Keep a late record as a sample if it is among the slot's smallest. */
    void offerSample(int slot, String key, long ms, boolean hasOffset, long offset) {
        int first = slot * samplesPerPartition;
        int count = sampleCounts[slot];
        int at = count;
        while (at > 0 && compare(hasOffset, offset, ms, key, first + at - 1) < 0) {
            at--;
        }
        if (at >= samplesPerPartition) {
            return;
        }
        int moved = Math.min(count, samplesPerPartition - 1) - at;
        System.arraycopy(sampleMs, first + at, sampleMs, first + at + 1, moved);
        System.arraycopy(sampleOffsets, first + at, sampleOffsets, first + at + 1, moved);
        System.arraycopy(sampleHasOffset, first + at, sampleHasOffset, first + at + 1, moved);
        System.arraycopy(sampleKeys, first + at, sampleKeys, first + at + 1, moved);
        sampleMs[first + at] = ms;
        sampleOffsets[first + at] = offset;
        sampleHasOffset[first + at] = hasOffset;
        sampleKeys[first + at] = key;
        sampleCounts[slot] = Math.min(count + 1, samplesPerPartition);
    }

    /** Samples in order of offset, event time, key; a missing offset or key comes first. */
    private int compare(boolean hasOffset, long offset, long ms, String key, int other) {
        int order = Boolean.compare(hasOffset, sampleHasOffset[other]);
        if (order == 0 && hasOffset) {
            order = Long.compare(offset, sampleOffsets[other]);
        }
        if (order == 0) {
            order = Long.compare(ms, sampleMs[other]);
        }
        return order != 0 ? order : compareKeys(key, sampleKeys[other]);
    }

    /** By code point, as Python compares text; null first. */
    static int compareKeys(String a, String b) {
        if (a == null || b == null) {
            return Boolean.compare(a != null, b != null);
        }
        return Arrays.compare(a.codePoints().toArray(), b.codePoints().toArray());
    }

    /** Fold another buffer (another task's) into this one. */
    Figures merge(Figures other) {
        if (batch == NO_BATCH) {
            batch = other.batch;
            hasLateWatermark = other.hasLateWatermark;
            lateWatermarkMs = other.lateWatermarkMs;
        }
        for (int from = 0; from < other.size; from++) {
            int slot = other.codes[from] >= 0
                    ? slotOfCode(other.codes[from])
                    : slotOfName(other.names[from]);
            records[slot] += other.records[from];
            late[slot] += other.late[from];
            minMs[slot] = Math.min(minMs[slot], other.minMs[from]);
            maxMs[slot] = Math.max(maxMs[slot], other.maxMs[from]);
            int first = from * other.samplesPerPartition;
            for (int i = first; i < first + other.sampleCounts[from]; i++) {
                offerSample(slot, other.sampleKeys[i], other.sampleMs[i],
                        other.sampleHasOffset[i], other.sampleOffsets[i]);
            }
        }
        return this;
    }

    /** The buffer as bytes, to leave its task; {@link #fromBytes} makes it again. */
    byte[] toBytes() {
        ByteArrayOutputStream bytes = new ByteArrayOutputStream(64 + 48 * size);
        try (DataOutputStream out = new DataOutputStream(bytes)) {
            out.writeLong(batch);
            out.writeBoolean(hasLateWatermark);
            out.writeLong(lateWatermarkMs);
            out.writeInt(samplesPerPartition);
            out.writeInt(size);
            for (int slot = 0; slot < size; slot++) {
                out.writeLong(codes[slot]);
                writeText(out, names[slot]);
                out.writeLong(records[slot]);
                out.writeLong(minMs[slot]);
                out.writeLong(maxMs[slot]);
                out.writeLong(late[slot]);
                out.writeInt(sampleCounts[slot]);
                int first = slot * samplesPerPartition;
                for (int i = first; i < first + sampleCounts[slot]; i++) {
                    out.writeLong(sampleMs[i]);
                    out.writeBoolean(sampleHasOffset[i]);
                    out.writeLong(sampleOffsets[i]);
                    writeText(out, sampleKeys[i]);
                }
            }
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
        return bytes.toByteArray();
    }

    /** A buffer made again from {@link #toBytes}. */
    static Figures fromBytes(byte[] bytes) {
        try (DataInputStream in = new DataInputStream(new ByteArrayInputStream(bytes))) {
            Figures figures = new Figures(0);
            figures.batch = in.readLong();
            figures.hasLateWatermark = in.readBoolean();
            figures.lateWatermarkMs = in.readLong();
            figures.samplesPerPartition = in.readInt();
            int size = in.readInt();
            figures.grow(size);
            figures.size = size;
            for (int slot = 0; slot < size; slot++) {
                figures.codes[slot] = in.readLong();
                figures.names[slot] = readText(in);
                figures.records[slot] = in.readLong();
                figures.minMs[slot] = in.readLong();
                figures.maxMs[slot] = in.readLong();
                figures.late[slot] = in.readLong();
                figures.sampleCounts[slot] = in.readInt();
                int first = slot * figures.samplesPerPartition;
                for (int i = first; i < first + figures.sampleCounts[slot]; i++) {
                    figures.sampleMs[i] = in.readLong();
                    figures.sampleHasOffset[i] = in.readBoolean();
                    figures.sampleOffsets[i] = in.readLong();
                    figures.sampleKeys[i] = readText(in);
                }
            }
            return figures;
        } catch (IOException e) {
            throw new UncheckedIOException(e);
        }
    }

    /** Text of any length as its UTF-8 bytes after their count, -1 for null. */
    private static void writeText(DataOutputStream out, String text) throws IOException {
        if (text == null) {
            out.writeInt(-1);
            return;
        }
        byte[] utf8 = text.getBytes(StandardCharsets.UTF_8);
        out.writeInt(utf8.length);
        out.write(utf8);
    }

    private static String readText(DataInputStream in) throws IOException {
        int length = in.readInt();
        if (length < 0) {
            return null;
        }
        byte[] utf8 = new byte[length];
        in.readFully(utf8);
        return new String(utf8, StandardCharsets.UTF_8);
    }

    /** The figures as one task's JSON for the listener; null when no task wrote any. */
    String toJson(long delayMs) {
        if (batch == NO_BATCH) {
            return null;
        }
        StringWriter text = new StringWriter();
        try (JsonGenerator json = JSON.createGenerator(text)) {
            json.writeStartObject();
            json.writeNumberField("batch", batch);
            json.writeNumberField("delay_ms", delayMs);
            json.writeFieldName("late_watermark_ms");
            if (hasLateWatermark) {
                json.writeNumber(lateWatermarkMs);
            } else {
                json.writeNull();
            }
            json.writeObjectFieldStart("partitions");
            for (int slot = 0; slot < size; slot++) {
                json.writeObjectFieldStart(codes[slot] >= 0 ? Long.toString(codes[slot]) : names[slot]);
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
        json.writeNumberField("records", records[slot]);
        json.writeFieldName("min_ms");
        writeTime(json, records[slot] > 0, minMs[slot]);
        json.writeFieldName("max_ms");
        writeTime(json, records[slot] > 0, maxMs[slot]);
        json.writeNumberField("late", late[slot]);
        json.writeArrayFieldStart("samples");
        int first = slot * samplesPerPartition;
        for (int i = first; i < first + sampleCounts[slot]; i++) {
            json.writeStartArray();
            json.writeString(sampleKeys[i]);
            json.writeNumber(sampleMs[i]);
            writeTime(json, sampleHasOffset[i], sampleOffsets[i]);
            json.writeEndArray();
        }
        json.writeEndArray();
    }

    private static void writeTime(JsonGenerator json, boolean known, long value) throws IOException {
        if (known) {
            json.writeNumber(value);
        } else {
            json.writeNull();
        }
    }

    private int newSlot(long code, String name) {
        if (size == records.length) {
            grow(Math.max(16, 2 * size));
        }
        int slot = size++;
        codes[slot] = code;
        names[slot] = name;
        minMs[slot] = Long.MAX_VALUE;
        maxMs[slot] = Long.MIN_VALUE;
        return slot;
    }

    private void grow(int capacity) {
        codes = Arrays.copyOf(codes, capacity);
        names = Arrays.copyOf(names, capacity);
        records = Arrays.copyOf(records, capacity);
        minMs = Arrays.copyOf(minMs, capacity);
        maxMs = Arrays.copyOf(maxMs, capacity);
        late = Arrays.copyOf(late, capacity);
        sampleCounts = Arrays.copyOf(sampleCounts, capacity);
        int samples = capacity * samplesPerPartition;
        sampleMs = Arrays.copyOf(sampleMs, samples);
        sampleOffsets = Arrays.copyOf(sampleOffsets, samples);
        sampleHasOffset = Arrays.copyOf(sampleHasOffset, samples);
        sampleKeys = Arrays.copyOf(sampleKeys, samples);
    }

    /** (Re)build the look-up tables: after Kryo made this buffer, or when the table fills up. */
    private void reindex() {
        codeTable = new int[Integer.highestOneBit(Math.max(16, 4 * size))];
        nameSlots = new HashMap<>();
        lastCode = -1;
        lastName = null;
        int mask = codeTable.length - 1;
        for (int slot = 0; slot < size; slot++) {
            if (codes[slot] < 0) {
                nameSlots.put(names[slot], slot);
                continue;
            }
            int at = (int) ((codes[slot] * 0x9E3779B97F4A7C15L) >>> 40) & mask;
            while (codeTable[at] != 0) {
                at = (at + 1) & mask;
            }
            codeTable[at] = slot + 1;
        }
    }
}
