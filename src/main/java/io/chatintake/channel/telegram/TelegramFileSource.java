package io.chatintake.channel.telegram;

import io.chatintake.attachment.FileSource;
import io.chatintake.config.Secret;
import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;
import java.util.Map;
import java.util.Optional;
import java.util.Set;
import java.util.concurrent.ConcurrentHashMap;
import java.util.function.Function;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/** Telegram files for the attachment fetcher: {@code getFile} with the bot's token, then the download. */
public final class TelegramFileSource implements FileSource {
    private static final Logger LOG = LoggerFactory.getLogger(TelegramFileSource.class);
    private static final Set<Integer> EXPIRED = Set.of(403, 404, 410);
    private final String apiUrl;
    private final Function<String, Optional<Secret>> tokens;
    private final Map<String, BotApiClient> bots = new ConcurrentHashMap<>();

    /** @param tokens the token of a bot by its configured name ({@code main}, ...) */
    public TelegramFileSource(String apiUrl, Function<String, Optional<Secret>> tokens) {
        this.apiUrl = apiUrl;
        this.tokens = tokens;
    }

    @Override
    public InputStream open(String botName, String fileId, long maxBytes, Duration answerTimeout)
            throws TooLargeException, UnavailableException, IOException {
        BotApiClient bot = bots.computeIfAbsent(botName, name -> tokens.apply(name).map(token -> new BotApiClient(apiUrl, token)).orElse(null));
        if (bot == null) {
            throw new IOException("no token configured for bot '" + botName + "'");
        }
        try {
            BotApiClient.TelegramFile file = bot.getFile(fileId);
            if (file.fileSize() > maxBytes) {
                throw new TooLargeException("getFile says " + file.fileSize() + " bytes");
            }
            return download(bot, fileId, file, answerTimeout);
        } catch (BotApiException e) {
            // 400 is Telegram's answer for a file over its 20 MB limit or an unknown file_id: asking again will not help.
            if (e.errorCode() == 400) {
                if (e.getMessage().contains("too big")) {
                    throw new TooLargeException(e.getMessage());
                }
                throw new UnavailableException(e.getMessage());
            }
            throw new IOException(e.getMessage());
        }
    }

    /**
     * A Telegram file link lives about an hour, and getFile hands out a fresh one for the same
     * file_id: a link that answers as expired is renewed once per attempt.
     */
    private static InputStream download(BotApiClient bot, String fileId, BotApiClient.TelegramFile file, Duration answerTimeout)
            throws BotApiException {
        try {
            return bot.downloadFile(file.filePath(), answerTimeout);
        } catch (BotApiException e) {
            if (!EXPIRED.contains(e.errorCode())) {
                throw e;
            }
            LOG.info("telegram file {}: the link answered {} (expired); asking getFile for a fresh one", fileId, e.errorCode());
            return bot.downloadFile(bot.getFile(fileId).filePath(), answerTimeout);
        }
    }
}
