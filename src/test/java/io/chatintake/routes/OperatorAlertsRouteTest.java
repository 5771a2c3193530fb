package io.chatintake.routes;

import com.zaxxer.hikari.HikariDataSource;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.Sql;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Duration;
import java.util.Map;
import java.util.Properties;
import org.apache.camel.builder.AdviceWith;
import org.apache.camel.component.mock.MockEndpoint;
import org.junit.jupiter.api.Test;

/**
 * routes/OperatorAlerts.java (Java DSL): each check sends every new finding (a parked work item,
 * work left waiting while intake is healthy) to direct:operator-alert-send (a mock here), keyed by
 * the finding.
 */
class OperatorAlertsRouteTest extends RouteTestSupport {

    @Override
    protected Map<String, String> settings() {
        // A transaction open 2 s is old here: no test of this class holds one but the one that means to.
        return Map.of("operator-alerts.telegram-chat-id", "-100555", "chat-intake.db.open-transaction-warn-seconds", "2");
    }

    @Test
    void aCheckSendsEachNewFinding() throws Exception {
        long id = Sql.count(db, "INSERT INTO work_item (kind, source_key, source_id, state, attempts, last_error)"
                + " VALUES ('telegram-update', '1:5', 5, 'parked', 8, 'handler down') RETURNING id");
        MockEndpoint send = checking();
        send.expectedMessageCount(1);
        send.message(0).header("IdempotencyKey").startsWith("work-parked:" + id + ":");
        send.message(0).body().contains("parked after 8 attempt(s): handler down");
        context.start();

        template.sendBody("direct:check", null);

        send.assertIsSatisfied();
    }

    @Test
    void workDueLongerThanTheLimitWhileIntakeIsHealthyIsAnAlertNamingItsKindItsWaitAndTheHoldingBack() throws Exception {
        pending("telegram-update", "75 seconds");
        pending("unifyport-event", "30 seconds");
        Sql.execute(db, "INSERT INTO telegram_checkpoint (bot_id, bot_name, last_poll_at) VALUES (1, 'main', now())");
        Sql.execute(db, "INSERT INTO runner_heartbeat (process_id, host, pid, held_back_since) VALUES ('p1', 'h', 1, now() - interval '80 seconds')");
        MockEndpoint send = checking();
        send.expectedMessageCount(1);
        send.message(0).header("IdempotencyKey").startsWith("work-waiting:telegram-update:");
        send.message(0).body().regex("chat-intake: telegram-update work is not handled: its oldest due item has waited 7[5-9] s while"
                + " intake is healthy; handling is held back for intake since \\d\\d:\\d\\d:\\d\\d UTC\\. .*work status");
        context.start();

        template.sendBody("direct:check", null);

        send.assertIsSatisfied();
    }

    @Test
    void workDueLongerThanTheLimitWithoutHoldingBackSaysHandlingIsNotHeldBack() throws Exception {
        pending("album-child", "2 minutes");
        Sql.execute(db, "INSERT INTO runner_heartbeat (process_id, host, pid, beat_at, held_back_since)"
                + " VALUES ('dead', 'h', 1, now() - interval '1 hour', now() - interval '1 hour')");
        MockEndpoint send = checking();
        send.expectedMessageCount(1);
        send.message(0).body().contains("album-child work is not handled");
        send.message(0).body().contains("handling is not held back (handlers stalled?)");
        context.start();

        template.sendBody("direct:check", null);

        send.assertIsSatisfied();
    }

    @Test
    void workDueLongerThanTheLimitWhileABotsPollingHasStoppedIsNotAnAlertOfItsOwn() throws Exception {
        pending("telegram-update", "10 minutes");
        Sql.execute(db, "INSERT INTO telegram_checkpoint (bot_id, bot_name, last_poll_at) VALUES (1, 'main', now() - interval '10 minutes')");
        MockEndpoint send = checking();
        send.expectedMessageCount(1);
        send.message(0).header("IdempotencyKey").startsWith("bot-polling-stopped:1:");
        context.start();

        template.sendBody("direct:check", null);

        send.assertIsSatisfied();
    }

    @Test
    void aBotPausedFor20HoursIsOneAlertSayingTelegramKeepsUpdates24HoursAndWhatIsPausedOnPurposeIsNoOtherFinding() throws Exception {
        Sql.execute(db, "INSERT INTO telegram_checkpoint (bot_id, bot_name, last_poll_at) VALUES (1, 'main', now() - interval '20 hours'),"
                + " (2, 'sales', now() - interval '19 hours')");
        Sql.execute(db, "INSERT INTO operator_pause (subject, name, paused_at, paused_by) VALUES"
                + " ('telegram-bot', 'main', now() - interval '20 hours 1 minute', 'alice'),"
                + " ('telegram-bot', 'sales', now() - interval '19 hours 59 minutes', 'bob'),"
                + " ('work-kind', 'album-child', now() - interval '1 hour', 'carol')");
        pending("album-child", "1 hour");
        MockEndpoint send = checking();
        send.expectedMessageCount(1);
        send.message(0).header("IdempotencyKey").startsWith("telegram-paused-20h:main:");
        send.message(0).body().regex("chat-intake: telegram bot 'main' has been paused since \\S+ \\S+ UTC by alice\\. Telegram keeps"
                + " updates only 24 h: .* expire unseen from \\S+ \\S+ UTC\\. java -jar chat-intake.jar telegram resume --bot main");
        context.start();

        template.sendBody("direct:check", null);

        send.assertIsSatisfied();
    }

    @Test
    void aSessionIdleInTransactionIsAnAlertNamingItsBackendApplicationStateAndAge() throws Exception {
        Properties session = new Properties();
        if (((HikariDataSource) db).getUsername() != null) {
            session.setProperty("user", ((HikariDataSource) db).getUsername());
        }
        if (((HikariDataSource) db).getPassword() != null) {
            session.setProperty("password", ((HikariDataSource) db).getPassword());
        }
        session.setProperty("ApplicationName", "left-open");
        try (Connection left = DriverManager.getConnection(((HikariDataSource) db).getJdbcUrl(), session)) {
            left.setAutoCommit(false);
            long pid;
            try (Statement st = left.createStatement(); ResultSet rs = st.executeQuery("SELECT pg_backend_pid()")) {
                rs.next();
                pid = rs.getLong(1);
            }
            Await.until("the transaction is older than the threshold", Duration.ofSeconds(30), () -> Sql.count(db,
                    "SELECT count(*) FROM pg_stat_activity WHERE pid = " + pid + " AND xact_start < clock_timestamp() - interval '3 seconds'") == 1);
            MockEndpoint send = checking();
            send.expectedMessageCount(1);
            send.message(0).header("IdempotencyKey").startsWith("open-transaction:" + pid + ":");
            send.message(0).body().regex("chat-intake: database backend " + pid + " \\(application 'left-open', idle in transaction\\)"
                    + " has held a transaction open for \\d+ min: vacuum is held back until it ends \\(SELECT pg_terminate_backend\\(" + pid + "\\).*");
            context.start();

            template.sendBody("direct:check", null);

            send.assertIsSatisfied();
        }
    }

    /** One item of {@code kind}, due since {@code ago}. */
    private void pending(String kind, String ago) {
        Sql.execute(db, "INSERT INTO work_item (kind, source_key, source_id, next_attempt_at) VALUES ('" + kind + "', '" + kind
                + ":1', 1, now() - interval '" + ago + "')");
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
