package io.chatintake.ops.bench;

import io.chatintake.config.ConfigurationException;
import java.util.HashMap;
import java.util.List;
import java.util.Map;

/**
 * The steady mixed load of {@code bench soak}: Telegram text updates spread over chats, and signed
 * UnifyPort deliveries of which a share are the children of albums of {@code albumSize} photos.
 * Each figure can be changed with a flag {@code --name=value}; the defaults are the load under
 * which the handlers once fell silent (issue 56).
 */
record SoakLoad(double telegramPerSecond, int chats, double webhookPerSecond, double albumShare, int albumSize) {
    static final SoakLoad DEFAULT = new SoakLoad(150, 500, 38, 0.25, 3);
    private static final List<String> FLAGS = List.of("telegram-per-second", "chats", "webhook-per-second", "album-share", "album-size");

    SoakLoad {
        if (telegramPerSecond < 0 || webhookPerSecond < 0 || chats < 1 || albumSize < 2 || albumShare < 0 || albumShare > 1) {
            throw new ConfigurationException("bench soak: rates must be >= 0, --chats >= 1, --album-size >= 2, --album-share from 0 to 1");
        }
    }

    /** The defaults with what {@code --telegram-per-second=}, {@code --chats=}, ... among {@code args} say instead. */
    static SoakLoad fromFlags(List<String> args) {
        Map<String, String> flags = new HashMap<>();
        for (String arg : args) {
            if (!arg.startsWith("--")) {
                continue;
            }
            int equals = arg.indexOf('=');
            String name = arg.substring(2, equals < 0 ? arg.length() : equals);
            // A value after a space would be taken for SECONDS.
            if (equals < 0 || !FLAGS.contains(name)) {
                throw new ConfigurationException("bench soak: " + arg + " is not one of --" + String.join("=N, --", FLAGS) + "=N");
            }
            flags.put(name, arg.substring(equals + 1));
        }
        try {
            return new SoakLoad(
                    Double.parseDouble(flags.getOrDefault("telegram-per-second", Double.toString(DEFAULT.telegramPerSecond))),
                    Integer.parseInt(flags.getOrDefault("chats", Integer.toString(DEFAULT.chats))),
                    Double.parseDouble(flags.getOrDefault("webhook-per-second", Double.toString(DEFAULT.webhookPerSecond))),
                    Double.parseDouble(flags.getOrDefault("album-share", Double.toString(DEFAULT.albumShare))),
                    Integer.parseInt(flags.getOrDefault("album-size", Integer.toString(DEFAULT.albumSize))));
        } catch (NumberFormatException e) {
            throw new ConfigurationException("bench soak: a flag's value is not a number: " + e.getMessage());
        }
    }

    /**
     * Whether the next deliveries should be a whole album rather than one single text, so that album
     * children stay {@code albumShare} of the {@code sent} deliveries ({@code childrenSent} of them).
     */
    boolean albumNext(long sent, long childrenSent) {
        return albumShare > 0 && childrenSent <= albumShare * sent;
    }

    String describe() {
        return "%.0f Telegram text updates/s over %d chats; %.0f signed UnifyPort deliveries/s, %.0f %% of them children of albums of %d"
                .formatted(telegramPerSecond, chats, webhookPerSecond, albumShare * 100, albumSize);
    }
}
