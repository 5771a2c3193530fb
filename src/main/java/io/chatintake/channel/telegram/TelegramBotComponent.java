package io.chatintake.channel.telegram;

import io.chatintake.config.Secret;
import io.chatintake.support.MeterRegistryLookup;
import io.micrometer.core.instrument.Counter;
import java.time.Duration;
import java.util.EnumMap;
import java.util.Locale;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.camel.Endpoint;
import javax.sql.DataSource;
import org.apache.camel.spi.annotations.Component;
import org.apache.camel.support.CamelContextHelper;
import org.apache.camel.support.DefaultComponent;

/**
 * {@code telegram-bot:<bot name>?method=sendMessage}: Bot API calls for replies, thread-safe
 * (camel-telegram's producer shares one request body per method between threads, and quotes the
 * token in its errors). Bots are named and their tokens resolved as for {@code telegram-inbox}
 * ({@link TelegramBots}); every endpoint of one bot shares one HTTP client and one
 * {@link SendLimiter}, so the limits hold across routes; the bot's per-second limit is kept in
 * the product's database ({@link SharedBotBudget}), so it holds across processes too.
 */
@Component("telegram-bot")
public class TelegramBotComponent extends DefaultComponent {
    /** Send limits, per bot, from the configuration. */
    static final String PER_BOT_PER_SECOND = "telegram.send.per-bot-per-second";
    static final String PER_CHAT_PER_SECOND = "telegram.send.per-chat-per-second";
    static final String PER_GROUP_PER_MINUTE = "telegram.send.per-group-per-minute";
    static final String MAX_WAIT_MILLIS = "telegram.send.max-wait-millis";

    /** What became of a call that was made, for {@code chat_intake_telegram_sends}. */
    enum SendResult { SENT, RATE_LIMITED, UNDELIVERABLE, FAILED }

    /** One bot's client, limiter and send counters. */
    record Sender(BotApiClient client, SendLimiter limiter, Map<SendResult, Counter> sends) {
        void count(SendResult result) {
            sends.get(result).increment();
        }
    }

    private final Map<String, Sender> senders = new ConcurrentHashMap<>();

    @Override
    protected Endpoint createEndpoint(String uri, String remaining, Map<String, Object> parameters) throws Exception {
        if (remaining == null || remaining.isBlank()) {
            throw new IllegalArgumentException("telegram-bot needs a bot name: telegram-bot:main");
        }
        TelegramBotEndpoint endpoint = new TelegramBotEndpoint(uri, this, remaining);
        setProperties(endpoint, parameters);
        return endpoint;
    }

    /** The bot's sender, made at its first send; empty when no token is configured. */
    Optional<Sender> sender(String botName, Optional<Secret> token, String apiUrl) {
        return token.map(t -> senders.computeIfAbsent(botName, k -> new Sender(
                new BotApiClient(apiUrl, t),
                new SendLimiter(limit(PER_BOT_PER_SECOND, 30), limit(PER_CHAT_PER_SECOND, 1), limit(PER_GROUP_PER_MINUTE, 20),
                        Duration.ofMillis((long) limit(MAX_WAIT_MILLIS, 250)), budget(botName)),
                counters(botName))));
    }

    /** The bot's slots in the product's database; in this process alone where there is none (a bare context). */
    private BotBudget budget(String botName) {
        DataSource dataSource = CamelContextHelper.lookup(getCamelContext(), "dataSource", DataSource.class);
        return dataSource == null ? BotBudget.local() : new SharedBotBudget(dataSource, botName);
    }

    private Map<SendResult, Counter> counters(String botName) {
        Map<SendResult, Counter> counters = new EnumMap<>(SendResult.class);
        for (SendResult result : SendResult.values()) {
            counters.put(result, Counter.builder("chat_intake_telegram_sends").tag("bot", botName)
                    .tag("result", result.name().toLowerCase(Locale.ROOT))
                    .description("Bot API calls made by telegram-bot, by answer (deferred sends are not calls)")
                    .register(MeterRegistryLookup.of(getCamelContext())));
        }
        return counters;
    }

    private double limit(String key, double defaultValue) {
        String value = getCamelContext().getPropertiesComponent().resolveProperty(key).map(String::trim).orElse("");
        if (value.isEmpty()) {
            return defaultValue;
        }
        try {
            return Double.parseDouble(value);
        } catch (NumberFormatException e) {
            throw new IllegalArgumentException(key + " must be a number, got '" + value + "'");
        }
    }
}
