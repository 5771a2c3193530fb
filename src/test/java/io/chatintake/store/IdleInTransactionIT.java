package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Secret;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.sim.SignedDeliverySender.TimestampForm;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.ClusterTemplate;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.testkit.Sql;
import java.net.URI;
import java.nio.file.Path;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.sql.Statement;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.regex.Matcher;
import java.util.regex.Pattern;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/**
 * A session left idle in transaction (holding a transaction id, so vacuum removes no row version
 * deleted after it began) for the length of a load: intake and claims stay at least half as fast
 * as under the same load without it, measured in the same run, and the status page names the
 * backend holding the oldest transaction and its age.
 * <p>
 * The load saturates: Telegram keeps a backlog of texts waiting at the Bot API, and webhook
 * senders deliver again as soon as they are answered. Each measure starts from a drained state.
 */
class IdleInTransactionIT {
    private static final Duration WARM_UP = Duration.ofSeconds(8);
    private static final Duration LOAD = Duration.ofSeconds(20);
    private static final Duration WAIT = Duration.ofSeconds(90);
    private static final String SECRET = "idle_in_transaction_it_secret_42";
    private static final String STATUS_TOKEN = "status-token-idle-in-transaction-it-0123456789";
    private static final int WAITING_AT_TELEGRAM = 300;
    private static final int SENDERS = 4;
    private static final int CHATS = 50;

    @TempDir
    Path work;

    /** Stored updates and acknowledged deliveries per second, and work items done per second. */
    record Speed(double intake, double claims) {
        @Override
        public String toString() {
            return String.format("intake %.0f/s, claims %.0f/s", intake, claims);
        }
    }

    @Test
    void aSessionIdleInTransactionLeavesIntakeAndClaimsAtLeastHalfAsFastAndIsNamed() throws Exception {
        try (EmbeddedDatabase database = ClusterTemplate.start(work.resolve("pg"), RunnerProcess.freePort(), true);
             BotApiSimulator simulator = BotApiSimulator.start()) {
            String token = simulator.addBot(708, "FAKE-idle-in-transaction-token", "idle_tx_bot");
            Map<String, String> env = RunnerProcess.pollingEnv(work.resolve("a"), simulator.url(), token);
            env.put("CHAT_INTAKE_DB_URL", database.jdbcUrl());
            env.put("CHAT_INTAKE_DB_USER", database.user());
            env.put("CHAT_INTAKE_DB_PASSWORD", database.password().reveal());
            env.put("UNIFYPORT_SIGNING_SECRETS", SECRET);
            env.put("CHAT_INTAKE_STATUS_TOKEN", STATUS_TOKEN);
            env.put("CHAT_INTAKE_DB_OPEN_TRANSACTION_WARN_SECONDS", "5");
            try (RunnerProcess runner = RunnerProcess.start(work.resolve("a"), env).awaitReady()) {
                DataSource db = Sql.dataSource(database);
                Load load = new Load(simulator, token, runner, db);
                Speed warmUp = load.measure(WARM_UP);
                Speed plain = load.measure(LOAD);
                Speed held;
                String named;
                try (Connection idle = idleInTransaction(database)) {
                    long pid = single(idle, "SELECT pg_backend_pid()");
                    long xid = single(idle, "SELECT txid_current()");
                    held = load.measure(LOAD);
                    assertThat(Sql.string(db, "SELECT backend_xid FROM pg_stat_activity WHERE pid = " + pid))
                            .as("the session still holds its transaction id").isEqualTo(Long.toString(xid));
                    String page = runner.get("/status", "Authorization", "Bearer " + STATUS_TOKEN).body();
                    Matcher matcher = Pattern.compile("backend " + pid + " \\(application &#39;left-idle&#39;, idle in transaction\\)"
                            + " has held a transaction open for (\\d+) (s|min)").matcher(page);
                    assertThat(matcher.find()).as("the status page names the backend and its age:\n%s", page).isTrue();
                    named = matcher.group();
                    long age = Long.parseLong(matcher.group(1)) * (matcher.group(2).equals("min") ? 60 : 1);
                    assertThat(age).as("its age").isGreaterThanOrEqualTo(LOAD.toSeconds());
                    idle.rollback();
                }
                System.out.printf("idle in transaction: warm-up %s; plain %s; with a session idle in transaction %s (%.2fx, %.2fx);"
                                + " the status page: %s%n", warmUp, plain, held, held.intake() / plain.intake(),
                        held.claims() / plain.claims(), named);
                assertThat(held.intake()).as("intake with the session idle in transaction").isGreaterThanOrEqualTo(plain.intake() / 2);
                assertThat(held.claims()).as("claims with the session idle in transaction").isGreaterThanOrEqualTo(plain.claims() / 2);
                assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'parked'")).as("none parked").isZero();
                assertThat(runner.isAlive()).isTrue();
            }
        }
    }

    /** As a person's psql leaves one: a transaction begun, a transaction id taken, then nothing. */
    private static Connection idleInTransaction(EmbeddedDatabase database) throws SQLException {
        Properties session = new Properties();
        session.setProperty("user", database.user());
        session.setProperty("password", database.password().reveal());
        session.setProperty("ApplicationName", "left-idle");
        Connection c = new org.postgresql.Driver().connect(database.jdbcUrl(), session);
        c.setAutoCommit(false);
        return c;
    }

    private static long single(Connection c, String sql) throws SQLException {
        try (Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        }
    }

    /** The same saturating load each time it is measured. */
    private static final class Load {
        private final BotApiSimulator simulator;
        private final String token;
        private final DataSource db;
        private final List<SignedDeliverySender> senders = new ArrayList<>();
        private final AtomicInteger nextEvent = new AtomicInteger();

        Load(BotApiSimulator simulator, String token, RunnerProcess runner, DataSource db) {
            this.simulator = simulator;
            this.token = token;
            this.db = db;
            for (int i = 0; i < SENDERS; i++) {
                senders.add(new SignedDeliverySender(URI.create("http://127.0.0.1:" + runner.httpPort() + "/webhooks/unifyport"),
                        Secret.of(SECRET)));
            }
        }

        /** Offers the load for {@code length}, then waits until all it brought is done; the speeds are those within {@code length}. */
        Speed measure(Duration length) throws InterruptedException {
            AtomicInteger acknowledged = new AtomicInteger();
            long updates = Sql.count(db, "SELECT count(*) FROM telegram_update");
            long done = Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'done'");
            long start = System.nanoTime();
            long end = start + length.toNanos();
            List<Thread> threads = new ArrayList<>();
            threads.add(new Thread(() -> {
                while (System.nanoTime() < end) {
                    for (int i = simulator.queued(token); i < WAITING_AT_TELEGRAM; i++) {
                        simulator.enqueueText(token, 1 + i % CHATS, "text");
                    }
                    RunnersUnderLoad.pause(20);
                }
            }, "telegram-load"));
            for (SignedDeliverySender sender : senders) {
                threads.add(new Thread(() -> {
                    while (System.nanoTime() < end) {
                        if (deliver(sender)) {
                            acknowledged.incrementAndGet();
                        }
                    }
                }, "webhook-load"));
            }
            threads.forEach(Thread::start);
            for (Thread thread : threads) {
                thread.join();
            }
            long stored = Sql.count(db, "SELECT count(*) FROM telegram_update") - updates;
            long claimed = Sql.count(db, "SELECT count(*) FROM work_item WHERE state = 'done'") - done;
            double seconds = (System.nanoTime() - start) / 1e9;
            Await.until("the load drained", WAIT, () -> simulator.queued(token) == 0
                    && Sql.count(db, "SELECT count(*) FROM work_staged") == 0
                    && Sql.count(db, "SELECT count(*) FROM work_item WHERE state NOT IN ('done', 'parked')") == 0);
            return new Speed((stored + acknowledged.get()) / seconds, claimed / seconds);
        }

        /** One delivery of a new event; true when answered 200. */
        private boolean deliver(SignedDeliverySender sender) {
            int n = nextEvent.getAndIncrement();
            String eventId = "evt_idle_" + n;
            byte[] body = SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_1", Instant.now(),
                    "{\"conversation\":{\"id\":\"c" + n % CHATS + "\",\"type\":\"user\"},\"sender\":{\"id\":\"u1\",\"type\":\"user\"},"
                            + "\"message\":{\"id\":\"m" + n + "\",\"type\":\"text\",\"text\":\"t\",\"direction\":\"in\"}}");
            try {
                return sender.post(sender.sign(eventId, body, TimestampForm.RFC3339)).status() == 200;
            } catch (RuntimeException e) {
                return false;
            }
        }
    }
}
