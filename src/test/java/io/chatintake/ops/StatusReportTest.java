package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Settings;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.time.Duration;
import java.util.Map;
import java.util.Set;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The status page from stored rows to HTML: a secret of this process's configuration or a media
 * URL's signature that reached a stored error or effect result is masked where the page shows it.
 */
@ExtendWith(TestDatabase.class)
class StatusReportTest {
    private static final String SIGNING_SECRET = "whsec-SECRET-report";

    @Test
    void storedErrorsAndResultsAreRedactedOnThePage(DataSource db) throws Exception {
        Sql.execute(db, """
                INSERT INTO work_item (kind, source_key, source_id, state, attempts, last_error)
                VALUES ('unifyport-event', 'up:1', 1, 'parked', 8, 'signed with %1$s, fetched https://media.example/f.jpg?sig=SIGNATURE');
                INSERT INTO outbound_effect (effect_key, state, result) VALUES ('send:1', 'started', 'answered <%1$s>');
                """.formatted(SIGNING_SECRET));
        StatusReport report = new StatusReport(db, Settings.of(Map.of("unifyport.signing-secrets", SIGNING_SECRET)), Duration.ofSeconds(10),
                "test", Set::of);

        String page = report.render(Map.of(), new StatusReport.Viewer(null, null, 0, 0));

        long id = Sql.count(db, "SELECT id FROM work_item");
        assertThat(StatusPageTest.cells(page, "parked-" + id).get(4))
                .isEqualTo("signed with [redacted], fetched https://media.example/f.jpg?[redacted]");
        assertThat(StatusPageTest.cells(page, "effect-send:1").get(3)).isEqualTo("answered <[redacted]>");
        assertThat(page).doesNotContain(SIGNING_SECRET).doesNotContain("SIGNATURE");
    }
}
