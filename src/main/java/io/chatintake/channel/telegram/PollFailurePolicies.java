package io.chatintake.channel.telegram;

import java.sql.SQLException;

/** The policy for each kind of failure of one bot's poller; some remember when they last logged. */
final class PollFailurePolicies {
    private final PollFailurePolicy leaseLost = new OnLeaseLost();
    private final PollFailurePolicy storage = new OnStorageFailure();
    private final PollFailurePolicy tokenRejected = new OnTokenRejected();
    private final PollFailurePolicy webhookSet = new OnWebhookSet();
    private final PollFailurePolicy otherPoller = new OnOtherPoller();
    private final PollFailurePolicy rateLimited = new OnRateLimited();
    private final PollFailurePolicy unavailable = new OnBotApiUnavailable();
    private final PollFailurePolicy unexpected = new OnUnexpectedFailure();

    PollFailurePolicy forFailure(Exception failure) {
        if (failure instanceof TelegramUpdateStore.LeaseLostException) {
            return leaseLost;
        }
        if (failure instanceof SQLException) {
            return storage;
        }
        if (failure instanceof BotApiException e) {
            return switch (e.kind()) {
                case UNAUTHORIZED -> tokenRejected;
                case CONFLICT_WEBHOOK -> webhookSet;
                case CONFLICT_OTHER_POLLER -> otherPoller;
                case RATE_LIMITED -> rateLimited;
                case SERVER, NETWORK, NOT_SENT -> unavailable;
            };
        }
        return unexpected;
    }
}
