package io.chatintake.channel.unifyport;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.channel.webhook.EventMapping;
import io.chatintake.channel.webhook.WebhookEvent;
import io.chatintake.channel.webhook.WebhookRouteFile;
import java.nio.charset.StandardCharsets;
import java.nio.file.Path;
import java.time.Instant;
import org.junit.jupiter.api.Test;

/** The UnifyPort envelope as the shipped route's event mapping reads it. */
class UnifyPortEventTest {
    private static final EventMapping MAPPING = WebhookRouteFile.eventMapping(Path.of("routes/unifyport-webhook.yaml"), "unifyport");

    @Test
    void idsStayStringsEvenWhenTheyAreHugeNumbers() {
        WebhookEvent event = parse("{\"id\":\"evt_1\",\"type\":\"message.received\",\"provider\":\"telegram\",\"account_id\":98765432109876543210,"
                + "\"occurred_at\":\"2026-07-01T09:15:00Z\",\"data\":{\"conversation\":{\"id\":-1001234567890123},"
                + "\"message\":{\"id\":123456789012345678901234567890,\"type\":\"text\",\"text\":\"hi\",\"album\":{\"id\":\"a\",\"index\":3}}}}",
                null);
        assertThat(event.eventId()).isEqualTo("evt_1");
        assertThat(event.accountId()).isEqualTo("98765432109876543210");
        assertThat(event.occurredAt()).isEqualTo(Instant.parse("2026-07-01T09:15:00Z"));
        assertThat(event.message().conversationId()).isEqualTo("-1001234567890123");
        assertThat(event.message().messageId()).isEqualTo("123456789012345678901234567890");
        assertThat(event.message().albumIndex()).isEqualTo(3);
        assertThat(event.message().albumTotal()).isNull();
    }

    @Test
    void theSignedBodyIdIsTheKeyThenTheHeaderIdThenADigestOfTheBody() {
        assertThat(parse("{\"id\":\"evt_body\"}", "evt_header").eventId()).as("the header is not signed").isEqualTo("evt_body");
        assertThat(parse("{\"id\":\"evt_body\"}", null).eventId()).isEqualTo("evt_body");
        assertThat(parse("{\"type\":\"x\"}", "evt_header").eventId()).isEqualTo("evt_header");
        WebhookEvent noId = parse("{\"type\":\"x\"}", null);
        assertThat(noId.eventId()).startsWith("sha256:").isEqualTo(parse("{\"type\":\"x\"}", " ").eventId());
    }

    @Test
    void bodiesThatCannotBeAnEnvelopeAreFlaggedNotRefused() {
        assertThat(parse("{\"a\":1} trailing", null).parseError()).isEqualTo("invalid_json");
        assertThat(parse("[1,2]", null).parseError()).isEqualTo("not_an_object");
        assertThat(parse("[1,2]", null).payloadJson()).as("still JSON, kept as jsonb").isEqualTo("[1,2]");
        assertThat(parse("", null).parseError()).isEqualTo("invalid_json");
        assertThat(parse("{\"a\":\"nul \\u0000 inside\"}", null).parseError()).as("jsonb cannot hold NUL").isEqualTo("nul_character");
        assertThat(parse("{\"a\":\"half \\ud83d\"}", null).parseError()).as("nor a lone surrogate").isEqualTo("lone_surrogate");
        assertThat(parse("\uFEFF{\"a\":1}", null).parseError()).as("nor a byte-order mark").isEqualTo("byte_order_mark");
        assertThat(MAPPING.events("{\"id\":\"e\"}".getBytes(StandardCharsets.UTF_16), "application/json", name -> null, "dlv")
                .get(0).parseError()).as("nor UTF-16").isEqualTo("not_utf8");
        WebhookEvent raw = parse("<xml/>", "evt_x");
        assertThat(raw.payloadJson()).isNull();
        assertThat(raw.eventId()).isEqualTo("evt_x");
    }

    @Test
    void aMessageEventWithoutConversationOrMessageIdHasNoChild() {
        assertThat(parse("{\"id\":\"e\",\"type\":\"message.read\",\"provider\":\"line\",\"account_id\":\"a\",\"data\":{}}", null).message())
                .isNull();
        assertThat(parse("{\"id\":\"e\",\"type\":\"message.deleted\",\"provider\":\"line\",\"account_id\":\"a\","
                + "\"data\":{\"conversation_id\":\"c\",\"message_id\":\"m\"}}", null).message().messageId()).isEqualTo("m");
    }

    @Test
    void printingAnEventShowsNoContent() {
        assertThat(parse("{\"id\":\"e\",\"type\":\"message.received\",\"data\":{\"message\":{\"reply_token\":\"rt_secret\"}}}", null))
                .hasToString("WebhookEvent[e message.received null]");
    }

    private static WebhookEvent parse(String body, String headerId) {
        return MAPPING.events(body.getBytes(StandardCharsets.UTF_8), "application/json",
                name -> "X-Device-Event-Id".equals(name) ? headerId : null, "dlv").get(0);
    }
}
