package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.Await;
import io.chatintake.testkit.ClusterTemplate;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.nio.file.Path;
import java.time.Duration;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Two runners under Telegram and webhook load while every backend of one of them is killed
 * ({@code pg_terminate_backend}, as an administrator or a pooler restart does) every 5 s: each cut
 * transaction is tried again, so nothing is parked, lost or doubled, and no runner exits.
 */
class KilledBackendsIT {
    private static final Duration KILLING = Duration.ofSeconds(45);
    private static final Duration EVERY = Duration.ofSeconds(5);

    @TempDir
    Path work;

    @Test
    void killingOneRunnersBackendsEvery5SecondsCostsNothing() throws Exception {
        try (EmbeddedDatabase database = ClusterTemplate.start(work.resolve("pg"), RunnerProcess.freePort(), true);
             RunnersUnderLoad load = new RunnersUnderLoad(work, database)) {
            DataSource db = Sql.dataSource(database);
            // The pool names each backend after its process (host:pid:suffix): only this runner's.
            String itsBackends = "application_name LIKE 'chat-intake %:" + load.first.pid() + ":%'";
            long killed = 0;
            for (long end = System.nanoTime() + KILLING.toNanos(); System.nanoTime() < end; ) {
                Await.throughout("both runners up between kills", EVERY, () -> load.first.isAlive() && load.second.isAlive());
                killed += Sql.count(db, "SELECT count(*) FROM (SELECT pg_terminate_backend(pid) FROM pg_stat_activity WHERE "
                        + itsBackends + ") k");
            }
            load.stopLoadAndAwaitHandled(db);

            String brought = load.assertNothingLostDoubledOrParked(db);
            assertThat(killed).as("backends killed").isGreaterThan(9);
            System.out.printf("killed backends: %d backends killed; %s%n", killed, brought);
        }
    }
}
