package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import com.zaxxer.hikari.HikariDataSource;
import io.chatintake.channel.webhook.SignatureScheme;
import io.chatintake.config.Secret;
import io.chatintake.config.Settings;
import io.chatintake.ops.TelegramCommands;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.AfterAll;
import org.junit.jupiter.api.BeforeAll;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * {@code routes/telegram-webhook.yaml} as shipped: a bot turned to webhook mode with
 * {@code telegram set-webhook} stores pushed updates exactly as polled ones. Telegram's check is
 * a shared secret token (no MAC, no timestamp), so there is no published vector or stale case.
 */
@ExtendWith(TestDatabase.class)
class TelegramWebhookTest {
    private static final long BOT_ID = 707;
    private static final String WEBHOOK_SECRET = "tg_webhook_secret_1";
    private static BotApiSimulator telegram;
    private static String token;
    private static WebhookServer server;
    private static SignedDeliverySender sender;

    @BeforeAll
    static void start() {
        telegram = BotApiSimulator.start();
        token = telegram.addBot(BOT_ID, "FAKE-webhook-test-token", "hook_bot");
        server = WebhookServer.start(TestDatabase.dataSource(), Map.of("telegram.webhook-secret", WEBHOOK_SECRET),
                "file:routes/telegram-webhook.yaml");
        sender = new SignedDeliverySender(server.uri("/webhooks/telegram/main"), Secret.of(WEBHOOK_SECRET), SignatureScheme.telegramSecretToken());
    }

    @AfterAll
    static void stop() {
        server.close();
        telegram.close();
    }

    @BeforeEach
    void setWebhook() {
        String url = server.uri("/webhooks/telegram/main").toString();
        assertThat(command("set-webhook", "--bot", "main", "--url", url)).contains("webhook set to " + url);
    }

    @Test
    void setWebhookRecordsTheBotAndSwitchToPollingUndoesIt(DataSource db) {
        assertThat(Sql.string(db, "SELECT bot_id || ' ' || bot_name || ' ' || next_offset FROM telegram_checkpoint")).isEqualTo("707 main 0");
        assertThat(command("switch-to-polling", "--bot", "main")).contains("webhook removed");
    }

    @Test
    void anUpdateWithTheSecretTokenIsStoredOnceAsAPolledOneWouldBe(DataSource db) {
        byte[] update = update(9001, "{\"message_id\":5,\"date\":1749416383,\"chat\":{\"id\":-100123,\"type\":\"group\"},\"text\":\"hi\"}");
        assertThat(sender.postSigned(update, "application/json").body()).isEqualTo("{\"status\":\"stored\"}");
        assertThat(sender.postSigned(update, "application/json").body()).isEqualTo("{\"status\":\"duplicate\"}");
        assertThat(Sql.string(db, "SELECT bot_id || ' ' || update_id || ' ' || update_type FROM telegram_update")).isEqualTo("707 9001 message");
        assertThat(Sql.string(db, "SELECT kind || ' ' || source_key || ' ' || chat_key FROM work_item")).isEqualTo("telegram-update 707:9001 707:-100123");
        assertThat(Sql.string(db, "SELECT next_offset || ' ' || stored_count || ' ' || duplicate_count FROM telegram_checkpoint"))
                .as("the offset is polling's; counts are shared").isEqualTo("0 1 1");
    }

    @Test
    void aWrongOrMissingSecretTokenIs401AndStoresNothing(DataSource db) {
        byte[] update = update(9002, "{\"message_id\":6,\"date\":1749416383,\"chat\":{\"id\":1,\"type\":\"private\"},\"text\":\"x\"}");
        assertThat(sender.postRaw(update, "application/json", Map.of("X-Telegram-Bot-Api-Secret-Token", "guess")).body())
                .isEqualTo("{\"error\":\"bad_signature\"}");
        assertThat(sender.postRaw(update, "application/json", Map.of()).body()).isEqualTo("{\"error\":\"missing_signature\"}");
        assertThat(Sql.count(db, "SELECT count(*) FROM telegram_update")).isZero();
    }

    @Test
    void mediaGroupPartsBecomeAlbumChildrenAndAnUnknownBotIs503(DataSource db) {
        for (int i = 1; i <= 3; i++) {
            byte[] part = update(9100 + i, "{\"message_id\":" + (20 + i) + ",\"date\":1749416383,\"chat\":{\"id\":42,\"type\":\"private\"},"
                    + "\"media_group_id\":\"mg-1\",\"photo\":[{\"file_id\":\"f" + i + "\",\"file_unique_id\":\"u" + i + "\",\"width\":90,\"height\":90}]}");
            assertThat(sender.postSigned(part, "application/json").status()).isEqualTo(200);
        }
        assertThat(Sql.string(db, "SELECT count(*) || ' ' || min(album_id) || ' ' || min(account_id) FROM channel_message WHERE provider = 'telegram-bot'"))
                .isEqualTo("3 mg-1 707");
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'album-child'")).isEqualTo(3);

        SignedDeliverySender unknown = new SignedDeliverySender(server.uri("/webhooks/telegram/nobody"), Secret.of(WEBHOOK_SECRET),
                SignatureScheme.telegramSecretToken());
        assertThat(unknown.postSigned(update(9200, "{\"message_id\":1,\"date\":1,\"chat\":{\"id\":1,\"type\":\"private\"}}"), "application/json")
                .status()).as("Telegram retries it until the bot is set up").isEqualTo(503);
        assertThat(Sql.count(db, "SELECT count(*) FROM telegram_update WHERE update_id = 9200")).isZero();
    }

    private static byte[] update(long updateId, String message) {
        return ("{\"update_id\":" + updateId + ",\"message\":" + message + "}").getBytes(StandardCharsets.UTF_8);
    }

    private static String command(String... args) {
        HikariDataSource pool = (HikariDataSource) TestDatabase.dataSource();
        Settings settings = Settings.of(Map.of("chat-intake.db.url", pool.getJdbcUrl(), "chat-intake.db.user", pool.getUsername(),
                "chat-intake.db.password", pool.getPassword(),
                "telegram.bot-token", token, "telegram.api-url", telegram.url(), "telegram.webhook-secret", WEBHOOK_SECRET));
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        int code = new TelegramCommands(settings, new PrintStream(out, true, StandardCharsets.UTF_8)).run(List.of(args));
        String printed = out.toString(StandardCharsets.UTF_8);
        assertThat(code).as(printed).isZero();
        return printed;
    }
}
