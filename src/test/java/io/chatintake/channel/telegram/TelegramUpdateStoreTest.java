package io.chatintake.channel.telegram;

import static io.chatintake.channel.telegram.TelegramIntake.count;
import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.chatintake.channel.ChildMessages;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.CachedPlan;
import io.chatintake.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.CompletionException;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(TestDatabase.class)
class TelegramUpdateStoreTest {
    private static final Duration LEASE = Duration.ofSeconds(30);

    @Test
    void aRedeliveredBatchStoresNothingTwice(DataSource dataSource) throws Exception {
        PollLease.Held lease = leaseAndCheckpoint(dataSource, 7);
        TelegramUpdateStore inbox = new TelegramUpdateStore(dataSource, ChildMessages.listener());
        List<BotApiClient.RawUpdate> batch = List.of(update(10, "a"), update(11, "b"));

        TelegramUpdateStore.StoredBatch first = inbox.store(lease, LEASE, batch);
        TelegramUpdateStore.StoredBatch again = inbox.store(lease, LEASE, batch);

        assertThat(first.stored()).hasSize(2);
        assertThat(first.nextOffset()).isEqualTo(12);
        assertThat(again.stored()).isEmpty();
        assertThat(again.duplicates()).isEqualTo(2);
        assertThat(count("SELECT count(*) FROM telegram_update")).isEqualTo(2);
        assertThat(count("SELECT duplicate_count FROM telegram_checkpoint WHERE bot_id = 7")).isEqualTo(2);
    }

    @Test
    void aSameIdWithAnotherPayloadIsANewUpdateInTheNextGeneration(DataSource dataSource) throws Exception {
        PollLease.Held lease = leaseAndCheckpoint(dataSource, 7);
        TelegramUpdateStore inbox = new TelegramUpdateStore(dataSource, ChildMessages.listener());
        inbox.store(lease, LEASE, List.of(update(5, "old")));

        TelegramUpdateStore.StoredBatch later = inbox.store(lease, LEASE, List.of(update(5, "new after ids restarted")));

        assertThat(later.stored()).singleElement().extracting(TelegramUpdateStore.StoredUpdate::generation).isEqualTo(1);
        assertThat(count("SELECT count(*) FROM telegram_update WHERE update_id = 5")).isEqualTo(2);
    }

    @Test
    void aPollerThatLostItsLeaseCannotStoreOrAdvance(DataSource dataSource) throws Exception {
        PollLease leases = new PollLease(dataSource);
        PollLease.Held stale = leaseAndCheckpoint(dataSource, 7);
        leases.release(stale);
        PollLease.Held current = leases.tryAcquire(7, "newcomer", LEASE).orElseThrow();
        assertThat(current.fencingToken()).isGreaterThan(stale.fencingToken());

        assertThatThrownBy(() -> new TelegramUpdateStore(dataSource, ChildMessages.listener()).store(stale, LEASE, List.of(update(1, "x"))))
                .isInstanceOf(TelegramUpdateStore.LeaseLostException.class)
                .hasMessageContaining("checkpoint not advanced");
        assertThat(count("SELECT count(*) FROM telegram_update")).isZero();
        assertThat(count("SELECT next_offset FROM telegram_checkpoint WHERE bot_id = 7")).isZero();
    }

    @Test
    void aBatchWaitingForATakeoverToCommitStoresNothingOnceItHas(DataSource dataSource) throws Exception {
        PollLease.Held lease = leaseAndCheckpoint(dataSource, 7);
        try (Connection takeover = dataSource.getConnection()) {
            takeover.setAutoCommit(false);
            try (Statement s = takeover.createStatement()) {
                s.executeUpdate("UPDATE telegram_poll_lease SET holder = 'newcomer', fencing_token = fencing_token + 1 WHERE bot_id = 7");
            }
            CompletableFuture<TelegramUpdateStore.StoredBatch> storing = CompletableFuture.supplyAsync(() -> {
                try {
                    return new TelegramUpdateStore(dataSource, ChildMessages.listener()).store(lease, LEASE, List.of(update(1, "x")));
                } catch (Exception e) {
                    throw new CompletionException(e);
                }
            });
            Await.until("the store to wait on the takeover's row lock", Duration.ofSeconds(10),
                    () -> count("SELECT count(*) FROM pg_stat_activity WHERE wait_event_type = 'Lock'") > 0);
            assertThat(storing).isNotDone();
            takeover.commit();

            assertThatThrownBy(storing::join).hasCauseInstanceOf(TelegramUpdateStore.LeaseLostException.class);
        }
        assertThat(count("SELECT count(*) FROM telegram_update")).isZero();
        assertThat(count("SELECT count(*) FROM telegram_gap")).isZero();
        assertThat(count("SELECT next_offset FROM telegram_checkpoint WHERE bot_id = 7")).isZero();
    }

    @Test
    void aLeaseIsNotTakenWhileItsHolderKeepsItAlive(DataSource dataSource) throws Exception {
        PollLease leases = new PollLease(dataSource);
        PollLease.Held holder = leases.tryAcquire(9, "a", LEASE).orElseThrow();

        assertThat(leases.tryAcquire(9, "b", LEASE)).isEmpty();
        assertThat(leases.renew(holder, LEASE)).isTrue();
        leases.release(holder);
        assertThat(leases.tryAcquire(9, "b", LEASE)).isPresent();
        assertThat(leases.renew(holder, LEASE)).as("the old holder's renewal fails after a takeover").isFalse();
    }

    /** The bot's checkpoint, and its poll lease for 30 s. */
    static PollLease.Held leaseAndCheckpoint(DataSource dataSource, long botId) throws Exception {
        new OffsetCheckpoint(dataSource).load(botId, "test");
        return new PollLease(dataSource).tryAcquire(botId, "test-holder", LEASE).orElseThrow();
    }

    private static BotApiClient.RawUpdate update(long id, String text) {
        return new BotApiClient.RawUpdate(id, "message", "{\"update_id\":" + id + ",\"message\":{\"text\":\"" + text + "\"}}");
    }

    @Test
    void aBatchLooksUpEachUpdateIdWhenItsPlanWasCachedWhileTheInboxWasSmall(DataSource dataSource) throws Exception {
        String update = "'{\"update_id\":' || g || ',\"message\":{\"message_id\":' || g || ',\"chat\":{\"id\":5},\"text\":\"hi\"}}'";
        try (java.sql.Connection c = dataSource.getConnection()) {
            CachedPlan.Explained insert = CachedPlan.afterGrowth(c, List.of("telegram_update"),
                    "INSERT INTO telegram_update (bot_id, update_id, update_type, payload)"
                            + " SELECT 1, g, 'message', (" + update + ")::jsonb FROM generate_series(1, 10) g",
                    TelegramUpdateStore.INSERT_BATCH, List.of("bigint", "bigint[]", "text[]", "text[]", "text[]", "text[]", "bigint"),
                    args(11, 12),
                    "INSERT INTO telegram_update (bot_id, update_id, update_type, payload)"
                            + " SELECT 1, g, 'message', (" + update + ")::jsonb FROM generate_series(13, 50000) g",
                    args(50001, 50002));
            // Two rows and their index entries; reading the bot's 50,000 stored updates takes thousands of blocks.
            assertThat(insert.blocks()).as(insert.plan()).isLessThan(150);
        }
    }

    /** A batch of two new updates of bot 1, as INSERT_BATCH's arguments. */
    private static String args(long first, long second) {
        String payload = "'{\"update_id\":%d,\"message\":{\"message_id\":%d,\"chat\":{\"id\":5},\"text\":\"hi\"}}'";
        return "1, ARRAY[%d, %d]::bigint[], ARRAY['message', 'message'], ARRAY[%s, %s], ARRAY[NULL, NULL]::text[], ARRAY[NULL, NULL]::text[], 1"
                .formatted(first, second, payload.formatted(first, first), payload.formatted(second, second));
    }
}
