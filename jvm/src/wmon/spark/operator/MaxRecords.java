package wmon.spark.operator;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import com.fasterxml.jackson.core.JsonGenerator;
import org.apache.spark.unsafe.Platform;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * Per partition slot, the record with the largest event time (ms), and among those the smallest
 * in sample order (offset, then key: the event times are equal). In a stream of rising event
 * times nearly every row is a new max, so its key is kept as UTF-8 bytes copied into a buffer
 * the slot reuses: no String a row.
 */
final class MaxRecords {
    private long[] ms = new long[0];
    private long[] offsets = new long[0];
    private boolean[] hasOffset = new boolean[0];
    /** The key's UTF-8 bytes, the first {@code keyLengths[slot]} of the slot's buffer. */
    private byte[][] keys = new byte[0][];
    /** -1: no key. */
    private int[] keyLengths = new int[0];

    /** Room for {@code slots} slots; a new one has no record yet. */
    void grow(int slots) {
        int known = ms.length;
        ms = Arrays.copyOf(ms, slots);
        Arrays.fill(ms, known, slots, Long.MIN_VALUE);
        offsets = Arrays.copyOf(offsets, slots);
        hasOffset = Arrays.copyOf(hasOffset, slots);
        keys = Arrays.copyOf(keys, slots);
        keyLengths = Arrays.copyOf(keyLengths, slots);
    }

    /** The slot's largest event time, the smallest long while it has no record. */
    long ms(int slot) {
        return ms[slot];
    }

    /** Keep a record at or above the slot's largest event time if it is the new max. */
    void offer(int slot, long recordMs, UTF8String key, boolean recordHasOffset, long offset) {
        if (recordMs == ms[slot] && !precedes(slot, key, recordHasOffset, offset)) {
            return;
        }
        ms[slot] = recordMs;
        hasOffset[slot] = recordHasOffset;
        offsets[slot] = offset;
        if (key == null) {
            keyLengths[slot] = -1;
            return;
        }
        int length = key.numBytes();
        if (keys[slot] == null || keys[slot].length < length) {
            keys[slot] = new byte[Math.max(2 * length, 16)];
        }
        // Byte by byte: for a key's few bytes, UTF8String.writeToMemory (Unsafe.copyMemory)
        // measured slower than all the rest of a row's figures together.
        byte[] buffer = keys[slot];
        Object base = key.getBaseObject();
        long from = key.getBaseOffset();
        for (int i = 0; i < length; i++) {
            buffer[i] = Platform.getByte(base, from + i);
        }
        keyLengths[slot] = length;
    }

    /** Whether a record at the slot's event time comes before the slot's in sample order. */
    private boolean precedes(int slot, UTF8String key, boolean recordHasOffset, long offset) {
        int order = Boolean.compare(recordHasOffset, hasOffset[slot]);
        if (order == 0 && recordHasOffset) {
            order = Long.compare(offset, offsets[slot]);
        }
        // Only an exact tie of event time and offset makes the keys' text.
        return order != 0
                ? order < 0
                : Samples.compareKeys(key == null ? null : key.toString(), key(slot)) < 0;
    }

    private String key(int slot) {
        return keyLengths[slot] < 0
                ? null
                : new String(keys[slot], 0, keyLengths[slot], StandardCharsets.UTF_8);
    }

    /** Offer slot {@code from}'s record of {@code other} (another task's) to {@code slot}. */
    void merge(int slot, MaxRecords other, int from) {
        if (other.ms[from] < ms[slot]) {
            return;
        }
        UTF8String key = other.keyLengths[from] < 0
                ? null
                : UTF8String.fromBytes(other.keys[from], 0, other.keyLengths[from]);
        offer(slot, other.ms[from], key, other.hasOffset[from], other.offsets[from]);
    }

    /** The slot's record as bytes; {@link #read} takes it back. */
    void write(DataOutputStream out, int slot) throws IOException {
        out.writeLong(ms[slot]);
        out.writeBoolean(hasOffset[slot]);
        out.writeLong(offsets[slot]);
        Encoding.writeUtf8(out, keys[slot], keyLengths[slot]);
    }

    /** The slot's record from what {@link #write} wrote. */
    void read(DataInputStream in, int slot) throws IOException {
        ms[slot] = in.readLong();
        hasOffset[slot] = in.readBoolean();
        offsets[slot] = in.readLong();
        keys[slot] = Encoding.readUtf8(in);
        keyLengths[slot] = keys[slot] == null ? -1 : keys[slot].length;
    }

    /** The slot's record as JSON {@code [key, ms, offset]}. */
    void writeJson(JsonGenerator json, int slot) throws IOException {
        Encoding.writeRecord(json, key(slot), ms[slot], hasOffset[slot], offsets[slot]);
    }
}
