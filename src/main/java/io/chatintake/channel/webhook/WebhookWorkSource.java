package io.chatintake.channel.webhook;

import com.fasterxml.jackson.databind.JsonNode;
import com.fasterxml.jackson.databind.ObjectMapper;
import io.chatintake.support.FormerHeaderNames;
import io.chatintake.support.Redactor;
import io.chatintake.work.RowWorkSource;
import io.chatintake.work.WorkItem;
import java.io.IOException;
import java.nio.charset.StandardCharsets;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.List;
import org.apache.camel.Message;

/**
 * Stored webhook events of one channel as work: kind {@code <channel>-event}, handled by the
 * channel's {@code work:<channel>-event} route, with the event's
 * bytes as body. It can hold signed media URLs and reply tokens: handlers must not log it, and
 * the event's secret fields are registered with the {@link Redactor} before its handler runs.
 */
public final class WebhookWorkSource extends RowWorkSource {
    private static final ObjectMapper JSON = new ObjectMapper();
    private static final String SELECT = "SELECT id, workspace, channel, event_id, event_type, provider, account_id, body, payload::text FROM webhook_event WHERE id %s";

    private final List<String> secretFields;

    /**
     * A busy chat's run reads 20 events per query: an event can be as large as the body cap (1 MB by default).
     *
     * @param secretFields JSON Pointers of values in an event that are secrets (an interaction token, a reply token,
     *                     a response URL); masked as written and URL-encoded (as a form body holds them)
     */
    public WebhookWorkSource(String kind, List<String> secretFields) {
        super(kind, SELECT, 20);
        this.secretFields = List.copyOf(secretFields);
    }

    /** The work kind of a channel's events. */
    public static String kindOf(String channel) {
        return channel + "-event";
    }

    @Override
    protected void fill(ResultSet rs, WorkItem item, Message message) throws SQLException {
        message.setHeader(WebhookInboxConstants.WORKSPACE, rs.getString(2));
        message.setHeader(WebhookInboxConstants.CHANNEL, rs.getString(3));
        message.setHeader(WebhookInboxConstants.EVENT_ID, rs.getString(4));
        message.setHeader(WebhookInboxConstants.EVENT_TYPE, rs.getString(5));
        message.setHeader(WebhookInboxConstants.PROVIDER, rs.getString(6));
        message.setHeader(WebhookInboxConstants.ACCOUNT, rs.getString(7));
        message.setHeader(WebhookInboxConstants.STORED_ID, item.sourceId());
        FormerHeaderNames.copy(message, WebhookInboxConstants.FORMER_NAMES);
        String body = new String(rs.getBytes(8), StandardCharsets.UTF_8);
        // The event as JSON: a form body (a Slack slash command) has its fields there.
        String payload = rs.getString(9);
        hideSecretFields(payload != null ? payload : body);
        message.setBody(body);
    }

    /** Whatever quotes them while the handler runs (an http call's error, a library's debug line) is then masked. */
    private void hideSecretFields(String body) {
        if (secretFields.isEmpty()) {
            return;
        }
        try {
            JsonNode event = JSON.readTree(body);
            for (String pointer : secretFields) {
                JsonNode value = event.at(pointer);
                if (value.isTextual()) {
                    Redactor.registerTransient(value.asText());
                }
            }
        } catch (IOException e) {
            // Not JSON: it has no fields to find.
        }
    }
}
