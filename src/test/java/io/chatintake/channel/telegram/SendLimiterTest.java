package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.TestDatabase;
import io.chatintake.work.DeferReason;
import java.time.Duration;
import java.time.Instant;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(TestDatabase.class)
class SendLimiterTest {
    private static final Duration MAX_WAIT = Duration.ofMillis(250);

    @Test
    void aChatNotFreeYetIsDeferredToItsSlotAtOnceWhileOtherChatsGo() throws Exception {
        SendLimiter limiter = new SendLimiter(1000, 2, 20, MAX_WAIT, BotBudget.local());
        assertThat(limiter.take("42").deferred()).isFalse();
        limiter.sent("42");

        long start = System.nanoTime();
        SendLimiter.Slot again = limiter.take("42");
        assertThat(Duration.ofNanos(System.nanoTime() - start)).as("nobody waits for the chat").isLessThan(Duration.ofMillis(100));
        assertThat(again.deferral()).isEqualTo(DeferReason.CHAT_LIMIT);
        assertThat(again.until()).isBetween(Instant.now().plusMillis(300), Instant.now().plusMillis(520));
        for (int chat = 0; chat < 20; chat++) {
            assertThat(limiter.take(Integer.toString(chat)).deferred()).isFalse();
        }
    }

    @Test
    void theBotsSlotIsWaitedForWithinTheWaitAndDeferredBeyondIt() throws Exception {
        // 4 a second, paced at 0.9: 278 ms apart, beyond the 250 ms wait; 10 a second: 111 ms, within it.
        SendLimiter slow = new SendLimiter(4, 1000, 600, MAX_WAIT, BotBudget.local());
        assertThat(slow.take("1").waitNanos()).isLessThan(TimeUnit.MILLISECONDS.toNanos(20));
        SendLimiter.Slot beyond = slow.take("2");
        assertThat(beyond.deferral()).isEqualTo(DeferReason.BOT_LIMIT);
        assertThat(beyond.until()).isAfter(Instant.now().plusMillis(150));

        SendLimiter fast = new SendLimiter(10, 1000, 600, MAX_WAIT, BotBudget.local());
        fast.take("1");
        SendLimiter.Slot within = fast.take("2");
        assertThat(within.deferred()).as("the next slot is close: waited for").isFalse();
        assertThat(within.waitNanos()).isPositive().isLessThanOrEqualTo(MAX_WAIT.toNanos());
    }

    @Test
    void groupsUseTheirPerMinuteLimitAndA429HoldsItsChatUntilRetryAfter() throws Exception {
        SendLimiter limiter = new SendLimiter(1000, 1000, 20, MAX_WAIT, BotBudget.local());
        limiter.take("-100123");
        limiter.sent("-100123");
        assertThat(limiter.take("-100123").until()).as("20 a minute: 3 s apart").isAfter(Instant.now().plusMillis(2500));

        limiter.pause("7", Duration.ofSeconds(5));
        assertThat(limiter.take("7").deferral()).isEqualTo(DeferReason.CHAT_LIMIT);
    }

    @Test
    void processesSharingTheBotsBudgetInTheDatabaseShareItsSlots() throws Exception {
        long gap = BotBudget.gap(2);
        SharedBotBudget one = new SharedBotBudget(TestDatabase.dataSource(), "shared");
        SharedBotBudget other = new SharedBotBudget(TestDatabase.dataSource(), "shared");
        long maxWait = MAX_WAIT.toNanos();
        long slack = TimeUnit.MILLISECONDS.toNanos(20);

        long first = one.take(gap, maxWait);
        long firstAt = System.nanoTime() + first;
        long refused = other.take(gap, maxWait);
        long second = other.take(gap, TimeUnit.SECONDS.toNanos(2));
        long secondAt = System.nanoTime() + second;

        assertThat(first).isLessThan(slack);
        assertThat(refused).as("the other process's next slot is a gap off: beyond the wait, none taken").isGreaterThan(maxWait);
        assertThat(secondAt - firstAt).as("its slot follows the first process's by a gap").isGreaterThan(gap - slack);
        assertThat(new SharedBotBudget(TestDatabase.dataSource(), "another bot").take(gap, maxWait))
                .as("each bot has its own").isLessThan(slack);
    }
}
