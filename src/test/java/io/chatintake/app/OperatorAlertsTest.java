package io.chatintake.app;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The shipped Java DSL route file {@code routes/OperatorAlerts.java}, compiled at start, with its
 * sender {@code routes/operator-alerts.yaml}: a finding reaches the operator chat once when it
 * starts and once when it is over, and a restart does not send it again.
 */
@ExtendWith(TestDatabase.class)
class OperatorAlertsTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final String ROUTES = "file:routes/OperatorAlerts.java,file:routes/operator-alerts.yaml";

    @Test
    void whatStartsIsSentOnceAndARestartDoesNotSendItAgain(DataSource db) throws Exception {
        try (BotApiSimulator telegram = BotApiSimulator.start()) {
            String token = telegram.addBot(7001, "FAKE-alerts-token", "alerts_bot");
            Sql.execute(db, "INSERT INTO work_item (kind, source_key, source_id, state, attempts, last_error)"
                    + " VALUES ('telegram-update', '1:5', 5, 'parked', 8, 'IllegalStateException: handler down')");
            Sql.execute(db, "INSERT INTO telegram_loss_window (bot_id, from_time, to_time) VALUES (1, now() - interval '3 days', now() - interval '1 day')");
            Map<String, String> settings = Map.of("telegram.api-url", telegram.url(), "telegram.bot-token", token,
                    "operator-alerts.telegram-chat-id", "-100555", "operator-alerts.check-seconds", "1");

            try (WebhookServer product = WebhookServer.builder(db).withoutHttp().routeFiles(ROUTES).settings(settings).start()) {
                Await.until("the alert", WAIT, () -> telegram.sentMessages(token).size() == 1);
            }
            JsonNode first = telegram.sentMessages(token).get(0);
            assertThat(first.path("chat_id").asText()).isEqualTo("-100555");
            assertThat(first.path("text").asText()).as("both findings in one message")
                    .contains("STARTED: chat-intake: 1 telegram-update work item(s) parked", "after 8 attempt(s)", "handler down")
                    .contains("STARTED: chat-intake: telegram bot 1 may have lost updates");

            Sql.execute(db, "UPDATE operator_alert_message SET created_at = created_at - interval '1 minute'");
            Sql.execute(db, "INSERT INTO telegram_gap (bot_id, from_update_id, to_update_id) VALUES (2, 4990, 4994)");
            try (WebhookServer restarted = WebhookServer.builder(db).withoutHttp().routeFiles(ROUTES).settings(settings).start()) {
                Await.until("the new finding", WAIT, () -> telegram.sentMessages(token).size() >= 2);
            }
            List<JsonNode> all = telegram.sentMessages(token);
            assertThat(all).as("the earlier findings were not sent again").hasSize(2);
            assertThat(all.get(1).path("text").asText())
                    .isEqualTo("STARTED: chat-intake: telegram bot 2: updates 4990..4994 were confirmed outside this store"
                            + " (another getUpdates caller: find and stop it)");
            assertThat(Sql.count(db, "SELECT count(*) FROM outbound_effect WHERE state = 'done' AND effect_key LIKE '%:operator-alert'")).isEqualTo(2);
        }
    }

    /**
     * The Bot API of one bot down for what counts as long (shortened by configuration: 3 s for
     * the shipped 5 minutes), then back: one message when its polling stopped, one when it polls
     * again, and nothing more about it; the alerts go out through the bot main, which still works.
     */
    @Test
    void aBotsBotApiDownThenBackIsExactlyTwoMessages(DataSource db) throws Exception {
        try (BotApiSimulator telegram = BotApiSimulator.start()) {
            String main = telegram.addBot(7001, "FAKE-main-token", "main_bot");
            String sales = telegram.addBot(7002, "FAKE-sales-token", "sales_bot");
            Map<String, String> settings = Map.ofEntries(Map.entry("telegram.api-url", telegram.url()),
                    Map.entry("telegram.bots", "main,sales"), Map.entry("telegram.bot-token", main),
                    Map.entry("telegram.bots.sales.token", sales), Map.entry("telegram.poll-timeout-seconds", "1"),
                    Map.entry("telegram.lease-seconds", "10"), Map.entry("telegram.backoff-cap-millis", "500"),
                    Map.entry("operator-alerts.telegram-chat-id", "-100555"), Map.entry("operator-alerts.check-seconds", "1"),
                    Map.entry("operator-alerts.min-seconds-between-messages", "1"), Map.entry("operator-alerts.not-polling-seconds", "3"));

            try (WebhookServer product = WebhookServer.builder(db).withoutHttp()
                    .routeFiles("file:routes/telegram.yaml," + ROUTES).settings(settings).start()) {
                Await.until("both bots polling", WAIT, () -> Sql.count(db, "SELECT count(*) FROM telegram_checkpoint"
                        + " WHERE last_poll_at > now() - interval '2 seconds'") == 2);
                for (int i = 0; i < 10_000; i++) {
                    telegram.injectFault(sales, BotApiSimulator.Fault.serverError());
                }
                Await.until("the start", WAIT, () -> telegram.sentMessages(main).size() == 1);
                assertThat(telegram.sentMessages(main).get(0).path("text").asText())
                        .startsWith("STARTED: chat-intake: telegram bot 'sales' (7002) has not polled since");

                telegram.clearFaults(sales);
                Await.until("the end", WAIT, () -> telegram.sentMessages(main).size() == 2);
                assertThat(telegram.sentMessages(main).get(1).path("text").asText())
                        .startsWith("OVER after 0 min: chat-intake: telegram bot 'sales' (7002) has not polled since");

                // Later checks see nothing new about it: the next message is only what starts next.
                Sql.execute(db, "INSERT INTO telegram_gap (bot_id, from_update_id, to_update_id) VALUES (7001, 10, 11)");
                Await.until("the next finding", WAIT, () -> telegram.sentMessages(main).size() >= 3);
            }
            List<JsonNode> all = telegram.sentMessages(main);
            assertThat(all).hasSize(3);
            assertThat(all.get(2).path("text").asText()).startsWith("STARTED: chat-intake: telegram bot 7001: updates 10..11");
            assertThat(all).allSatisfy(m -> assertThat(m.path("chat_id").asText()).isEqualTo("-100555"));
            assertThat(telegram.sentMessages(sales)).isEmpty();
        }
    }

    @Test
    void fiftyItemsParkedInAMinuteAreOneMessageWithTheCount(DataSource db) throws Exception {
        try (BotApiSimulator telegram = BotApiSimulator.start()) {
            String token = telegram.addBot(7001, "FAKE-alerts-token", "alerts_bot");
            Map<String, String> settings = Map.of("telegram.api-url", telegram.url(), "telegram.bot-token", token,
                    "operator-alerts.telegram-chat-id", "-100555", "operator-alerts.check-seconds", "1",
                    "operator-alerts.min-seconds-between-messages", "1");

            try (WebhookServer product = WebhookServer.builder(db).withoutHttp().routeFiles(ROUTES).settings(settings).start()) {
                for (int batch = 0; batch < 5; batch++) {
                    Sql.execute(db, "INSERT INTO work_item (kind, source_key, source_id, state, attempts, last_error)"
                            + " SELECT 'unifyport-event', 'evt_" + batch + "_' || g, g, 'parked', 8, 'CRM said 503' FROM generate_series(1, 10) g");
                    if (batch == 0) {
                        Await.until("the first parked items' message", WAIT, () -> telegram.sentMessages(token).size() == 1);
                    }
                }
                // A later finding's message shows the checks went on: the parked kind had nothing new to say.
                Await.until("the parked finding's latest count", WAIT, () -> Sql.string(db,
                        "SELECT text FROM operator_finding WHERE finding = 'work-parked:unifyport-event'").startsWith("chat-intake: 50 "));
                Sql.execute(db, "INSERT INTO telegram_gap (bot_id, from_update_id, to_update_id) VALUES (7001, 10, 11)");
                Await.until("the next finding", WAIT, () -> telegram.sentMessages(token).size() >= 2);
            }
            List<String> texts = telegram.sentMessages(token).stream().map(m -> m.path("text").asText()).toList();
            assertThat(texts).hasSize(2);
            assertThat(texts.get(0)).startsWith("STARTED: chat-intake: 10 unifyport-event work item(s) parked in the last 10 minutes")
                    .contains("CRM said 503", "work retry --kind unifyport-event");
            assertThat(texts.get(1)).startsWith("STARTED: chat-intake: telegram bot 7001: updates 10..11");
        }
    }

    @Test
    void withoutAnOperatorChatAlertsAreOffAndNothingIsSent(DataSource db) {
        try (BotApiSimulator telegram = BotApiSimulator.start();
             WebhookServer product = WebhookServer.builder(db).withoutHttp().routeFiles(ROUTES)
                     .settings(Map.of("telegram.api-url", telegram.url())).start()) {
            assertThat(product.context().getRoute("operator-alerts")).isNull();
            assertThat(product.context().getRoute("operator-alert-send")).as("the sender is loaded, idle").isNotNull();
        }
    }
}
