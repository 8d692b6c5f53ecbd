package wmon.spark.operator;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Arrays;
import com.fasterxml.jackson.core.JsonGenerator;

/**
 * Per partition slot, at most {@code perSlot} records as {@code [key, ms, offset]}: those with
 * the smallest (offset, event time, key), a missing offset or key first, so that which ones are
 * kept does not depend on the order Spark runs and merges tasks in. Flat arrays, slot by slot.
 */
final class Samples {
    private final int perSlot;
    private int[] counts = new int[0];
    private long[] ms = new long[0];
    private long[] offsets = new long[0];
    private boolean[] hasOffset = new boolean[0];
    private String[] keys = new String[0];

    Samples(int perSlot) {
        this.perSlot = perSlot;
    }

    /** Room for {@code slots} slots. */
    void grow(int slots) {
        counts = Arrays.copyOf(counts, slots);
        int capacity = slots * perSlot;
        ms = Arrays.copyOf(ms, capacity);
        offsets = Arrays.copyOf(offsets, capacity);
        hasOffset = Arrays.copyOf(hasOffset, capacity);
        keys = Arrays.copyOf(keys, capacity);
    }

    /** Keep a record if it is among the slot's smallest. */
    void offer(int slot, String key, long recordMs, boolean recordHasOffset, long offset) {
        int first = slot * perSlot;
        int count = counts[slot];
        int at = count;
        while (at > 0 && compare(recordHasOffset, offset, recordMs, key, first + at - 1) < 0) {
            at--;
        }
        if (at >= perSlot) {
            return;
        }
        int moved = Math.min(count, perSlot - 1) - at;
        System.arraycopy(ms, first + at, ms, first + at + 1, moved);
        System.arraycopy(offsets, first + at, offsets, first + at + 1, moved);
        System.arraycopy(hasOffset, first + at, hasOffset, first + at + 1, moved);
        System.arraycopy(keys, first + at, keys, first + at + 1, moved);
        ms[first + at] = recordMs;
        offsets[first + at] = offset;
        hasOffset[first + at] = recordHasOffset;
        keys[first + at] = key;
        counts[slot] = Math.min(count + 1, perSlot);
    }

    /** In sample order: offset, event time, key; a missing offset or key first. */
    private int compare(boolean recordHasOffset, long offset, long recordMs, String key, int other) {
        int order = Boolean.compare(recordHasOffset, hasOffset[other]);
        if (order == 0 && recordHasOffset) {
            order = Long.compare(offset, offsets[other]);
        }
        if (order == 0) {
            order = Long.compare(recordMs, ms[other]);
        }
        return order != 0 ? order : compareKeys(key, keys[other]);
    }

    /** Keys by code point, as Python compares text; null first. */
    static int compareKeys(String a, String b) {
        if (a == null || b == null) {
            return Boolean.compare(a != null, b != null);
        }
        return Arrays.compare(a.codePoints().toArray(), b.codePoints().toArray());
    }

    /** Offer slot {@code from}'s samples of {@code other} (another task's) to {@code slot}. */
    void merge(int slot, Samples other, int from) {
        int first = from * other.perSlot;
        for (int i = first; i < first + other.counts[from]; i++) {
            offer(slot, other.keys[i], other.ms[i], other.hasOffset[i], other.offsets[i]);
        }
    }

    /** The slot's samples as bytes; {@link #read} takes them back. */
    void write(DataOutputStream out, int slot) throws IOException {
        out.writeInt(counts[slot]);
        int first = slot * perSlot;
        for (int i = first; i < first + counts[slot]; i++) {
            out.writeLong(ms[i]);
            out.writeBoolean(hasOffset[i]);
            out.writeLong(offsets[i]);
            Encoding.writeText(out, keys[i]);
        }
    }

    /** The slot's samples from what {@link #write} wrote. */
    void read(DataInputStream in, int slot) throws IOException {
        counts[slot] = in.readInt();
        int first = slot * perSlot;
        for (int i = first; i < first + counts[slot]; i++) {
            ms[i] = in.readLong();
            hasOffset[i] = in.readBoolean();
            offsets[i] = in.readLong();
            keys[i] = Encoding.readText(in);
        }
    }

    /** The slot's samples as a JSON array of {@code [key, ms, offset]}. */
    void writeJson(JsonGenerator json, int slot) throws IOException {
        json.writeStartArray();
        int first = slot * perSlot;
        for (int i = first; i < first + counts[slot]; i++) {
            Encoding.writeRecord(json, keys[i], ms[i], hasOffset[i], offsets[i]);
        }
        json.writeEndArray();
    }
}
