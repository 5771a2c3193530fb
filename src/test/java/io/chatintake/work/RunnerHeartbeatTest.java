package io.chatintake.work;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.time.Instant;
import java.util.concurrent.atomic.AtomicReference;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** Each beat says since when the process holds its handlers back for intake, in the database's time, and clears it once it does not. */
@ExtendWith(TestDatabase.class)
class RunnerHeartbeatTest {

    @Test
    void aBeatWritesSinceWhenHandlingIsHeldBackAndTheNextBeatAfterItClearsIt(DataSource db) throws Exception {
        AtomicReference<Instant> heldBackSince = new AtomicReference<>(Instant.now().minusSeconds(40));
        RunnerHeartbeat heartbeat = new RunnerHeartbeat(db, "process-h", heldBackSince::get);

        heartbeat.beat();
        assertThat(heldBackSeconds(db)).as("first beat, the row inserted").isBetween(40L, 45L);
        heartbeat.beat();
        assertThat(heldBackSeconds(db)).as("the spell goes on: the same start").isBetween(40L, 45L);

        heldBackSince.set(null);
        heartbeat.beat();
        assertThat(Sql.count(db, "SELECT count(*) FROM runner_heartbeat WHERE process_id = 'process-h' AND held_back_since IS NULL"))
                .isOne();
    }

    private static long heldBackSeconds(DataSource db) {
        return Sql.count(db, "SELECT extract(epoch FROM now() - held_back_since)::bigint FROM runner_heartbeat WHERE process_id = 'process-h'");
    }
}
