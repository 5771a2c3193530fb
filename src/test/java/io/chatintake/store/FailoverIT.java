package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.Await;
import io.chatintake.testkit.ReplicatedPostgres;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.nio.file.Path;
import java.time.Duration;
import java.util.List;
import java.util.Set;
import java.util.concurrent.CompletableFuture;
import java.util.concurrent.TimeUnit;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two runners on a multi-host URL ({@code targetServerType=primary}) under Telegram and webhook
 * load, their primary killed ({@code kill -9} of its postmaster) and its synchronous standby
 * promoted: everything acknowledged before (updates confirmed to Telegram, deliveries answered
 * 2xx, effects recorded) is on the new primary once, each runner stores again within 15 s of the
 * promotion, and none exits.
 */
class FailoverIT {
    private static final Duration BACK_WITHIN = Duration.ofSeconds(15);
    private static final Duration WAIT = Duration.ofSeconds(60);

    @TempDir
    Path work;

    @Test
    void aKilledPrimaryFailsOverToItsSynchronousStandbyLosingNothingAcknowledged() throws Exception {
        try (ReplicatedPostgres pg = ReplicatedPostgres.start(work.resolve("pg"));
             RunnersUnderLoad load = new RunnersUnderLoad(work, pg.multiHostUrl(), pg.primary().user(), pg.primary().password(),
                     Duration.ZERO)) {
            DataSource primary = Sql.dataSource(pg.primary());
            DataSource standby = pg.standbyDataSource();
            Await.until("load stored on the primary", WAIT, () -> load.acknowledged().size() >= 30
                    && Sql.count(primary, "SELECT count(*) FROM outbound_effect WHERE state = 'done'") >= 30);

            assertThat(Sql.count(standby, "SELECT count(*) FROM pg_stat_activity WHERE application_name LIKE 'chat-intake %'"))
                    .as("no runner connected to the read-only standby").isZero();
            // What the primary holds at the kill, read once the standby has flushed all of it (a
            // commit is visible on a primary before its standby confirms it; its client waits).
            List<String> effectsDone = Sql.rows(primary, "SELECT effect_key FROM outbound_effect WHERE state = 'done'")
                    .stream().map(row -> (String) row.get(0)).toList();
            String lsn = Sql.string(primary, "SELECT pg_current_wal_flush_lsn()");
            Await.until("the standby flushed what was read", WAIT, () -> Sql.count(primary,
                    "SELECT count(*) FROM pg_stat_replication WHERE flush_lsn >= '" + lsn + "'") == 1);
            pg.killPrimary();
            Await.until("the standby lost its primary", WAIT, () -> Sql.count(standby,
                    "SELECT count(*) FROM pg_stat_wal_receiver WHERE status = 'streaming'") == 0);

            // Nothing can be acknowledged while there is no primary: what was, the old primary acknowledged.
            Set<String> acknowledged = load.acknowledged();
            long confirmed = load.confirmedThrough();
            int answers = load.answers();
            long storedBefore = Sql.count(standby, "SELECT coalesce(max(update_id), 0) FROM telegram_update");
            long promotedAt = System.nanoTime();
            // Should a runner not be back in time, what it was doing then (threads, log) goes with the failure.
            CompletableFuture<String> lateDiagnostics = CompletableFuture.supplyAsync(RunnerProcess::diagnostics,
                    CompletableFuture.delayedExecutor(BACK_WITHIN.toMillis(), TimeUnit.MILLISECONDS));
            pg.promoteStandby();

            Duration updatesAgain = until(promotedAt, "an update stored on the new primary", () -> Sql.count(standby,
                    "SELECT coalesce(max(update_id), 0) FROM telegram_update") > storedBefore);
            load.deliverAlbumPart(load.first, "failover", 1, 2);
            Duration firstAgain = Duration.ofNanos(System.nanoTime() - promotedAt);
            load.deliverAlbumPart(load.second, "failover", 2, 2);
            Duration secondAgain = Duration.ofNanos(System.nanoTime() - promotedAt);
            boolean backInTime = List.of(updatesAgain, firstAgain, secondAgain).stream().allMatch(d -> d.compareTo(BACK_WITHIN) <= 0);
            assertThat(List.of(updatesAgain, firstAgain, secondAgain))
                    .as("stored again after the promotion: poller, first, second%s", backInTime ? "" : lateDiagnostics.join())
                    .allSatisfy(d -> assertThat(d).isLessThanOrEqualTo(BACK_WITHIN));
            lateDiagnostics.cancel(false);
            Await.until("the album after the failover decided", WAIT, () -> Sql.count(standby,
                    "SELECT count(*) FROM album WHERE album_id = 'failover' AND decided_at IS NOT NULL") == 1);

            load.stopLoadAndAwaitHandled(standby);
            String brought = load.assertNothingLostDoubledOrParked(standby);
            assertThat(Sql.count(standby, "SELECT count(*) FROM telegram_update WHERE update_id <= " + confirmed))
                    .as("every update confirmed before the failover on the new primary").isEqualTo(confirmed);
            assertThat(Sql.rows(standby, "SELECT event_id FROM webhook_event").stream().map(row -> (String) row.get(0)).toList())
                    .as("every delivery answered 2xx before the failover on the new primary").containsAll(acknowledged);
            assertThat(Sql.rows(standby, "SELECT effect_key FROM outbound_effect WHERE state = 'done'").stream()
                    .map(row -> (String) row.get(0)).toList())
                    .as("every effect recorded before the failover on the new primary").containsAll(effectsDone);
            assertThat(Sql.count(standby, "SELECT count(*) FROM outbound_effect WHERE state <> 'done'")).as("no effect left unsettled").isZero();
            System.out.printf("failover: before it %d updates confirmed, %d deliveries acknowledged, %d effects recorded, %d answers;"
                            + " stored again %.1f s (poller), %.1f s (first), %.1f s (second) after the promotion; %s%n",
                    confirmed, acknowledged.size(), effectsDone.size(), answers, seconds(updatesAgain), seconds(firstAgain),
                    seconds(secondAgain), brought);
        }
    }

    private static Duration until(long since, String what, java.util.function.BooleanSupplier condition) {
        Await.until(what, WAIT, condition);
        return Duration.ofNanos(System.nanoTime() - since);
    }

    private static double seconds(Duration d) {
        return d.toMillis() / 1000.0;
    }
}
