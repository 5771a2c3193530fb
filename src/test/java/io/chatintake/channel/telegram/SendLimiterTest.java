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
        SendLimiter limiter = new SendLimiter(9, 1000, 600, MAX_WAIT, BotBudget.local());
        // 9 a second, paced at 0.9: 123 ms apart; the slots within 250 ms are the first three.
        SendLimiter.Slot first = limiter.take("1");
        SendLimiter.Slot second = limiter.take("2");
        SendLimiter.Slot third = limiter.take("3");
        SendLimiter.Slot fourth = limiter.take("4");
        assertThat(first.waitNanos()).isLessThan(TimeUnit.MILLISECONDS.toNanos(20));
        assertThat(second.deferred()).isFalse();
        assertThat(third.deferred()).isFalse();
        assertThat(third.waitNanos()).isBetween(TimeUnit.MILLISECONDS.toNanos(200), MAX_WAIT.toNanos());
        assertThat(fourth.deferral()).isEqualTo(DeferReason.BOT_LIMIT);
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
        long gap = BotBudget.gap(9);
        SharedBotBudget one = new SharedBotBudget(TestDatabase.dataSource(), "shared");
        SharedBotBudget other = new SharedBotBudget(TestDatabase.dataSource(), "shared");
        long maxWait = MAX_WAIT.toNanos();

        long a = one.take(gap, maxWait);
        long b = other.take(gap, maxWait);
        long c = one.take(gap, maxWait);
        long d = other.take(gap, maxWait);

        assertThat(a).isLessThan(TimeUnit.MILLISECONDS.toNanos(20));
        assertThat(b).as("the second process's first slot follows the first's").isGreaterThan(gap - TimeUnit.MILLISECONDS.toNanos(30));
        assertThat(c).isBetween(2 * gap - TimeUnit.MILLISECONDS.toNanos(40), maxWait);
        assertThat(d).as("no slot within the wait: how far off the next is").isGreaterThan(maxWait);
        assertThat(new SharedBotBudget(TestDatabase.dataSource(), "another bot").take(gap, maxWait))
                .as("each bot has its own").isLessThan(TimeUnit.MILLISECONDS.toNanos(20));
    }
}
