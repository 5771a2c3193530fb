package io.chatintake.support;

import static org.assertj.core.api.Assertions.assertThat;

import java.util.Map;
import org.apache.camel.Message;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.DefaultExchange;
import org.junit.jupiter.api.Test;

/** A renamed header keeps working under its former name, whichever of the two names a route sets. */
class FormerHeaderNamesTest {
    private static final Map<String, String> FORMER = Map.of("ChatIntakeTelegramChatId", "TelegramChatId");

    @Test
    void aHeaderSetByAComponentIsCopiedToItsFormerName() {
        Message message = componentSet("42");
        assertThat(message.getHeader("TelegramChatId")).isEqualTo("42");
        assertThat(read(message)).isEqualTo("42");
    }

    @Test
    void aRouteOverridingTheFormerNameIsHeard() {
        Message message = componentSet("42");
        message.setHeader("TelegramChatId", "-100555");
        assertThat(read(message)).isEqualTo("-100555");
    }

    @Test
    void aRouteOverridingTheCurrentNameWins() {
        Message message = componentSet("42");
        message.setHeader("ChatIntakeTelegramChatId", "7");
        assertThat(read(message)).isEqualTo("7");
        message.setHeader("TelegramChatId", "8");
        assertThat(read(message)).as("both changed: the current name").isEqualTo("7");
    }

    @Test
    void aRouteSettingOnlyTheFormerNameOnAFreshExchangeIsHeard() {
        Message message = new DefaultExchange(new DefaultCamelContext()).getMessage();
        message.setHeader("TelegramChatId", "-100555");
        assertThat(read(message)).isEqualTo("-100555");
        assertThat(FormerHeaderNames.read(new DefaultExchange(new DefaultCamelContext()).getMessage(),
                "ChatIntakeTelegramChatId", "TelegramChatId", String.class)).isNull();
    }

    private static Message componentSet(String chat) {
        Message message = new DefaultExchange(new DefaultCamelContext()).getMessage();
        message.setHeader("ChatIntakeTelegramChatId", chat);
        FormerHeaderNames.copy(message, FORMER);
        return message;
    }

    private static String read(Message message) {
        return FormerHeaderNames.read(message, "ChatIntakeTelegramChatId", "TelegramChatId", String.class);
    }
}
