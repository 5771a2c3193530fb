package io.chatintake.channel.telegram;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Secret;
import io.chatintake.config.Settings;
import java.util.ArrayList;
import java.util.LinkedHashSet;
import java.util.List;
import java.util.Optional;
import java.util.Set;
import java.util.function.Function;
import java.util.regex.Pattern;

/**
 * The one place that knows where a bot's token and the Bot API server are configured, for intake
 * ({@code telegram-inbox}), replies ({@code telegram-bot}), the operator commands and attachment
 * downloads: {@code telegram.bots.<name>.token} for every bot (for {@code main} also
 * {@code telegram.bot-token}), {@code telegram.api-url}, and the bots polled from the route
 * template: {@code telegram.bots}.
 */
public final class TelegramBots {
    public static final String MAIN = "main";
    public static final String API_URL_KEY = "telegram.api-url";
    public static final String DEFAULT_API_URL = "https://api.telegram.org";
    /** The bots polled through routes/telegram.yaml's template, a comma list; unset: {@code main} alone. */
    public static final String LIST_KEY = "telegram.bots";
    /** A name becomes part of a configuration key and an environment variable (TELEGRAM_BOTS_<NAME>_TOKEN). */
    private static final Pattern NAME = Pattern.compile("[A-Za-z0-9][A-Za-z0-9_-]*");

    private TelegramBots() {
    }

    /** The configuration key of a bot's token (for {@code main} the older key, whose variable TELEGRAM_BOT_TOKEN most set-ups use). */
    public static String tokenKey(String botName) {
        return MAIN.equals(botName) ? "telegram.bot-token" : listedTokenKey(botName);
    }

    private static String listedTokenKey(String botName) {
        return "telegram.bots." + botName + ".token";
    }

    /** The bots of {@code telegram.bots}, in their order, each once; {@code main} alone when it is unset or empty. */
    public static List<String> listed(Function<String, Optional<String>> properties) {
        String list = properties.apply(LIST_KEY).map(String::trim).orElse("");
        if (list.isEmpty()) {
            return List.of(MAIN);
        }
        Set<String> names = new LinkedHashSet<>();
        List<String> refused = new ArrayList<>();
        for (String name : list.split(",")) {
            String trimmed = name.trim();
            if (NAME.matcher(trimmed).matches()) {
                names.add(trimmed);
            } else if (!trimmed.isEmpty()) {
                refused.add(trimmed);
            }
        }
        if (!refused.isEmpty()) {
            throw new ConfigurationException(Settings.envName(LIST_KEY) + " (" + LIST_KEY + "): bot names are letters, digits, '-'"
                    + " and '_', starting with a letter or digit; refused: " + refused);
        }
        return List.copyOf(names);
    }

    /**
     * The bots this configuration names, each with a token: those listed in {@code telegram.bots},
     * then any other bot given a token key (for a hand-written route), in that order.
     *
     * @param keys the configuration's keys, to find tokens of bots the list leaves out
     */
    public static Set<String> configured(Function<String, Optional<String>> properties, Set<String> keys) {
        Set<String> bots = new LinkedHashSet<>();
        try {
            bots.addAll(listed(properties));
        } catch (ConfigurationException e) {
            // The runner reports a list it cannot read; the bots with tokens are still shown.
        }
        bots.removeIf(bot -> token(bot, null, null, properties).isEmpty());
        if (nonBlank(properties, tokenKey(MAIN)).isPresent()) {
            bots.add(MAIN);
        }
        keys.stream().filter(k -> k.startsWith("telegram.bots.") && k.endsWith(".token"))
                .map(k -> k.substring("telegram.bots.".length(), k.length() - ".token".length()))
                .filter(bot -> token(bot, null, null, properties).isPresent())
                .forEach(bots::add);
        return bots;
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
        Optional<Secret> token = nonBlank(properties, tokenKey(botName, tokenProperty)).map(Secret::of);
        if (token.isEmpty() && MAIN.equals(botName) && (tokenProperty == null || tokenProperty.isBlank())) {
            return nonBlank(properties, listedTokenKey(MAIN)).map(Secret::of);
        }
        return token;
    }

    private static Optional<String> nonBlank(Function<String, Optional<String>> properties, String key) {
        return properties.apply(key).map(String::trim).filter(v -> !v.isEmpty());
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
        return nonBlank(properties, API_URL_KEY).orElse(DEFAULT_API_URL);
    }
}
