package io.chatintake.ops;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Secret;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.support.DirectoryTree;
import java.io.IOException;
import java.io.PrintStream;
import java.net.URI;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.Path;
import java.security.SecureRandom;
import java.sql.Connection;
import java.sql.DriverManager;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.HashMap;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.TimeUnit;
import java.util.function.BooleanSupplier;

/**
 * {@code demo [--exit]}: a one-minute story told as it happens. The runner (this jar, as a child
 * process) on a fresh embedded database in a temp directory, the bundled Bot API simulator and
 * signed-delivery sender as the outside world: messages answered once, a Telegram album, a
 * UnifyPort album with a late child, a forged webhook refused, the runner killed mid-stream and
 * restarted with nothing lost. Then the status page stays up until Ctrl-C ({@code --exit}: the
 * demo ends after the story). Each step checks what it claims; a failed check ends the demo with 1.
 */
public final class Demo {
    private static final Duration WAIT = Duration.ofSeconds(90);
    private static final long BOT_ID = 7_000_001;
    private static final int STREAM = 300;

    private final PrintStream out;
    private final List<Process> runners = new ArrayList<>();
    private Path workDir;
    private BotApiSimulator simulator;
    private String jdbcUrl;
    private int step;

    /** A claim of the story that did not hold. */
    private static final class DemoFailed extends Exception {
        DemoFailed(String message) {
            super(message);
        }
    }

    public Demo(PrintStream out) {
        this.out = out;
    }

    public int run(List<String> args) {
        boolean exitAfterStory = args.contains("--exit");
        Path routes = Path.of("routes").toAbsolutePath();
        if (!Files.isDirectory(routes) || !Files.isRegularFile(Path.of("config/application.properties"))) {
            throw new ConfigurationException("demo: run it from the project directory (it uses ./routes and ./config)");
        }
        CountDownLatch stopped = new CountDownLatch(1);
        Thread cleanup = new Thread(() -> {
            cleanUp();
            stopped.countDown();
        }, "demo-cleanup");
        Runtime.getRuntime().addShutdownHook(cleanup);
        try {
            String statusUrl = story(routes);
            if (exitAfterStory) {
                say("The story is over (--exit): stopping the runner and removing " + workDir + ".");
                return 0;
            }
            out.println();
            out.println("Status page: " + statusUrl);
            out.println("Open it in a browser; it reloads itself. Press Ctrl-C to stop the demo and clean up.");
            out.flush();
            awaitForever();
            return 0;
        } catch (DemoFailed e) {
            out.println("demo FAILED: " + e.getMessage());
            printRunnerLogTail();
            return 1;
        } finally {
            if (exitAfterStory) {
                Runtime.getRuntime().removeShutdownHook(cleanup);
                cleanup.run();
            }
        }
    }

    private String story(Path routes) throws DemoFailed {
        out.println("chat-intake demo: a one-minute story, told as it happens");
        try {
            workDir = Files.createTempDirectory("chat-intake-demo-");
        } catch (IOException e) {
            throw new ConfigurationException("demo: cannot create a temp directory: " + e.getMessage());
        }
        simulator = BotApiSimulator.start();
        String botToken = simulator.addBot(BOT_ID, "DEMO" + hex(12), "demo_bot");
        String signingSecret = "demo-" + hex(16);
        String statusToken = hex(16);
        int httpPort = ChildRunner.freePort();
        int dbPort = ChildRunner.freePort();
        jdbcUrl = "jdbc:postgresql://127.0.0.1:" + dbPort + "/chat_intake?currentSchema=chat_intake,public";
        Map<String, String> env = new HashMap<>();
        env.put("CHAT_INTAKE_DATA_DIR", workDir.resolve("data").toString());
        env.put("CHAT_INTAKE_HTTP_HOST", "127.0.0.1");
        env.put("CHAT_INTAKE_HTTP_PORT", Integer.toString(httpPort));
        env.put("CHAT_INTAKE_DB_EMBEDDED_PORT", Integer.toString(dbPort));
        env.put("CHAT_INTAKE_ROUTES_DIR", routes.toString());
        env.put("CHAT_INTAKE_ROUTES_RELOAD", "false");
        env.put("CHAT_INTAKE_STATUS_TOKEN", statusToken);
        env.put("TELEGRAM_BOT_TOKEN", botToken);
        env.put("TELEGRAM_API_URL", simulator.url());
        env.put("TELEGRAM_POLL_TIMEOUT_SECONDS", "1");
        env.put("TELEGRAM_LEASE_SECONDS", "8");
        env.put("TELEGRAM_ECHO_REPLIES", "true");
        env.put("UNIFYPORT_SIGNING_SECRETS", signingSecret);
        env.put("ALBUMS_TELEGRAM_QUIET_PERIOD_SECONDS", "2");
        env.put("WORK_POLL_INTERVAL_MILLIS", "100");
        // The killed runner's claims hold its chats until they expire: seconds here, not the default two minutes.
        env.put("WORK_CLAIM_SECONDS", "10");
        String base = "http://127.0.0.1:" + httpPort;

        say("Started a Bot API simulator (a stand-in for api.telegram.org) with the bot @demo_bot, and the runner on a"
                + " fresh embedded PostgreSQL in " + workDir + ".");
        long started = System.nanoTime();
        Process runner = startRunner(env, base);
        say("The runner is ready on " + base + " after " + TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started)
                + " s: it polls the bot and listens for UnifyPort webhooks at /webhooks/unifyport.");

        List<String> texts = List.of("Hello!", "Is my order on its way?", "Thanks :)");
        for (int i = 0; i < texts.size(); i++) {
            // One after another: the shipped echo handler's camel-telegram producer is not safe for concurrent sends.
            simulator.enqueueText(botToken, 100 + i, texts.get(i));
            int answers = i + 1;
            await("answer " + answers, () -> simulator.sentMessages(botToken).size() >= answers);
        }
        say("Three people wrote to the bot. Each message was stored, then answered exactly once: "
                + String.join(", ", simulator.sentMessages(botToken).stream().map(m -> "\"" + m.path("text").asText() + "\"").toList()) + ".");

        for (int i = 1; i <= 3; i++) {
            simulator.addFile(botToken, "demo-photo-" + i, ("photo " + i + " ").repeat(500).getBytes(StandardCharsets.UTF_8));
            simulator.enqueueMediaGroupPart(botToken, 200, "demo-album", "demo-photo-" + i, null);
        }
        await("the Telegram album decided", () -> count("SELECT count(*) FROM album_decision d JOIN album a USING (album_key)"
                + " WHERE a.album_id = 'demo-album'") == 1);
        await("its photos stored", () -> count("SELECT count(*) FROM message_attachment WHERE source = 'telegram-file'"
                + " AND status = 'stored'") == 3);
        say("A Telegram album of 3 photos came as 3 separate updates. Telegram never says how many there are, so after a"
                + " 2 s quiet period it was decided once (" + text("SELECT kind || ', ' || jsonb_array_length(child_ids)"
                + " || ' children' FROM album_decision d JOIN album a USING (album_key) WHERE a.album_id = 'demo-album'")
                + "), and its 3 photos were downloaded into the media store.");

        SignedDeliverySender sender = new SignedDeliverySender(URI.create(base + "/webhooks/unifyport"), Secret.of(signingSecret));
        albumChild(sender, "up-1", 1);
        albumChild(sender, "up-2", 2);
        await("the UnifyPort album decided", () -> decision(1) != null);
        String first = decision(1);
        albumChild(sender, "up-3", 3);
        await("the late decision", () -> decision(2) != null);
        say("A UnifyPort album said it had 2 pictures; when both were in it was decided at once (" + first + "). A third"
                + " picture arrived later: a new version, " + decision(2) + ", for display only; nothing is sent twice.");

        SignedDeliverySender forger = new SignedDeliverySender(URI.create(base + "/webhooks/unifyport"), Secret.of("not-the-secret"));
        byte[] forged = SignedDeliverySender.envelope("evt_demo_forged", "message.received", "whatsapp", "acc_demo", Instant.now(),
                "{\"conversation\":{\"id\":\"c\",\"type\":\"user\"},\"message\":{\"id\":\"forged\",\"type\":\"text\",\"text\":\"pay me\"}}");
        SignedDeliverySender.Response refused = forger.post(forger.sign("evt_demo_forged", forged, TimestampForm.RFC3339));
        check(refused.status() == 401 && count("SELECT count(*) FROM webhook_event WHERE event_id = 'evt_demo_forged'") == 0,
                "the forged webhook was answered " + refused.status());
        say("A webhook signed with the wrong secret was refused (401 " + refused.body() + "); nothing of it was stored.");

        long before = count("SELECT count(*) FROM telegram_update");
        for (int i = 0; i < STREAM; i++) {
            simulator.enqueueChannelPost(botToken, 300, "post " + i);
        }
        await("part of the stream stored", () -> count("SELECT count(*) FROM telegram_update") >= before + STREAM / 4);
        runner.destroyForcibly();
        ChildRunner.waitFor(runner);
        long storedAtKill = count("SELECT count(*) FROM telegram_update WHERE update_type = 'channel_post'");
        say(STREAM + " channel posts started streaming in. After " + storedAtKill + " were stored, the runner was killed"
                + " (kill -9) in the middle of it.");
        started = System.nanoTime();
        startRunner(env, base);
        await("the whole stream stored", () -> count("SELECT count(*) FROM telegram_update WHERE update_type = 'channel_post'") == STREAM);
        await("all work done", () -> count("SELECT count(*) FROM work_item WHERE state <> 'done'") + count("SELECT count(*) FROM work_staged")
                + count("SELECT count(*) FROM webhook_event WHERE derived_at IS NULL") == 0);
        check(simulator.violations().isEmpty(), "the simulator saw updates confirmed before they were stored: " + simulator.violations());
        check(count("SELECT count(DISTINCT update_id) FROM telegram_update WHERE update_type = 'channel_post'") == STREAM,
                "a post was stored twice");
        check(simulator.sentMessages(botToken).size() == texts.size(), "an answer was sent again after the restart");
        say("Restarted on the same data (" + TimeUnit.NANOSECONDS.toSeconds(System.nanoTime() - started) + " s): it found the old"
                + " PostgreSQL still running, stopped it, took over the poll lease and carried on from the saved offset."
                + " All " + STREAM + " posts are stored exactly once and handled once; the simulator confirms that Telegram"
                + " never dropped an update before it was stored; the first three messages were not answered again.");
        return base + "/status?token=" + statusToken;
    }

    private void albumChild(SignedDeliverySender sender, String messageId, int index) throws DemoFailed {
        String data = "{\"conversation\":{\"id\":\"c-demo\",\"type\":\"user\"},\"sender\":{\"id\":\"u1\",\"type\":\"user\"},"
                + "\"message\":{\"id\":\"" + messageId + "\",\"type\":\"image\",\"direction\":\"in\","
                + "\"sent_at\":\"2026-07-01T09:15:00Z\",\"album\":{\"id\":\"demo-unifyport-album\",\"index\":" + index + ",\"total\":2}}}";
        String eventId = "evt_demo_" + messageId;
        byte[] body = SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_demo", Instant.now(), data);
        SignedDeliverySender.Response response = sender.post(sender.sign(eventId, body, TimestampForm.RFC3339));
        check(response.status() == 200, "a signed UnifyPort delivery was answered " + response.status());
    }

    private String decision(int version) {
        return text("SELECT kind || ', ' || jsonb_array_length(child_ids) || ' children' FROM album_decision d"
                + " JOIN album a USING (album_key) WHERE a.album_id = 'demo-unifyport-album' AND d.version = " + version);
    }

    private Process startRunner(Map<String, String> env, String base) throws DemoFailed {
        Path log = workDir.resolve("runner-" + (runners.size() + 1) + ".log");
        Process process;
        try {
            process = ChildRunner.start(env, log, "-Xmx512m");
        } catch (ConfigurationException e) {
            throw new DemoFailed(e.getMessage());
        }
        runners.add(process);
        int port = Integer.parseInt(env.get("CHAT_INTAKE_HTTP_PORT"));
        await("the runner ready on " + base + " (log: " + log + ")", () -> !process.isAlive() || ChildRunner.ready(port));
        check(process.isAlive(), "the runner exited at start; see " + log);
        return process;
    }

    /** The end of the latest runner's log: the demo's temp directory goes away with the demo. */
    private void printRunnerLogTail() {
        if (workDir != null) {
            ChildRunner.printTail(workDir.resolve("runner-" + runners.size() + ".log"), out);
        }
    }

    private void say(String line) {
        out.printf("%2d. %s%n", ++step, line);
        out.flush();
    }

    private void await(String what, BooleanSupplier condition) throws DemoFailed {
        long deadline = System.nanoTime() + WAIT.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new DemoFailed("waited " + WAIT.toSeconds() + " s for " + what);
            }
            try {
                Thread.sleep(100);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new DemoFailed("interrupted while waiting for " + what);
            }
        }
    }

    private static void check(boolean holds, String otherwise) throws DemoFailed {
        if (!holds) {
            throw new DemoFailed(otherwise);
        }
    }

    /** A figure from the runner's database; -1 while it cannot be reached (the runner is restarting). */
    private long count(String sql) {
        String value = text(sql);
        return value == null ? -1 : Long.parseLong(value);
    }

    private String text(String sql) {
        String password;
        try {
            password = EmbeddedDatabase.storedPassword(workDir.resolve("data").resolve("pg")).reveal();
        } catch (ConfigurationException e) {
            return null; // the runner has not made its database yet
        }
        try (Connection c = DriverManager.getConnection(jdbcUrl, "postgres", password);
             PreparedStatement ps = c.prepareStatement(sql); ResultSet rs = ps.executeQuery()) {
            return rs.next() ? rs.getString(1) : null;
        } catch (SQLException e) {
            return null;
        }
    }

    private void awaitForever() {
        try {
            new CountDownLatch(1).await();
        } catch (InterruptedException e) {
            Thread.currentThread().interrupt();
        }
    }

    /** Stops the runners (SIGTERM, then kill), the simulator, and removes the temp directory. */
    private synchronized void cleanUp() {
        for (Process runner : runners) {
            runner.destroy();
            ChildRunner.waitFor(runner);
        }
        runners.clear();
        stopLeftoverPostgres();
        if (simulator != null) {
            simulator.close();
            simulator = null;
        }
        if (workDir != null) {
            try {
                DirectoryTree.delete(workDir);
            } catch (IOException e) {
                out.println("demo: could not remove " + workDir + ": " + e.getMessage());
            }
        }
    }

    /** A runner killed and not restarted leaves its embedded PostgreSQL running: its pid is in postmaster.pid. */
    private void stopLeftoverPostgres() {
        Path pidFile = workDir == null ? null : workDir.resolve("data/pg/postmaster.pid");
        if (pidFile == null || !Files.isRegularFile(pidFile)) {
            return;
        }
        try {
            long pid = Long.parseLong(Files.readAllLines(pidFile).get(0).trim());
            ProcessHandle.of(pid).ifPresent(postgres -> {
                postgres.destroy();
                postgres.onExit().orTimeout(20, TimeUnit.SECONDS).exceptionally(e -> null).join();
            });
        } catch (IOException | RuntimeException e) {
            out.println("demo: could not stop the leftover PostgreSQL of " + workDir + ": " + e.getMessage());
        }
    }

    private static String hex(int bytes) {
        byte[] random = new byte[bytes];
        new SecureRandom().nextBytes(random);
        return HexFormat.of().formatHex(random);
    }
}
