package wmon.spark.operator;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.util.Arrays;
import java.util.HashMap;
import java.util.Map;
import java.util.Objects;
import org.apache.spark.unsafe.types.UTF8String;

/**
 * The partitions of a {@link Figures} buffer as slots 0, 1, … in the order first seen: found by
 * a number (an integral partition, the Spark input split) through an open-addressing table, or
 * by a name. The last partition found is found again with one compare: the rows of a task
 * mostly come from one partition. The look-up tables are rebuilt when missing (after Kryo made
 * the buffer) or full.
 */
final class Slots {
    private int size;
    /** The slot's partition number, or -1 when it is known by name. */
    private long[] codes = new long[0];
    private String[] names = new String[0];

    /** Slot + 1 of each number, 0 where empty. */
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

    /** How many slots there are. */
    int size() {
        return size;
    }

    /** The partition's name as the figures' JSON has it: its number, or its name. */
    String name(int slot) {
        return codes[slot] >= 0 ? Long.toString(codes[slot]) : names[slot];
    }

    /** The slot of partition number {@code code} (not negative), made on first sight. */
    int ofCode(long code) {
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
            slot = add(code, null);
        }
        lastCode = code;
        lastSlot = slot;
        return slot;
    }

    /** The slot of the partition called {@code name}, made on first sight. */
    int ofName(String name) {
        if (nameSlots == null) {
            reindex();
        }
        if (name.equals(lastName)) {
            return lastNameSlot;
        }
        Integer known = nameSlots.get(name);
        int slot = known != null ? known : add(-1, name);
        lastName = name;
        lastNameSlot = slot;
        return slot;
    }

    /**
     * The slot of the partition a row names by {@code topic/partition}, or by {@code partition}
     * when {@code topic} is null; the partition is {@code text}, or else {@code number} unless
     * that is {@link RowField#NULL}. The name is made only when the parts are not the last
     * row's.
     */
    int ofParts(UTF8String topic, UTF8String text, long number) {
        if (nameSlots == null) {
            reindex();
        }
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
        lastPartsSlot = ofName(name);
        return lastPartsSlot;
    }

    /** The slot here of slot {@code from} of {@code other} (another buffer's). */
    int of(Slots other, int from) {
        long code = other.codes[from];
        return code >= 0 ? ofCode(code) : ofName(other.names[from]);
    }

    /** The slot's partition as bytes; {@link #read} adds it back. */
    void write(DataOutputStream out, int slot) throws IOException {
        out.writeLong(codes[slot]);
        Encoding.writeText(out, names[slot]);
    }

    /** A new slot, the next, for the partition {@link #write} wrote. */
    int read(DataInputStream in) throws IOException {
        long code = in.readLong();
        return add(code, Encoding.readText(in));
    }

    /** A new slot, the next, for partition number {@code code} or else {@code name}. */
    private int add(long code, String name) {
        if (size == codes.length) {
            codes = Arrays.copyOf(codes, Math.max(16, 2 * size));
            names = Arrays.copyOf(names, codes.length);
        }
        int slot = size++;
        codes[slot] = code;
        names[slot] = name;
        if (codeTable != null) {
            if (2 * size > codeTable.length) {
                reindex();
            } else {
                index(slot);
            }
        }
        return slot;
    }

    /** (Re)build the look-up tables. */
    private void reindex() {
        codeTable = new int[Integer.highestOneBit(Math.max(16, 4 * size))];
        nameSlots = new HashMap<>();
        lastCode = -1;
        lastName = null;
        lastPartsSlot = -1;
        for (int slot = 0; slot < size; slot++) {
            index(slot);
        }
    }

    private void index(int slot) {
        if (codes[slot] < 0) {
            nameSlots.put(names[slot], slot);
            return;
        }
        int mask = codeTable.length - 1;
        int at = (int) ((codes[slot] * 0x9E3779B97F4A7C15L) >>> 40) & mask;
        while (codeTable[at] != 0) {
            at = (at + 1) & mask;
        }
        codeTable[at] = slot + 1;
    }
}
