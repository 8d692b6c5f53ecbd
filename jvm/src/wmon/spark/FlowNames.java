package wmon.spark;

import com.fasterxml.jackson.core.JsonProcessingException;
import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import com.fasterxml.jackson.databind.node.ObjectNode;

/**
 * A Declarative Pipeline's flows named as the pipeline names them: {@code <pipeline>/<flow>}.
 * Spark names a flow's streaming query after the flow alone ({@code
 * spark_catalog.default.readings}); {@code wmon pipelines} sets {@code spark.wmon.pipeline} in
 * the pipeline's server, and the listener puts it before the name of each event that has one
 * (the started event's {@code name}, a progress event's {@code progress.name}). The started
 * event also says which pipeline it is ({@code "pipeline"}): a query that starts a flow the
 * store has seen under another id is that flow's reset.
 */
final class FlowNames {
    private static final ObjectMapper JSON = new ObjectMapper();

    private FlowNames() {}

    /**
     * The event's JSON with its query's name put under {@code pipeline}, and a started event's
     * {@code "pipeline"}.
     */
    static String named(String json, String pipeline) {
        try {
            JsonNode event = JSON.readTree(json);
            JsonNode progress = event.get("progress");
            JsonNode holder = progress != null && progress.isObject() ? progress : event;
            JsonNode name = holder.get("name");
            if (!(holder instanceof ObjectNode) || name == null || !name.isTextual()) {
                return json;
            }
            ((ObjectNode) holder).put("name", pipeline + "/" + name.asText());
            if (holder == event) {
                ((ObjectNode) event).put("pipeline", pipeline);
            }
            return JSON.writeValueAsString(event);
        } catch (JsonProcessingException e) {
            // Not ours to mend: the collector refuses what it cannot read, with why.
            return json;
        }
    }
}
