package wmon.spark.operator;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Arrays;
import com.fasterxml.jackson.core.JsonGenerator;

/**
 * Per partition slot, a histogram of distances in ms by bit length: bucket {@code b} counts the
 * distances {@code d} with {@code 64 - numberOfLeadingZeros(d) == b} (0 for 0, 1 for 1, 2 for
 * 2..3, 3 for 4..7, …). A flat {@code long[]}, 64 buckets a slot.
 */
final class Buckets {
    private static final int PER_SLOT = 64;

    private long[] counts = new long[0];

    /** Room for {@code slots} slots. */
    void grow(int slots) {
        counts = Arrays.copyOf(counts, slots * PER_SLOT);
    }

    /** Count one distance (not negative) of the slot's partition. */
    void add(int slot, long distanceMs) {
        counts[slot * PER_SLOT + PER_SLOT - Long.numberOfLeadingZeros(distanceMs)]++;
    }

    /** Add slot {@code from}'s counts of {@code other} (another task's) to {@code slot}. */
    void merge(int slot, Buckets other, int from) {
        for (int bucket = 0; bucket < PER_SLOT; bucket++) {
            counts[slot * PER_SLOT + bucket] += other.counts[from * PER_SLOT + bucket];
        }
    }

    /** The slot's nonzero buckets as bytes; {@link #read} takes them back. */
    void write(DataOutputStream out, int slot) throws IOException {
        int first = slot * PER_SLOT;
        int nonzero = 0;
        for (int i = first; i < first + PER_SLOT; i++) {
            nonzero += counts[i] != 0 ? 1 : 0;
        }
        out.writeByte(nonzero);
        for (int i = first; i < first + PER_SLOT; i++) {
            if (counts[i] != 0) {
                out.writeByte(i - first);
                out.writeLong(counts[i]);
            }
        }
    }

    /** The slot's buckets from what {@link #write} wrote. */
    void read(DataInputStream in, int slot) throws IOException {
        for (int nonzero = in.readUnsignedByte(); nonzero > 0; nonzero--) {
            int bucket = in.readUnsignedByte();
            counts[slot * PER_SLOT + bucket] = in.readLong();
        }
    }

    /** The slot's nonzero buckets as a JSON object: bucket number (as text) to count. */
    void writeJson(JsonGenerator json, int slot) throws IOException {
        json.writeStartObject();
        int first = slot * PER_SLOT;
        for (int i = first; i < first + PER_SLOT; i++) {
            if (counts[i] != 0) {
                json.writeNumberField(Integer.toString(i - first), counts[i]);
            }
        }
        json.writeEndObject();
    }
}
