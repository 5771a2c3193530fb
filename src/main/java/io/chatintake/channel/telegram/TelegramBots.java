package io.chatintake.channel.telegram;

import io.chatintake.config.Secret;
import java.util.Optional;
import java.util.function.Function;

/**
 * The one place that knows where a bot's token and the Bot API server are configured, for intake
 * ({@code telegram-inbox}), replies ({@code telegram-bot}), the operator commands and attachment
 * downloads: {@code telegram.bot-token} for the bot named {@code main},
 * {@code telegram.bots.<name>.token} for any other, and {@code telegram.api-url}.
 */
public final class TelegramBots {
    public static final String MAIN = "main";
    public static final String API_URL_KEY = "telegram.api-url";
    public static final String DEFAULT_API_URL = "https://api.telegram.org";

    private TelegramBots() {
    }

    /** The configuration key of a bot's token. */
    public static String tokenKey(String botName) {
        return MAIN.equals(botName) ? "telegram.bot-token" : "telegram.bots." + botName + ".token";
    }

    /**
     * @param explicitToken a token given on the endpoint itself, else null
     * @param tokenProperty another key to read the token from, else null
     * @param properties    the configuration: key -> non-blank value
     */
    public static Optional<Secret> token(String botName, String explicitToken, String tokenProperty,
                                         Function<String, Optional<String>> properties) {
        if (explicitToken != null && !explicitToken.isBlank()) {
            return Optional.of(Secret.of(explicitToken.trim()));
        }
        return properties.apply(tokenKey(botName, tokenProperty)).map(String::trim).filter(v -> !v.isEmpty()).map(Secret::of);
    }

    /** The key the token is read from: {@code tokenProperty} when given, else {@link #tokenKey(String)}. */
    public static String tokenKey(String botName, String tokenProperty) {
        return tokenProperty != null && !tokenProperty.isBlank() ? tokenProperty : tokenKey(botName);
    }

    /** @param explicitUrl a URL given on the endpoint itself, else null */
    public static String apiUrl(String explicitUrl, Function<String, Optional<String>> properties) {
        if (explicitUrl != null && !explicitUrl.isBlank()) {
            return explicitUrl.trim();
        }
        return properties.apply(API_URL_KEY).map(String::trim).filter(v -> !v.isEmpty()).orElse(DEFAULT_API_URL);
    }
}
