package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** {@code albums status} names the way out of a conflict; {@code albums resolve} takes it and records who. */
@ExtendWith(TestDatabase.class)
class AlbumCommandsTest {
    private final ByteArrayOutputStream printed = new ByteArrayOutputStream();
    private final PrintStream out = new PrintStream(printed, true, StandardCharsets.UTF_8);

    @Test
    void resolveClearsNeedsPersonAndRecordsWhoAndWhen(DataSource db) {
        Sql.execute(db, "INSERT INTO album (album_key, workspace, provider, account_id, conversation_id, album_id, decided_version,"
                + " needs_person) VALUES ('w|p|a|c|al1', 'w', 'p', 'a', 'c', 'al1', 1, true)");
        AlbumCommands albums = new AlbumCommands(TestDatabase.commandSettings(), out);

        assertThat(albums.status()).isZero();
        assertThat(printed.toString(StandardCharsets.UTF_8))
                .contains("conflicts awaiting a person (albums resolve ALBUM_KEY when settled): 1").contains("w|p|a|c|al1");

        assertThat(albums.resolve("w|p|a|c|al1", "carol")).isZero();
        assertThat(Sql.string(db, "SELECT needs_person || ' ' || resolved_by || ' ' || (resolved_at > now() - interval '1 minute')"
                + " FROM album")).isEqualTo("false carol true");
        assertThat(albums.resolve("w|p|a|c|al1", "carol")).as("nothing left to resolve").isEqualTo(1);
        assertThat(printed.toString(StandardCharsets.UTF_8)).contains("album w|p|a|c|al1 resolved by carol");
    }
}
