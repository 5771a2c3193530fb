package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import java.time.Duration;
import org.junit.jupiter.api.Test;

class SendLimiterTest {
    @Test
    void sendsToOneChatAreSpacedByTheChatLimitWhileOtherChatsGoAhead() throws Exception {
        SendLimiter limiter = new SendLimiter(1000, 2, 20);
        long start = System.nanoTime();
        for (int i = 0; i < 4; i++) {
            limiter.acquire("42");
        }
        long oneChat = System.nanoTime() - start;
        start = System.nanoTime();
        for (int chat = 0; chat < 20; chat++) {
            limiter.acquire(Integer.toString(chat));
        }
        long manyChats = System.nanoTime() - start;

        // Four sends to one chat at 2/s: three gaps of 500 ms. Twenty chats at 1000/s per bot: about 20 ms.
        assertThat(Duration.ofNanos(oneChat)).isGreaterThanOrEqualTo(Duration.ofMillis(1490));
        assertThat(Duration.ofNanos(manyChats)).isLessThan(Duration.ofMillis(1000));
    }

    @Test
    void theBotLimitHoldsAcrossChatsAndGroupsUseTheirPerMinuteLimit() throws Exception {
        SendLimiter limiter = new SendLimiter(20, 1000, 600);
        long start = System.nanoTime();
        for (int chat = 0; chat < 5; chat++) {
            limiter.acquire(Integer.toString(chat));
        }
        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("5 sends at 20/s per bot").isGreaterThanOrEqualTo(Duration.ofMillis(190));

        SendLimiter groups = new SendLimiter(1000, 1000, 600);
        start = System.nanoTime();
        groups.acquire("-100123");
        groups.acquire("-100123");
        groups.acquire("-100123");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("600/min: 100 ms apart").isGreaterThanOrEqualTo(Duration.ofMillis(190));
    }

    @Test
    void aRateLimitedChatWaitsOutRetryAfter() throws Exception {
        SendLimiter limiter = new SendLimiter(1000, 1000, 1000);
        limiter.pause("7", Duration.ofMillis(300));
        long start = System.nanoTime();
        limiter.acquire("7");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).isGreaterThanOrEqualTo(Duration.ofMillis(290));
    }
}
