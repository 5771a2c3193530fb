package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import org.apache.camel.CamelContext;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

/** The long-poll timeout's option is {@code timeoutSeconds}; its earlier name, {@code timeout}, still sets it. */
class TelegramInboxOptionsTest {
    @Test
    void timeoutSecondsAndItsEarlierNameSetTheLongPollTimeout() throws Exception {
        try (CamelContext camel = new DefaultCamelContext()) {
            TelegramInboxEndpoint byNewName = camel.getEndpoint("telegram-inbox:main?timeoutSeconds=7", TelegramInboxEndpoint.class);
            TelegramInboxEndpoint byOldName = camel.getEndpoint("telegram-inbox:sales?timeout=9", TelegramInboxEndpoint.class);
            TelegramInboxEndpoint byDefault = camel.getEndpoint("telegram-inbox:support", TelegramInboxEndpoint.class);

            assertThat(byNewName.getTimeoutSeconds()).isEqualTo(7);
            assertThat(byOldName.getTimeoutSeconds()).isEqualTo(9);
            assertThat(byDefault.getTimeoutSeconds()).isEqualTo(25);
        }
    }
}
