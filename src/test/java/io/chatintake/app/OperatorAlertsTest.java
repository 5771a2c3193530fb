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
 * sender {@code routes/operator-alerts.yaml}: each new finding reaches the operator chat once,
 * and a restart does not send it again.
 */
@ExtendWith(TestDatabase.class)
class OperatorAlertsTest {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final String ROUTES = "file:routes/OperatorAlerts.java,file:routes/operator-alerts.yaml";

    @Test
    void eachNewFindingIsSentOnceAndARestartDoesNotSendItAgain(DataSource db) throws Exception {
        try (BotApiSimulator telegram = BotApiSimulator.start()) {
            String token = telegram.addBot(7001, "FAKE-alerts-token", "alerts_bot");
            Sql.execute(db, "INSERT INTO work_item (kind, source_key, source_id, state, attempts, last_error)"
                    + " VALUES ('telegram-update', '1:5', 5, 'parked', 8, 'IllegalStateException: handler down')");
            Sql.execute(db, "INSERT INTO telegram_loss_window (bot_id, from_time, to_time) VALUES (1, now() - interval '3 days', now() - interval '1 day')");
            Map<String, String> settings = Map.of("telegram.api-url", telegram.url(), "telegram.bot-token", token,
                    "operator-alerts.telegram-chat-id", "-100555");

            try (WebhookServer product = WebhookServer.builder(db).withoutHttp().routeFiles(ROUTES).settings(settings).start()) {
                Await.until("two alerts", WAIT, () -> telegram.sentMessages(token).size() == 2);
            }
            List<JsonNode> first = telegram.sentMessages(token);
            assertThat(first).allSatisfy(m -> assertThat(m.path("chat_id").asText()).isEqualTo("-100555"));
            assertThat(first).anySatisfy(m -> assertThat(m.path("text").asText()).contains("parked after 8 attempt(s)").contains("handler down"));
            assertThat(first).anySatisfy(m -> assertThat(m.path("text").asText()).contains("may have lost updates"));

            Sql.execute(db, "INSERT INTO telegram_loss_window (bot_id, from_time, to_time) VALUES (2, now() - interval '2 days', now() - interval '1 day')");
            Sql.execute(db, "INSERT INTO telegram_gap (bot_id, from_update_id, to_update_id) VALUES (2, 4990, 4994)");
            try (WebhookServer restarted = WebhookServer.builder(db).withoutHttp().routeFiles(ROUTES).settings(settings).start()) {
                Await.until("the new findings", WAIT, () -> telegram.sentMessages(token).size() >= 4);
            }
            List<JsonNode> all = telegram.sentMessages(token);
            assertThat(all).as("the two earlier alerts were not sent again").hasSize(4);
            assertThat(all.subList(2, 4)).extracting(m -> m.path("text").asText()).anySatisfy(text -> assertThat(text)
                    .contains("telegram bot 2 may have lost updates")).anySatisfy(text -> assertThat(text)
                    .contains("telegram bot 2: updates 4990..4994 were confirmed outside this store"));
            assertThat(Sql.count(db, "SELECT count(*) FROM outbound_effect WHERE state = 'done' AND effect_key LIKE '%:operator-alert'")).isEqualTo(4);
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
