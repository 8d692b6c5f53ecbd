package wmon.spark.operator;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.util.Arrays;
import com.fasterxml.jackson.core.JsonGenerator;
import org.apache.spark.sql.catalyst.InternalRow;

/**
 * Per partition slot, the record with the largest event time (ms), and among those the smallest
 * in sample order (offset, then key: the event times are equal). In a stream of rising event
 * times nearly every row is a new max, so its key is kept as UTF-8 bytes copied from the row
 * into a buffer the slot reuses: no object a row.
 */
final class MaxRecords {
    /** A new slot's key buffer, room for most keys. */
    private static final int KEY_BYTES = 16;

    private long[] ms = new long[0];
    private long[] offsets = new long[0];
    private boolean[] hasOffset = new boolean[0];
    /** The key's UTF-8 bytes, the first {@code keyLengths[slot]} of the slot's own buffer. */
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
        for (int slot = known; slot < slots; slot++) {
            keys[slot] = new byte[KEY_BYTES];
        }
        keyLengths = Arrays.copyOf(keyLengths, slots);
    }

    /** The slot's largest event time, the smallest long while it has no record. */
    long ms(int slot) {
        return ms[slot];
    }

    /**
     * Keep a row at {@code recordMs}, at or above the slot's largest event time, if it is the
     * new max; its key is read from the row by {@code key} only then.
     */
    void offer(
            int slot, long recordMs, RowField key, InternalRow row, boolean recordHasOffset,
            long offset) {
        int order = order(slot, recordMs, recordHasOffset, offset);
        // Only an exact tie of event time and offset makes the keys' text.
        if (order > 0 || order == 0 && !precedes(slot, key.getString(row))) {
            return;
        }
        keep(slot, recordMs, recordHasOffset, offset);
        int length = key.copyText(row, keys[slot]);
        if (length > keys[slot].length) {
            keys[slot] = new byte[2 * length];
            key.copyText(row, keys[slot]);
        }
        keyLengths[slot] = length;
    }

    private void keep(int slot, long recordMs, boolean recordHasOffset, long offset) {
        ms[slot] = recordMs;
        hasOffset[slot] = recordHasOffset;
        offsets[slot] = offset;
    }

    /**
     * How a record at {@code recordMs}, at or above the slot's largest event time, orders against
     * the slot's record: below 0 before it (above the max, or at it with a smaller offset, a
     * missing one first), above 0 after it, 0 on a tie of offset, which the keys decide.
     */
    private int order(int slot, long recordMs, boolean recordHasOffset, long offset) {
        if (recordMs != ms[slot]) {
            return -1;
        }
        int order = Boolean.compare(recordHasOffset, hasOffset[slot]);
        return order == 0 && recordHasOffset ? Long.compare(offset, offsets[slot]) : order;
    }

    /** Whether a record tied with the slot's on event time and offset comes first by key. */
    private boolean precedes(int slot, String key) {
        return Samples.compareKeys(key, key(slot)) < 0;
    }

    private String key(int slot) {
        return keyLengths[slot] < 0
                ? null
                : new String(keys[slot], 0, keyLengths[slot], StandardCharsets.UTF_8);
    }

    /** Offer slot {@code from}'s record of {@code other} (another task's) to {@code slot}. */
    void merge(int slot, MaxRecords other, int from) {
        long recordMs = other.ms[from];
        if (recordMs < ms[slot]) {
            return;
        }
        int order = order(slot, recordMs, other.hasOffset[from], other.offsets[from]);
        if (order > 0 || order == 0 && !precedes(slot, other.key(from))) {
            return;
        }
        keep(slot, recordMs, other.hasOffset[from], other.offsets[from]);
        keyLengths[slot] = other.keyLengths[from];
        keys[slot] = Arrays.copyOf(other.keys[from], other.keys[from].length);
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
        byte[] key = Encoding.readUtf8(in);
        keys[slot] = key == null ? new byte[KEY_BYTES] : key;
        keyLengths[slot] = key == null ? -1 : key.length;
    }

    /** The slot's record as JSON {@code [key, ms, offset]}. */
    void writeJson(JsonGenerator json, int slot) throws IOException {
        Encoding.writeRecord(json, key(slot), ms[slot], hasOffset[slot], offsets[slot]);
    }
}
