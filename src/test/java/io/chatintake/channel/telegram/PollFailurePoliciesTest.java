package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import java.sql.SQLException;
import org.junit.jupiter.api.Test;

/** Each kind of failed poll step goes to the one policy that knows what to do about it. */
class PollFailurePoliciesTest {
    private final PollFailurePolicies policies = new PollFailurePolicies();

    @Test
    void eachKindOfFailureHasItsPolicy() {
        assertThat(policies.forFailure(new TelegramUpdateStore.LeaseLostException(42))).isInstanceOf(OnLeaseLost.class);
        assertThat(policies.forFailure(new SQLException("connection refused", "08001"))).isInstanceOf(OnStorageFailure.class);
        assertThat(policies.forFailure(BotApiException.fromAnswer(401, "Unauthorized", 0))).isInstanceOf(OnTokenRejected.class);
        assertThat(policies.forFailure(BotApiException.fromAnswer(409, "Conflict: can't use getUpdates method while webhook is active", 0)))
                .isInstanceOf(OnWebhookSet.class);
        assertThat(policies.forFailure(BotApiException.fromAnswer(409, "Conflict: terminated by other getUpdates request", 0)))
                .isInstanceOf(OnOtherPoller.class);
        assertThat(policies.forFailure(BotApiException.fromAnswer(429, "Too Many Requests", 3))).isInstanceOf(OnRateLimited.class);
        assertThat(policies.forFailure(BotApiException.fromAnswer(502, "Bad Gateway", 0))).isInstanceOf(OnBotApiUnavailable.class);
        assertThat(policies.forFailure(BotApiException.network("connection reset"))).isInstanceOf(OnBotApiUnavailable.class);
        assertThat(policies.forFailure(BotApiException.notSent("connection refused"))).isInstanceOf(OnBotApiUnavailable.class);
        assertThat(policies.forFailure(new IllegalStateException("a bug"))).isInstanceOf(OnUnexpectedFailure.class);
    }

    @Test
    void policiesThatRememberWhenTheyLoggedAreKeptPerPoller() {
        Exception rejected = BotApiException.fromAnswer(401, "Unauthorized", 0);
        assertThat(policies.forFailure(rejected)).isSameAs(policies.forFailure(rejected));
        assertThat(new PollFailurePolicies().forFailure(rejected)).isNotSameAs(policies.forFailure(rejected));
    }
}
