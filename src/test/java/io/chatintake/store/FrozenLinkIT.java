package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.Await;
import io.chatintake.testkit.ClusterTemplate;
import io.chatintake.testkit.FreezingProxy;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A replica cut off from the database: two runners under Telegram and webhook load, each reaching
 * PostgreSQL through its own {@link FreezingProxy}, and the link of the one polling the bot frozen
 * (packets held, no reset) for 60 s. It stops polling before its lease can expire, by its own
 * clock, so the other takes the bot over within the lease plus 10 s and the two never poll at
 * once, and its claimed work within the claim time plus 10 s; nothing confirmed at Telegram is unstored, nothing is lost or doubled, no text is answered
 * twice; after the thaw the cut-off runner handles work again without a restart.
 */
class FrozenLinkIT {
    private static final Duration FREEZE = Duration.ofSeconds(60);
    /** {@link RunnerProcess#pollingEnv}'s lease: short, so that the test is. */
    private static final Duration LEASE = Duration.ofSeconds(8);
    private static final String TAKEN = "polling as ";
    /** RunnersUnderLoad's claim time; claims of a silent runner go much sooner, after 4 heartbeats of 2 s. */
    private static final Duration CLAIM = Duration.ofSeconds(45);

    @TempDir
    Path work;

    /**
     * The runner's database through {@code link}, with statement and socket bounds in the shipped
     * proportion to the test's short lease (the shipped ones are 30 s and 45 s for a 60 s lease).
     */
    private static Map<String, String> through(EmbeddedDatabase database, FreezingProxy link) {
        return Map.of("CHAT_INTAKE_DB_URL", database.jdbcUrl().replace(":" + database.port() + "/", ":" + link.port() + "/"),
                "CHAT_INTAKE_DB_STATEMENT_TIMEOUT_SECONDS", "5",
                "CHAT_INTAKE_DB_SOCKET_TIMEOUT_SECONDS", "8");
    }

    private static long times(String text, String part) {
        return text.lines().filter(line -> line.contains(part)).count();
    }

    @Test
    void aRunnerCutOffFor60sStopsOnItsOwnClockIsTakenOverAndRejoinsWithoutARestart() throws Exception {
        try (EmbeddedDatabase database = ClusterTemplate.start(work.resolve("pg"), RunnerProcess.freePort(), true);
             FreezingProxy linkA = FreezingProxy.to(database.port());
             FreezingProxy linkB = FreezingProxy.to(database.port());
             RunnersUnderLoad load = new RunnersUnderLoad(work, database, through(database, linkA), through(database, linkB))) {
            DataSource db = Sql.dataSource(database);
            load.auditConfirmations(db);
            Await.until("the bot polled and its updates stored", Duration.ofSeconds(30),
                    () -> Sql.count(db, "SELECT count(*) FROM telegram_update") > 20);
            boolean firstPolls = Sql.string(db, "SELECT holder FROM telegram_poll_lease").contains(":" + load.first.pid() + ":");
            RunnerProcess cut = firstPolls ? load.first : load.second;
            RunnerProcess other = firstPolls ? load.second : load.first;
            FreezingProxy link = firstPolls ? linkA : linkB;
            long takenBefore = times(other.output(), TAKEN);
            String cutProcess = Sql.string(db, "SELECT process_id FROM runner_heartbeat WHERE pid = " + cut.pid());

            link.freeze();
            long frozenAt = System.nanoTime();
            String claimedByCut = "SELECT count(*) FROM work_item WHERE state = 'running' AND claimed_by = '" + cutProcess + "'";
            long heldAtFreeze = Sql.count(db, claimedByCut);
            Await.until("the other runner polls the bot", LEASE.plusSeconds(10), () -> times(other.output(), TAKEN) > takenBefore);
            Duration takenOver = Duration.ofNanos(System.nanoTime() - frozenAt);
            Await.until("the cut-off runner's claimed work taken over", CLAIM.plusSeconds(10).minusNanos(System.nanoTime() - frozenAt),
                    () -> Sql.count(db, claimedByCut) == 0);
            cut.awaitOutput("cut off from the database: stopped polling bot", FREEZE);
            cut.awaitOutput("cut off from the database: stopped starting handler runs", FREEZE);
            // The freeze lasts its full length: the runner cut off must neither exit nor act meanwhile.
            Await.until("the link frozen for " + FREEZE.toSeconds() + " s", FREEZE.plusSeconds(30),
                    () -> System.nanoTime() - frozenAt >= FREEZE.toNanos());
            String thawedAt = Sql.string(db, "SELECT now()::text");
            link.thaw();

            // Its late renewal refused by the fencing token: the lease is the other's now.
            cut.awaitOutput("database reachable again: telegram bot", Duration.ofSeconds(60));
            assertThat(cut.output()).contains("another process took its poll lease over meanwhile (fencing token");
            Await.until("the runner cut off handles work again, not restarted", Duration.ofSeconds(60), () -> Sql.count(db,
                    "SELECT count(*) FROM work_run WHERE process = '" + cutProcess + "' AND finished_at > '" + thawedAt + "'") > 0);
            load.stopLoadAndAwaitSettled(db);

            String brought = load.assertNothingLostOrDoubledButAmbiguous(db);
            assertThat(load.polls()).as("never two pollers of the bot at once").startsWith("1 at once, 0 displaced");
            assertThat(cut.output()).as("expected failures are one line each").doesNotContain("\tat ");
            System.out.printf("frozen link: bot taken over in %d ms (lease %d s), %d claimed item(s) taken over; %s; polls: %s%n",
                    takenOver.toMillis(), LEASE.toSeconds(), heldAtFreeze, brought, load.polls());
        }
    }
}
