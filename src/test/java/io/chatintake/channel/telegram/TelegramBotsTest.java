package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Secret;
import java.util.Map;
import java.util.Optional;
import java.util.function.Function;
import org.junit.jupiter.api.Test;

/** Which bots the configuration lists, and where each one's token is read. */
class TelegramBotsTest {
    private static Function<String, Optional<String>> config(Map<String, String> values) {
        return key -> Optional.ofNullable(values.get(key));
    }

    @Test
    void unsetOrEmptyListsMainAlone() {
        assertThat(TelegramBots.listed(config(Map.of()))).containsExactly("main");
        assertThat(TelegramBots.listed(config(Map.of("telegram.bots", " ")))).containsExactly("main");
    }

    @Test
    void aCommaListInItsOrderEachOnce() {
        assertThat(TelegramBots.listed(config(Map.of("telegram.bots", " main, sales ,support,,sales"))))
                .containsExactly("main", "sales", "support");
    }

    @Test
    void aNameThatCannotBeAKeyIsRefusedNamingTheVariable() {
        assertThatThrownBy(() -> TelegramBots.listed(config(Map.of("telegram.bots", "sales,eu west,ok"))))
                .isInstanceOf(ConfigurationException.class).hasMessageContaining("TELEGRAM_BOTS").hasMessageContaining("[eu west]");
    }

    @Test
    void mainReadsItsListedKeyAndTheOlderOne() {
        assertThat(TelegramBots.token("main", null, null, config(Map.of("telegram.bot-token", "1:old")))).contains(Secret.of("1:old"));
        assertThat(TelegramBots.token("main", null, null, config(Map.of("telegram.bots.main.token", "1:new")))).contains(Secret.of("1:new"));
        assertThat(TelegramBots.token("sales", null, null, config(Map.of("telegram.bots.sales.token", "2:s")))).contains(Secret.of("2:s"));
        assertThat(TelegramBots.token("sales", null, null, config(Map.of("telegram.bot-token", "1:old")))).isEmpty();
    }

    @Test
    void configuredBotsAreTheListedOnesWithATokenThenOthersWithATokenKey() {
        Map<String, String> values = Map.of("telegram.bots", "sales,support,main", "telegram.bots.sales.token", "2:s",
                "telegram.bot-token", "1:m", "telegram.bots.legacy.token", "3:l", "telegram.bots.blank.token", " ");
        assertThat(TelegramBots.configured(config(values), values.keySet())).containsExactly("sales", "main", "legacy");
    }
}
