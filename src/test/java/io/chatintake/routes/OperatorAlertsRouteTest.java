package io.chatintake.routes;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.chatintake.ops.OperatorAlertLedger;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.Sql;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import org.apache.camel.Exchange;
import org.apache.camel.builder.AdviceWith;
import org.apache.camel.component.mock.MockEndpoint;
import org.junit.jupiter.api.Test;

/**
 * routes/OperatorAlerts.java (Java DSL): each check records the findings it sees in PostgreSQL and
 * sends to direct:operator-alert-send (a mock here) one message listing what started and what is
 * over since the previous message, keyed by the message for the effect guard.
 */
class OperatorAlertsRouteTest extends RouteTestSupport {

    @Override
    protected Map<String, String> settings() {
        // A transaction open 2 s is old here: no test of this class holds one but the one that means to.
        return Map.of("operator-alerts.telegram-chat-id", "-100555", "operator-alerts.min-seconds-between-messages", "0",
                "chat-intake.db.open-transaction-warn-seconds", "2");
    }

    @Test
    void aFindingSendsOneMessageWhenItStartsNoneWhileItLastsAndOneWhenItIsOver() throws Exception {
        Sql.execute(db, "INSERT INTO telegram_checkpoint (bot_id, bot_name, last_poll_at) VALUES (1, 'main', now() - interval '6 minutes')");
        MockEndpoint send = checking();
        context.start();

        check();
        check();
        Sql.execute(db, "UPDATE telegram_checkpoint SET last_poll_at = now()");
        check();
        check();

        List<Exchange> sent = send.getReceivedExchanges();
        assertThat(sent).extracting(e -> e.getMessage().getBody(String.class)).satisfiesExactly(
                start -> assertThat(start).matches("STARTED: chat-intake: telegram bot 'main' \\(1\\) has not polled since .*telegram status"),
                end -> assertThat(end).startsWith("OVER after 0 min: chat-intake: telegram bot 'main' (1) has not polled since"));
        assertThat(sent).extracting(e -> e.getMessage().getHeader("ChatIntakeWorkIdempotencyKey", String.class))
                .allMatch(key -> key.matches("operator-alert-message:\\d+")).doesNotHaveDuplicates();
        assertThat(Sql.rows(db, "SELECT finding, cleared_at IS NOT NULL, start_message_id IS NOT NULL, end_message_id IS NOT NULL"
                + " FROM operator_finding")).containsExactly(List.of("bot-not-polling:1", true, true, true));
    }

    @Test
    void fiftyItemsParkedInAMinuteAreOneMessageWithTheirCount() throws Exception {
        Sql.execute(db, "INSERT INTO work_item (kind, source_key, source_id, state, attempts, last_error, updated_at)"
                + " SELECT 'telegram-update', '1:' || g, g, 'parked', 8, 'handler down', now() - make_interval(secs => 60 - g)"
                + " FROM generate_series(1, 50) g");
        MockEndpoint send = checking();
        context.start();

        check();
        Sql.execute(db, "INSERT INTO work_item (kind, source_key, source_id, state, attempts, last_error)"
                + " VALUES ('telegram-update', '1:51', 51, 'parked', 8, 'handler down')");
        check();

        assertThat(send.getReceivedExchanges()).extracting(e -> e.getMessage().getBody(String.class)).singleElement().asString()
                .startsWith("STARTED: chat-intake: 50 telegram-update work item(s) parked in the last 10 minutes; the latest, #")
                .contains("after 8 attempt(s): handler down", "work retry --kind telegram-update");
        assertThat(Sql.string(db, "SELECT text FROM operator_finding")).as("the open finding keeps the latest count")
                .startsWith("chat-intake: 51 telegram-update");
    }

    @Test
    void findingsStartingTogetherAreOneMessageAndOneStartingLaterTheNext() throws Exception {
        Sql.execute(db, "INSERT INTO telegram_gap (bot_id, from_update_id, to_update_id) VALUES (2, 4990, 4994)");
        Sql.execute(db, "INSERT INTO telegram_loss_window (bot_id, from_time, to_time) VALUES (2, now() - interval '2 days', now() - interval '1 day')");
        MockEndpoint send = checking();
        context.start();

        check();
        Sql.execute(db, "INSERT INTO telegram_gap (bot_id, from_update_id, to_update_id) VALUES (3, 10, 11)");
        check();

        assertThat(send.getReceivedExchanges()).hasSize(2);
        assertThat(send.getReceivedExchanges().get(0).getMessage().getBody(String.class))
                .contains("STARTED: chat-intake: telegram bot 2: updates 4990..4994 were confirmed outside this store")
                .contains("STARTED: chat-intake: telegram bot 2 may have lost updates between");
        assertThat(send.getReceivedExchanges().get(1).getMessage().getBody(String.class))
                .isEqualTo("STARTED: chat-intake: telegram bot 3: updates 10..11 were confirmed outside this store"
                        + " (another getUpdates caller: find and stop it)");
    }

    @Test
    void withTheShippedGapOfAMinuteWhatStartsWithinItWaitsForTheNextMessage() throws Exception {
        OperatorAlertLedger ledger = new OperatorAlertLedger(db);
        Duration minute = Duration.ofMinutes(1);
        ledger.observe(List.of(Map.of("finding", "a", "text", "A")));
        long first = ledger.next("operator-alert-send", minute).orElseThrow().id();
        ledger.sent(first);

        ledger.observe(List.of(Map.of("finding", "a", "text", "A"), Map.of("finding", "b", "text", "B")));
        ledger.observe(List.of(Map.of("finding", "b", "text", "B")));

        assertThat(ledger.next("operator-alert-send", minute)).as("within a minute of the last").isEmpty();
        Sql.execute(db, "UPDATE operator_alert_message SET created_at = created_at - interval '61 seconds'");
        assertThat(ledger.next("operator-alert-send", minute)).get().extracting(OperatorAlertLedger.Message::text)
                .isEqualTo("OVER after 0 min: A\nSTARTED: B");
    }

    @Test
    void workDueLongerThanTheLimitWhileIntakeIsHealthyIsAFindingNamingItsKindItsWaitAndTheHoldingBack() throws Exception {
        pending("telegram-update", "305 seconds");
        pending("unifyport-event", "30 seconds");
        Sql.execute(db, "INSERT INTO telegram_checkpoint (bot_id, bot_name, last_poll_at) VALUES (1, 'main', now())");
        Sql.execute(db, "INSERT INTO runner_heartbeat (process_id, host, pid, held_back_since) VALUES ('p1', 'h', 1, now() - interval '80 seconds')");
        MockEndpoint send = checking();
        context.start();

        check();

        assertThat(send.getReceivedExchanges()).extracting(e -> e.getMessage().getBody(String.class)).singleElement().asString()
                .matches("STARTED: chat-intake: telegram-update work is not handled: its oldest due item has waited 30[5-9] s while"
                        + " intake is healthy; handling is held back for intake since \\d\\d:\\d\\d:\\d\\d UTC\\. .*work status");
    }

    @Test
    void workDueLongWhileABotsPollingHasStoppedIsNotAFindingOfItsOwnAndWhatIsPausedOnPurposeIsNone() throws Exception {
        pending("telegram-update", "10 minutes");
        pending("album-child", "1 hour");
        Sql.execute(db, "INSERT INTO telegram_checkpoint (bot_id, bot_name, last_poll_at) VALUES (1, 'main', now() - interval '10 minutes'),"
                + " (2, 'sales', now() - interval '20 hours')");
        Sql.execute(db, "INSERT INTO operator_pause (subject, name, paused_at, paused_by) VALUES"
                + " ('telegram-bot', 'sales', now() - interval '20 hours 1 minute', 'alice'),"
                + " ('work-kind', 'album-child', now() - interval '1 hour', 'carol')");
        MockEndpoint send = checking();
        context.start();

        check();

        assertThat(Sql.rows(db, "SELECT finding FROM operator_finding ORDER BY finding"))
                .containsExactly(List.of("bot-not-polling:1"), List.of("telegram-paused-20h:sales"));
        assertThat(send.getReceivedExchanges()).extracting(e -> e.getMessage().getBody(String.class)).singleElement().asString()
                .contains("STARTED: chat-intake: telegram bot 'main' (1) has not polled")
                .containsPattern("STARTED: chat-intake: telegram bot 'sales' has been paused since \\S+ \\S+ UTC by alice\\. Telegram keeps"
                        + " updates only 24 h: .* expire unseen from \\S+ \\S+ UTC\\. java -jar chat-intake.jar telegram resume --bot sales");
    }

    @Test
    void aSessionIdleInTransactionIsAFindingNamingItsBackendApplicationStateAndAge() throws Exception {
        Properties session = new Properties();
        if (((HikariDataSource) db).getUsername() != null) {
            session.setProperty("user", ((HikariDataSource) db).getUsername());
        }
        if (((HikariDataSource) db).getPassword() != null) {
            session.setProperty("password", ((HikariDataSource) db).getPassword());
        }
        session.setProperty("ApplicationName", "left-open");
        MockEndpoint send = checking();
        context.start();
        long pid;
        try (Connection left = DriverManager.getConnection(((HikariDataSource) db).getJdbcUrl(), session)) {
            left.setAutoCommit(false);
            try (Statement st = left.createStatement(); ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
                rs.next();
                pid = rs.getLong(1);
            }
            Await.until("the transaction is older than the threshold", Duration.ofSeconds(30), () -> Sql.count(db,
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = " + pid + " AND xact_start < clock_timestamp() - interval '3 seconds'") == 1);

            check();
        }
        Await.until("the backend gone", Duration.ofSeconds(30),
                () -> Sql.count(db, "SELECT count(*) FROM pg_stat_activity WHERE pid = " + pid) == 0);
        check();

        assertThat(send.getReceivedExchanges()).extracting(e -> e.getMessage().getBody(String.class)).satisfiesExactly(
                start -> assertThat(start).matches("STARTED: chat-intake: database backend " + pid + " \\(application 'left-open', idle in"
                        + " transaction\\) has held a transaction open for \\d+ min: vacuum is held back until it ends"
                        + " \\(SELECT pg_terminate_backend\\(" + pid + "\\).*"),
                end -> assertThat(end).startsWith("OVER after 0 min: chat-intake: database backend " + pid));
    }

    /** One item of {@code kind}, due since {@code ago}. */
    private void pending(String kind, String ago) {
        Sql.execute(db, "INSERT INTO work_item (kind, source_key, source_id, next_attempt_at) VALUES ('" + kind + "', '" + kind
                + ":1', 1, now() - interval '" + ago + "')");
    }

    private void check() {
        template.sendBody("direct:check", null);
    }

    /** The route, checking when a test sends to direct:check; what it would send goes to the mock returned. */
    private MockEndpoint checking() throws Exception {
        loadRoutes("routes/OperatorAlerts.java");
        AdviceWith.adviceWith(context, "operator-alerts", r -> {
            r.replaceFromWith("direct:check");
            r.mockEndpointsAndSkip("direct:operator-alert-send");
        });
        return getMockEndpoint("mock:direct:operator-alert-send");
    }
}
