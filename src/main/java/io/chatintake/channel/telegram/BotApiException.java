package io.chatintake.channel.telegram;

import java.util.Locale;

/**
 * A failed Bot API call, classified by what the poller must do about it. The message never
 * holds the token or a URL: it is built from Telegram's own description or the I/O error.
 */
public final class BotApiException extends Exception {
    public enum Kind {
        /** 401/404: the token is wrong or revoked; polling this bot cannot work until it changes. */
        UNAUTHORIZED,
        /** 409 "terminated by other getUpdates request": another poller is active right now. */
        CONFLICT_OTHER_POLLER,
        /** 409 because a webhook is set: polling is refused until someone switches the bot to polling. */
        CONFLICT_WEBHOOK,
        /** 429: wait retry_after seconds. */
        RATE_LIMITED,
        /** 5xx or another error answer (400, 403, ...: see {@link #errorCode()}). */
        SERVER,
        /** No answer after the request may have been written: reset, timed out. */
        NETWORK,
        /** The request was never written (connection refused, connect timeout, unbuildable URL). */
        NOT_SENT
    }

    private final Kind kind;
    private final int errorCode;
    private final int retryAfterSeconds;

    BotApiException(Kind kind, int errorCode, String message, int retryAfterSeconds) {
        super(message);
        this.kind = kind;
        this.errorCode = errorCode;
        this.retryAfterSeconds = retryAfterSeconds;
    }

    static BotApiException fromAnswer(int errorCode, String description, int retryAfterSeconds) {
        String text = description == null ? "" : description;
        String lower = text.toLowerCase(Locale.ROOT);
        Kind kind;
        if (errorCode == 401 || errorCode == 404) {
            kind = Kind.UNAUTHORIZED;
        } else if (errorCode == 409 && lower.contains("webhook")) {
            kind = Kind.CONFLICT_WEBHOOK;
        } else if (errorCode == 409) {
            kind = Kind.CONFLICT_OTHER_POLLER;
        } else if (errorCode == 429) {
            kind = Kind.RATE_LIMITED;
        } else {
            kind = Kind.SERVER;
        }
        return new BotApiException(kind, errorCode, errorCode + " " + text, retryAfterSeconds);
    }

    static BotApiException network(String detail) {
        return new BotApiException(Kind.NETWORK, 0, "network error: " + detail, 0);
    }

    static BotApiException notSent(String detail) {
        return new BotApiException(Kind.NOT_SENT, 0, "not sent: " + detail, 0);
    }

    public Kind kind() {
        return kind;
    }

    public int errorCode() {
        return errorCode;
    }

    public int retryAfterSeconds() {
        return retryAfterSeconds;
    }
}
