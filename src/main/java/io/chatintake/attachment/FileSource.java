package io.chatintake.attachment;

import java.io.IOException;
import java.io.InputStream;
import java.time.Duration;

/**
 * Where an attachment known by a file id rather than a URL comes from (a Telegram bot's
 * {@code getFile}). The fetcher asks this interface; the channel that knows such ids implements
 * it, so attachments never depend on a channel.
 */
public interface FileSource {
    /**
     * Opens the bytes of a file; the caller closes the stream.
     *
     * @param owner   who may read the file (for Telegram: the bot's configured name)
     * @param maxBytes larger files are refused before downloading, when the source knows their size
     * @throws TooLargeException   the file is larger than {@code maxBytes} or than the source serves: not retried
     * @throws UnavailableException an answer that will not change (an unknown file id): not retried
     * @throws IOException         anything worth another attempt; its message never holds a secret
     */
    InputStream open(String owner, String fileId, long maxBytes, Duration answerTimeout)
            throws TooLargeException, UnavailableException, IOException;

    /** The file will not be kept: status {@code too_large}. */
    final class TooLargeException extends Exception {
        public TooLargeException(String message) {
            super(message);
        }
    }

    /** The file cannot be had, now or later: status {@code failed}. */
    final class UnavailableException extends Exception {
        public UnavailableException(String message) {
            super(message);
        }
    }
}
