package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** {@code work status} names each live process and, for one holding its handlers back for intake, since when. */
@ExtendWith(TestDatabase.class)
class WorkCommandsTest {
    private final ByteArrayOutputStream printed = new ByteArrayOutputStream();
    private final PrintStream out = new PrintStream(printed, true, StandardCharsets.UTF_8);

    @Test
    void statusShowsWhichLiveProcessHoldsHandlingBackAndSinceWhen(DataSource db) {
        Sql.execute(db, """
                INSERT INTO runner_heartbeat (process_id, host, pid, beat_at, held_back_since)
                VALUES ('host-a:41:held', 'host-a', 41, now(), now() - interval '40 seconds'),
                       ('host-b:42:free', 'host-b', 42, now(), NULL),
                       ('host-c:43:dead', 'host-c', 43, now() - interval '10 minutes', now() - interval '11 minutes')""");
        WorkCommands work = new WorkCommands(TestDatabase.commandSettings(), out);

        assertThat(work.run(List.of("status"))).isZero();

        String status = printed.toString(StandardCharsets.UTF_8);
        assertThat(status).containsPattern("  host-a:41:held on host-a, pid 41: handling held back for intake since"
                + " \\d{4}-\\d\\d-\\d\\d \\d\\d:\\d\\d:\\d\\d UTC \\(4[0-4] s\\)\n");
        assertThat(status).as("not held back: nothing said").contains("  host-b:42:free on host-b, pid 42\n");
        assertThat(status).as("a dead process is not live").doesNotContain("host-c");
    }
}
