package io.chatintake.channel.telegram;

import io.chatintake.config.Secret;
import java.util.Map;
import java.util.Optional;
import java.util.concurrent.ConcurrentHashMap;
import org.apache.camel.Endpoint;
import org.apache.camel.spi.annotations.Component;
import org.apache.camel.support.DefaultComponent;

/**
 * {@code telegram-bot:<bot name>?method=sendMessage}: Bot API calls for replies, thread-safe
 * (camel-telegram's producer shares one request body per method between threads, and quotes the
 * token in its errors). Bots are named and their tokens resolved as for {@code telegram-inbox}
 * ({@link TelegramBots}); every endpoint of one bot shares one HTTP client and one
 * {@link SendLimiter}, so the limits hold across routes.
 */
@Component("telegram-bot")
public class TelegramBotComponent extends DefaultComponent {
    /** Send limits, per bot, from the configuration. */
    static final String PER_BOT_PER_SECOND = "telegram.send.per-bot-per-second";
    static final String PER_CHAT_PER_SECOND = "telegram.send.per-chat-per-second";
    static final String PER_GROUP_PER_MINUTE = "telegram.send.per-group-per-minute";

    /** One bot's client and limiter. */
    record Sender(BotApiClient client, SendLimiter limiter) {
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
                new SendLimiter(limit(PER_BOT_PER_SECOND, 30), limit(PER_CHAT_PER_SECOND, 1), limit(PER_GROUP_PER_MINUTE, 20)))));
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
