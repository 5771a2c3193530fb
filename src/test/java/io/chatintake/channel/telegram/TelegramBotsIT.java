package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.sim.BotApiSimulator;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardCopyOption;
import java.time.Duration;
import java.time.Instant;
import java.util.LinkedHashMap;
import java.util.Map;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * Bots listed in configuration ({@code telegram.bots}), each polled by a route from the template of
 * the shipped routes/telegram.yaml, in the real jar; the configuration is a mounted ConfigMap
 * (a {@code ..data} symlink swapped by an update), changed while the runner runs.
 */
class TelegramBotsIT {
    private static final Duration WAIT = Duration.ofSeconds(90);
    /** The lease of {@link RunnerProcess#pollingEnv}: an added bot must poll within it. */
    private static final Duration LEASE = Duration.ofSeconds(8);

    @TempDir
    Path work;

    @Test
    void listedBotsPollFromTheTemplateAndAReloadAddsAndRemovesBots() throws Exception {
        try (BotApiSimulator simulator = BotApiSimulator.start()) {
            Map<String, String> tokens = new LinkedHashMap<>();
            Map<String, Long> ids = new LinkedHashMap<>();
            long id = 9101;
            for (String bot : new String[] {"alpha", "bravo", "charlie", "delta"}) {
                ids.put(bot, id);
                tokens.put(bot, simulator.addBot(id++, "FAKE-" + bot + "-secret", bot + "_bot"));
                simulator.enqueueText(tokens.get(bot), 7, "hello " + bot);
            }
            Path configDir = Files.createDirectories(work.resolve("config"));
            configMapUpdate(configDir, "v1", "alpha,bravo,charlie", tokens);
            Files.createSymbolicLink(configDir.resolve("application.properties"), Path.of("..data/application.properties"));
            Map<String, String> env = RunnerProcess.pollingEnv(work, simulator.url(), "unused");
            env.remove("TELEGRAM_BOT_TOKEN");
            env.put("CHAT_INTAKE_CONFIG", configDir.resolve("application.properties").toString());

            try (RunnerProcess runner = RunnerProcess.start(work, env).awaitReady()) {
                DataSource db = RunnerProcess.embeddedDatabase(env);
                for (String bot : new String[] {"alpha", "bravo", "charlie"}) {
                    Await.until(bot + "'s update stored", WAIT, () -> stored(db, ids.get(bot), "hello " + bot));
                }
                assertThat(runner.output()).contains("telegram-alpha").contains("telegram-bravo").contains("telegram-charlie")
                        .doesNotContain("telegram-main");
                assertThat(getUpdates(simulator, ids.get("delta"), Instant.EPOCH)).as("delta is not listed yet").isZero();
                for (String token : tokens.values()) {
                    assertThat(runner.output()).doesNotContain(token.substring(token.indexOf(':') + 1));
                }

                Instant reloaded = Instant.now();
                configMapUpdate(configDir, "v2", "alpha,charlie,delta", tokens);
                Await.until("delta's update stored", WAIT, () -> stored(db, ids.get("delta"), "hello delta"));
                Instant firstPoll = simulator.requests().stream()
                        .filter(r -> r.method().equals("getUpdates") && r.botId() == ids.get("delta")).findFirst().orElseThrow().at();
                assertThat(Duration.between(reloaded, firstPoll)).as("the added bot polls within a lease period").isLessThan(LEASE);

                Await.until("bravo's lease released", WAIT, () -> Sql.count(db, "SELECT count(*) FROM telegram_poll_lease"
                        + " WHERE bot_id = " + ids.get("bravo") + " AND expires_at < now()") == 1);
                assertThat(runner.output()).contains("telegram bot 'bravo': no longer listed in TELEGRAM_BOTS; route telegram-bravo"
                        + " stopped and removed, its poll lease released");
                Instant released = Instant.now();
                long bravoPolls = getUpdates(simulator, ids.get("bravo"), Instant.EPOCH);
                simulator.enqueueText(tokens.get("bravo"), 7, "bravo after removal");
                simulator.enqueueText(tokens.get("alpha"), 7, "alpha after removal");
                Await.until("alpha polled twice more", WAIT, () -> getUpdates(simulator, ids.get("alpha"), released) >= 2
                        && stored(db, ids.get("alpha"), "alpha after removal"));
                assertThat(getUpdates(simulator, ids.get("bravo"), Instant.EPOCH)).as("bravo stopped polling").isEqualTo(bravoPolls);
                assertThat(stored(db, ids.get("bravo"), "bravo after removal")).isFalse();

                RunnerProcess status = RunnerProcess.start(work.resolve("status"), env, "telegram", "status");
                assertThat(status.awaitExit(WAIT)).as(status.output()).isZero();
                assertThat(status.output()).contains("bot alpha (id 9101)").contains("bot bravo (id 9102)")
                        .contains("bot charlie (id 9103)").contains("bot delta (id 9104)");
            }
        }
    }

    /** Writes the ConfigMap's next version and swaps {@code ..data} to it, as the kubelet does. */
    private static void configMapUpdate(Path configDir, String version, String bots, Map<String, String> tokens) throws Exception {
        Path dir = Files.createDirectories(configDir.resolve(".." + version));
        StringBuilder config = new StringBuilder(Files.readString(Path.of("config/application.properties")));
        config.append("\ntelegram.bots=").append(bots).append('\n');
        tokens.forEach((bot, token) -> config.append("telegram.bots.").append(bot).append(".token=").append(token).append('\n'));
        Files.writeString(dir.resolve("application.properties"), config);
        Path link = configDir.resolve("..data_tmp");
        Files.deleteIfExists(link);
        Files.createSymbolicLink(link, Path.of(".." + version));
        Files.move(link, configDir.resolve("..data"), StandardCopyOption.ATOMIC_MOVE, StandardCopyOption.REPLACE_EXISTING);
    }

    private static boolean stored(DataSource db, long botId, String text) {
        return Sql.count(db, "SELECT count(*) FROM telegram_update WHERE bot_id = " + botId
                + " AND payload->'message'->>'text' = '" + text + "'") == 1;
    }

    private static long getUpdates(BotApiSimulator simulator, long botId, Instant since) {
        return simulator.requests().stream()
                .filter(r -> r.method().equals("getUpdates") && r.botId() == botId && !r.at().isBefore(since)).count();
    }
}
