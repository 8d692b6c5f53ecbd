package wmon.spark.operator;

import java.io.BufferedReader;
import java.io.IOException;
import java.io.InputStreamReader;
import java.io.UncheckedIOException;
import java.nio.charset.StandardCharsets;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import org.apache.hadoop.conf.Configuration;
import org.apache.hadoop.fs.FileSystem;
import org.apache.hadoop.fs.Path;
import org.apache.spark.SparkEnv;
import org.apache.spark.TaskContext;
import org.apache.spark.deploy.SparkHadoopUtil;

/**
 * The watermark Spark drops late rows with in the running task's micro-batch N: that of batch
 * N-1, the second line of {@code <checkpoint>/offsets/N-1}; and batch N's time, from the second
 * line of {@code <checkpoint>/offsets/N}, written before the batch runs. Read through Hadoop's
 * FileSystem (so any checkpoint store works) once per checkpoint and batch in each JVM, then
 * cached.
 */
final class LateWatermarks {
    /**
     * A batch, the watermark its late rows are dropped with and its batch time (each null when
     * the offset log does not have it).
     */
    record Batch(long id, Long watermarkMs, Long timeMs) {}

    private static final ObjectMapper JSON = new ObjectMapper();
    /** Enough for the few batches of the queries running in one JVM at a time. */
    private static final int KEEP = 256;
    private static final Map<String, Batch> CACHE = new ConcurrentHashMap<>();

    private LateWatermarks() {}

    /** The running task's batch; outside a streaming query's task, an error naming the cause. */
    static Batch current(String checkpoint) {
        TaskContext task = TaskContext.get();
        String batchId = task == null ? null : task.getLocalProperty("streaming.sql.batchId");
        if (batchId == null) {
            throw new IllegalStateException("wmon: instrument() works only inside a streaming query");
        }
        long id = Long.parseLong(batchId);
        String cacheKey = id + "\n" + checkpoint;
        Batch batch = CACHE.get(cacheKey);
        if (batch == null) {
            if (CACHE.size() >= KEEP) {
                CACHE.clear();
            }
            batch = new Batch(id, read(checkpoint, id - 1, "batchWatermarkMs"),
                    read(checkpoint, id, "batchTimestampMs"));
            CACHE.put(cacheKey, batch);
        }
        return batch;
    }

    /** A field of batch {@code batchId}'s metadata in the offset log, or null without it. */
    private static Long read(String checkpoint, long batchId, String field) {
        if (batchId < 0) {
            return null;
        }
        Path path = new Path(new Path(checkpoint, "offsets"), Long.toString(batchId));
        try {
            FileSystem fs = path.getFileSystem(hadoopConf());
            if (!fs.exists(path)) {
                return null;
            }
            try (BufferedReader reader = new BufferedReader(
                    new InputStreamReader(fs.open(path), StandardCharsets.UTF_8))) {
                reader.readLine();
                JsonNode metadata = JSON.readTree(reader.readLine());
                return metadata.get(field).asLong();
            }
        } catch (IOException e) {
            throw new UncheckedIOException("wmon: cannot read the offset log entry " + path, e);
        }
    }

    private static Configuration hadoopConf() {
        SparkEnv env = SparkEnv.get();
        return env == null
                ? new Configuration()
                : SparkHadoopUtil.get().newConfiguration(env.conf());
    }
}
