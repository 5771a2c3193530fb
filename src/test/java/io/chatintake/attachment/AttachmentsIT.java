package io.chatintake.attachment;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.MediaHost;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.sql.Connection;
import java.time.Duration;
import java.time.Instant;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * The real jar with the shipped webhook and attachment routes: the runner wires the fetcher, the
 * downloads land under its data dir, the metric is served, and neither a signed URL nor the bot
 * token reaches its output, even at DEBUG and through a retried failure.
 */
class AttachmentsIT {
    private static final String SECRET = "it_signing_secret";
    private static final long BOT_ID = 5151;

    @TempDir
    Path work;

    @Test
    void theRunnerDownloadsUrlAndTelegramAttachmentsAndLogsNoUrlOrToken() throws Exception {
        try (MediaHost media = MediaHost.start(); BotApiSimulator telegram = BotApiSimulator.start()) {
            String token = telegram.addBot(BOT_ID, "FAKE-it-attachment-token", "it_files_bot");
            byte[] photo = "a telegram photo".getBytes(StandardCharsets.UTF_8);
            telegram.addFile(token, "AgACit", photo);
            byte[] image = "an image behind a signed url".getBytes(StandardCharsets.UTF_8);
            String url = media.publish(image, "image/jpeg", Duration.ofMinutes(10));
            media.failNext(url, 1);
            String expired = media.publish(image, "image/jpeg", Duration.ofSeconds(-1));

            Map<String, String> env = new HashMap<>(RunnerProcess.baseEnv(work));
            env.put("UNIFYPORT_SIGNING_SECRETS", SECRET);
            env.put("TELEGRAM_BOT_TOKEN", token);
            env.put("TELEGRAM_API_URL", telegram.url());
            env.put("WORK_BACKOFF_BASE_MILLIS", "100");
            env.put("ATTACHMENTS_ALLOWED_HOSTS", "127.0.0.1");
            env.put("ATTACHMENTS_ALLOW_HTTP", "true");
            env.put("CHAT_INTAKE_LOG_LEVEL", "DEBUG");
            Path routes = Files.createDirectories(work.resolve("routes"));
            for (String file : List.of("unifyport-webhook.yaml", "unifyport-handlers.yaml", "attachments.yaml")) {
                Files.copy(Path.of("routes", file), routes.resolve(file));
            }

            try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
                DataSource db = RunnerProcess.embeddedDatabase(env);
                SignedDeliverySender sender = new SignedDeliverySender(
                        URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/unifyport"), Secret.of(SECRET));
                byte[] body = SignedDeliverySender.envelope("evt_it_att", "message.received", "whatsapp", "acc_1", Instant.now(),
                        "{\"conversation\":{\"id\":\"c1\",\"type\":\"user\"},\"message\":{\"id\":\"m1\",\"type\":\"image\","
                                + "\"attachments\":[{\"url\":\"" + url + "\"},{\"url\":\"" + expired + "\"}],"
                                + "\"album\":{\"id\":\"alb_it\",\"index\":1}}}");
                assertThat(sender.post(sender.sign("evt_it_att", body, TimestampForm.RFC3339)).status()).isEqualTo(200);

                // A Telegram child as the album side stores it, for the bot "main" (token: TELEGRAM_BOT_TOKEN).
                Sql.execute(db, "INSERT INTO telegram_checkpoint (bot_id, bot_name) VALUES (" + BOT_ID + ", 'main')");
                long child = Sql.count(db, "INSERT INTO channel_message (workspace, provider, account_id, conversation_id,"
                        + " message_id, attachments, first_event_id) VALUES ('telegram', 'telegram', '" + BOT_ID + "', '9', '1',"
                        + " '[{\"telegram_bot_id\":" + BOT_ID + ",\"telegram_file_id\":\"AgACit\",\"kind\":\"photo\"}]', 'tg:1') RETURNING id");
                try (Connection c = db.getConnection()) {
                    c.setAutoCommit(false);
                    AttachmentStore.recordFor(c, child);
                    c.commit();
                }

                Await.until("three attachments decided", Duration.ofSeconds(60), () -> Sql.string(db,
                        "SELECT string_agg(source || ':' || status, ',' ORDER BY id) FROM message_attachment")
                        .equals("url:stored,url:expired,telegram-file:stored"));
                for (String mediaPath : List.of(Sql.string(db, "SELECT media_path FROM message_attachment WHERE id = 1"),
                        Sql.string(db, "SELECT media_path FROM message_attachment WHERE id = 3"))) {
                    assertThat(work.resolve("data/media").resolve(mediaPath)).exists();
                }
                assertThat(media.requests(url)).isEqualTo(2);
                List<String> counted = List.of("{outcome=\"stored\",source=\"url\"} 1.0", "{outcome=\"retry\",source=\"url\"} 1.0",
                        "{outcome=\"expired\",source=\"url\"} 1.0", "{outcome=\"stored\",source=\"telegram-file\"} 1.0");
                // Counted just after each row is recorded.
                Await.until("every download counted", Duration.ofSeconds(10), () -> {
                    String metrics = runner.get("/observe/metrics").body();
                    return counted.stream().allMatch(c -> metrics.contains("chat_intake_attachment_downloads_total" + c));
                });
                assertThat(runner.terminate(Duration.ofSeconds(60))).isIn(0, 143);

                String output = runner.output();
                assertThat(output).contains("attachment 1: stored").contains("attachment 3: stored")
                        .doesNotContain(url, token, "FAKE-it-attachment-token", "/file/bot");
                for (String signature : media.signatures()) {
                    assertThat(output).doesNotContain(signature);
                }
            }
        }
    }
}
