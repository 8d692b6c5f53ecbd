package wmon.spark.operator;

import java.io.DataInputStream;
import java.io.DataOutputStream;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import com.fasterxml.jackson.core.JsonGenerator;

/** How the figures' parts write text as bytes, and records and missing numbers as JSON. */
final class Encoding {
    private Encoding() {}

    /** Text of any length as its UTF-8 bytes after their count, -1 for null. */
    static void writeText(DataOutputStream out, String text) throws IOException {
        byte[] utf8 = text == null ? null : text.getBytes(StandardCharsets.UTF_8);
        writeUtf8(out, utf8, utf8 == null ? -1 : utf8.length);
    }

    /** The first {@code length} bytes of {@code utf8} as {@link #writeText} writes text. */
    static void writeUtf8(DataOutputStream out, byte[] utf8, int length) throws IOException {
        out.writeInt(length);
        if (length > 0) {
            out.write(utf8, 0, length);
        }
    }

    /** Text as {@link #writeText} wrote it. */
    static String readText(DataInputStream in) throws IOException {
        byte[] utf8 = readUtf8(in);
        return utf8 == null ? null : new String(utf8, StandardCharsets.UTF_8);
    }

    /** The UTF-8 bytes of text as {@link #writeText} wrote it, null for null. */
    static byte[] readUtf8(DataInputStream in) throws IOException {
        int length = in.readInt();
        if (length < 0) {
            return null;
        }
        byte[] utf8 = new byte[length];
        in.readFully(utf8);
        return utf8;
    }

    /** A record as JSON {@code [key, ms, offset]}, a missing key or offset null. */
    static void writeRecord(JsonGenerator json, String key, long ms, boolean hasOffset, long offset)
            throws IOException {
        json.writeStartArray();
        json.writeString(key);
        json.writeNumber(ms);
        writeNumber(json, hasOffset, offset);
        json.writeEndArray();
    }

    /** {@code value}, or null when it is not {@code known}. */
    static void writeNumber(JsonGenerator json, boolean known, long value) throws IOException {
        if (known) {
            json.writeNumber(value);
        } else {
            json.writeNull();
        }
    }
}
