package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Settings;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.time.Duration;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.util.Set;
import java.util.TreeSet;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code telegram pause|resume --bot NAME} and {@code work pause|resume --kind K}: what they print,
 * the {@code operator_action} row each keeps (with --by, or the OS user), and what the status page
 * then shows: what is paused, since when and by whom, with the button that undoes it.
 */
@ExtendWith(TestDatabase.class)
class PauseCommandTest {
    private final ByteArrayOutputStream printed = new ByteArrayOutputStream();
    private final PrintStream out = new PrintStream(printed, true, StandardCharsets.UTF_8);

    @Test
    void pauseAndResumeOfABotPrintWhatChangedAndEachIsRecorded(DataSource db) {
        Sql.execute(db, "INSERT INTO telegram_checkpoint (bot_id, bot_name, next_offset) VALUES (111, 'main', 5001)");
        TelegramCommands telegram = new TelegramCommands(TestDatabase.commandSettings(), out);

        assertThat(telegram.run(List.of("pause", "--bot", "main", "--by", "alice"))).isZero();
        assertThat(telegram.run(List.of("pause", "--bot", "main", "--by", "bob"))).as("paused already: nothing changed").isEqualTo(1);
        assertThat(telegram.run(List.of("status"))).isZero();
        assertThat(telegram.run(List.of("resume", "--bot", "main", "--by", "bob"))).isZero();
        assertThat(telegram.run(List.of("resume", "--bot", "main", "--by", "bob"))).as("not paused: nothing changed").isEqualTo(1);

        String said = printed.toString(StandardCharsets.UTF_8);
        assertThat(said).contains("telegram bot main paused by alice (next offset 5001): no getUpdates until"
                + " `telegram resume --bot main`; the offset stays as it is\n");
        assertThat(said).containsPattern("telegram bot main is paused already \\(paused by alice since \\S+Z\\); nothing changed\n");
        assertThat(said).containsPattern("  paused: +by alice since \\S+Z \\(telegram resume --bot main\\)\n");
        assertThat(said).containsPattern("telegram bot main resumed by bob \\(paused by alice since \\S+Z; next offset 5001\\)\n");
        assertThat(said).contains("telegram bot main is not paused; nothing changed\n");
        assertThat(Sql.rows(db, "SELECT acted_by, action, target FROM operator_action ORDER BY id")).containsExactly(
                List.of("alice", "pause-bot", "telegram bot main"), List.of("bob", "pause-bot", "telegram bot main"),
                List.of("bob", "resume-bot", "telegram bot main"), List.of("bob", "resume-bot", "telegram bot main"));
        assertThat(Sql.string(db, "SELECT outcome FROM operator_action WHERE id = 3")).startsWith("telegram bot main resumed by bob");
        assertThat(Sql.count(db, "SELECT count(*) FROM operator_pause")).isZero();
        assertThat(Sql.count(db, "SELECT next_offset FROM telegram_checkpoint")).as("the offset untouched").isEqualTo(5001);
    }

    @Test
    void pauseAndResumeOfAKindAreRecordedUnderTheOsUserWithoutBy(DataSource db) {
        Sql.execute(db, "INSERT INTO work_item (kind, source_key, source_id) SELECT 'album-child', 'a:' || i, i FROM generate_series(1, 3) i");
        WorkCommands work = new WorkCommands(TestDatabase.commandSettings(), out);
        String user = System.getProperty("user.name");

        assertThat(work.run(List.of("pause", "--kind", "album-child"))).isZero();
        assertThat(work.run(List.of("status"))).isZero();
        assertThat(work.run(List.of("resume", "--kind", "album-child"))).isZero();

        String said = printed.toString(StandardCharsets.UTF_8);
        assertThat(said).contains("work kind album-child paused by " + user + " (3 unfinished item(s)): no item of it is claimed until"
                + " `work resume --kind album-child`; new items are still stored\n");
        assertThat(said).containsPattern("paused kinds \\(.*\\):\n  album-child, by " + user + " since \\S+Z\n");
        assertThat(said).containsPattern("work kind album-child resumed by " + user + " \\(paused by " + user
                + " since \\S+Z; 3 unfinished item\\(s\\)\\)\n");
        assertThat(Sql.rows(db, "SELECT acted_by, action, target FROM operator_action ORDER BY id")).containsExactly(
                List.of(user, "pause-kind", "work kind album-child"), List.of(user, "resume-kind", "work kind album-child"));
    }

    @Test
    void theStatusPageShowsWhatIsPausedSinceWhenAndByWhomWithResumeButtonsAndPauseButtonsForTheRest(DataSource db) throws Exception {
        Sql.execute(db, """
                INSERT INTO telegram_checkpoint (bot_id, bot_name, next_offset, last_poll_at) VALUES (111, 'main', 5001, now()),
                                                                                                   (222, 'sales', 7, now());
                INSERT INTO telegram_poll_lease (bot_id, holder, fencing_token, expires_at) VALUES (111, 'host-a:1:x', 1, now() + interval '1 minute');
                INSERT INTO work_item (kind, source_key, source_id) VALUES ('unifyport-event', 'u:1', 1);
                INSERT INTO operator_pause (subject, name, paused_at, paused_by) VALUES
                    ('telegram-bot', 'main', now() - interval '21 hours', 'Alice <on call>'),
                    ('work-kind', 'album-child', now() - interval '90 seconds', 'bob')""");
        StatusReport report = new StatusReport(db, Settings.of(new HashMap<>()), Duration.ofSeconds(10), "test",
                () -> new TreeSet<>(Set.of("album-child")));

        String html = report.render(Map.of(), new StatusReport.Viewer("csrf-1", "carol", 0, 0));

        List<String> main = StatusPageTest.cells(html, "bot-pause-main");
        assertThat(main.subList(0, 2)).containsExactly("main", "paused");
        assertThat(main.get(2)).endsWith("(21 h ago)");
        assertThat(main.get(3)).isEqualTo("Alice <on call>");
        assertThat(html).contains("Alice &lt;on call&gt;").doesNotContain("<on call>");
        assertThat(StatusPageTest.cells(html, "bot-main").get(2)).as("the bots table says so too").isEqualTo("paused");
        assertThat(StatusPageTest.cells(html, "bot-pause-sales").subList(0, 4)).containsExactly("sales", "not paused", "-", "-");
        List<String> albums = StatusPageTest.cells(html, "kind-pause-album-child");
        assertThat(albums.subList(0, 2)).containsExactly("album-child", "paused");
        assertThat(albums.get(2)).matches(".* UTC \\((9\\d|1\\d\\d) s ago\\)");
        assertThat(albums.get(3)).isEqualTo("bob");
        assertThat(StatusPageTest.cells(html, "kind-pause-unifyport-event").subList(0, 4)).as("a kind with work stored")
                .containsExactly("unifyport-event", "not paused", "-", "-");
        assertThat(html).as("a kind without a handler here has nothing to pause").doesNotContain("kind-pause-attachment");
        assertThat(html).contains("<input type=\"hidden\" name=\"bot\" value=\"main\"><button id=\"resume-bot-main\">resume</button>")
                .contains("action=\"status/resume-kind\"").contains("<button id=\"resume-kind-album-child\">resume</button>")
                .contains("<button id=\"pause-bot-sales\">pause</button>")
                .contains("<button id=\"pause-kind-unifyport-event\">pause</button>");
        assertThat(html).contains("telegram bot main paused by Alice &lt;on call&gt; since ").contains("Telegram keeps updates 24 h")
                .contains("work kind album-child paused by bob since ");
    }
}
