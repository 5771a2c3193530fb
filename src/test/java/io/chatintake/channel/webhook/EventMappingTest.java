package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.chatintake.message.ChannelMessage;
import java.nio.charset.StandardCharsets;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The field specs and event locations a channel is configured with. */
class EventMappingTest {
    @Test
    void fallbacksRelativePointersTemplatesHeadersAndConstants() {
        EventMapping mapping = new EventMapping(Map.of("events", "/outer/*/inner/*", "eventId", "{/id}:{/state} | /id | header:X-Id",
                "eventType", "state.{/state} | plain", "provider", "acme", "account", "2/account | 4/root_account",
                "conversation", "/chat", "messageId", "/id", "messageEvents", "plain"));
        List<WebhookEvent> events = mapping.events(bytes("{\"root_account\":\"R\",\"outer\":[{\"account\":\"A\",\"inner\":["
                + "{\"id\":\"1\",\"chat\":\"c\"},{\"id\":\"2\",\"state\":\"read\",\"chat\":\"c\"}]},{\"inner\":[{\"chat\":\"d\"}]}]}"),
                "application/json", name -> "X-Id".equals(name) ? "from-header" : null, "dlv");
        assertThat(events).extracting(WebhookEvent::eventId).containsExactly("1", "2:read", "from-header");
        assertThat(events).extracting(WebhookEvent::type).containsExactly("plain", "state.read", "plain");
        assertThat(events).extracting(WebhookEvent::accountId).containsExactly("A", "A", "R");
        assertThat(events.get(0).message().provider()).isEqualTo("acme");
        assertThat(events.get(0).change()).isEqualTo(ChannelMessage.Change.CONTENT);
        assertThat(events.get(1).message()).as("state.read is not a message event").isNull();
        assertThat(events.get(2).message()).as("no message id").isNull();
        assertThat(new String(events.get(0).body(), StandardCharsets.UTF_8)).isEqualTo("{\"id\":\"1\",\"chat\":\"c\"}");
    }

    @Test
    void anEventWithoutAnIdIsKeyedByADigestOfItsBytes() {
        EventMapping mapping = new EventMapping(Map.of("events", "/events/*", "eventId", "/missing"));
        List<WebhookEvent> events = mapping.events(bytes("{\"events\":[{\"a\":1},{\"a\":2},{\"a\":1}]}"), null, name -> null, null);
        assertThat(events.get(0).eventId()).startsWith("sha256:").isEqualTo(events.get(2).eventId()).isNotEqualTo(events.get(1).eventId());
    }

    @Test
    void timesInSecondsMillisecondsSlackTsAndRfc3339() {
        assertThat(EventMapping.instant("1749416383")).isEqualTo(Instant.ofEpochSecond(1749416383));
        assertThat(EventMapping.instant("1749416383000")).isEqualTo(Instant.ofEpochSecond(1749416383));
        assertThat(EventMapping.instant("1715600000.001500")).isEqualTo(Instant.ofEpochSecond(1715600000, 1_500_000));
        assertThat(EventMapping.instant("2026-07-01T09:15:00Z")).isEqualTo(Instant.parse("2026-07-01T09:15:00Z"));
        assertThat(EventMapping.instant("yesterday")).isNull();
    }

    @Test
    void aFormBodyBecomesItsFieldsAndAJsonFieldIsReadAsJson() {
        EventMapping mapping = new EventMapping(Map.of("eventId", "/payload/trigger_id | /trigger_id", "eventType", "/payload/type | command"));
        WebhookEvent event = mapping.events(bytes("payload=%7B%22type%22%3A%22block_actions%22%2C%22trigger_id%22%3A%22t1%22%7D&x=1"),
                "application/x-www-form-urlencoded; charset=utf-8", name -> null, null).get(0);
        assertThat(event.eventId()).isEqualTo("t1");
        assertThat(event.type()).isEqualTo("block_actions");
        assertThat(event.payloadJson()).isEqualTo("{\"payload\":{\"type\":\"block_actions\",\"trigger_id\":\"t1\"},\"x\":\"1\"}");
    }

    @Test
    void anUnknownOptionOrAnEventsPathThatIsNoPointerIsRefused() {
        assertThatThrownBy(() -> new EventMapping(Map.of("eventid", "/id"))).hasMessageContaining("unknown event mapping option 'eventid'");
        assertThatThrownBy(() -> new EventMapping(Map.of("events", "events/*"))).hasMessageContaining("is not a JSON Pointer");
    }

    private static byte[] bytes(String text) {
        return text.getBytes(StandardCharsets.UTF_8);
    }
}
