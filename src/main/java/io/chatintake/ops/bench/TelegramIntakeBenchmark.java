package io.chatintake.ops.bench;

import io.chatintake.sim.BotApiSimulator;
import io.chatintake.store.Database;
import io.chatintake.store.EmbeddedDatabase;
import io.chatintake.store.Migrations;
import java.io.PrintStream;
import java.nio.file.Files;
import java.nio.file.Path;
import java.util.HashMap;
import java.util.List;
import java.util.Map;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.main.Main;

/**
 * {@code bench telegram}: the stored rate of Telegram intake against the Bot API simulator, as a
 * ratio to a raw JDBC batch insert of the same 1 KB rows (100 per commit plus the checkpoint
 * update) measured in the same run on the same durable database (fsync on). The target is 0.8.
 * A ratio, not a time: these machines drift, a limit measured alongside does not.
 */
public final class TelegramIntakeBenchmark {
    private static final int BATCH = 100;
    private static final double TARGET = 0.8;
    private static final long INTAKE_BOT = 9001;
    private static final long BASELINE_BOT = 9002;

    private final PrintStream out;

    public TelegramIntakeBenchmark(PrintStream out) {
        this.out = out;
    }

    /** @return 0 when the ratio reaches the target */
    public int run(int updates) throws Exception {
        Path dir = Files.createTempDirectory("chat-intake-bench");
        EmbeddedDatabase embedded = EmbeddedDatabase.start(dir.resolve("pg"), 0, true);
        try (Database database = Database.embedded(embedded, 8); BotApiSimulator simulator = BotApiSimulator.start()) {
            Migrations.apply(database.dataSource());
            String payloadText = "x".repeat(900);
            double baseline = baseline(database, updates, payloadText);
            double intake = intake(database, simulator, updates, payloadText, dir);
            double ratio = intake / baseline;
            out.printf("raw JDBC batch insert: %.0f rows/s%n", baseline);
            out.printf("telegram intake:       %.0f updates/s (stored, confirmed, scheduled as work)%n", intake);
            out.printf("ratio %.2f (target >= %.2f): %s%n", ratio, TARGET, ratio >= TARGET ? "met" : "NOT met");
            return ratio >= TARGET ? 0 : 1;
        }
    }

    private double baseline(Database database, int rows, String payloadText) throws SQLException {
        try (Connection c = database.dataSource().getConnection()) {
            execute(c, "INSERT INTO telegram_checkpoint (bot_id, bot_name) VALUES (" + BASELINE_BOT + ", 'baseline')");
            c.setAutoCommit(false);
            long start = System.nanoTime();
            try (PreparedStatement insert = c.prepareStatement("INSERT INTO telegram_update (bot_id, update_id, update_type, payload)"
                    + " VALUES (?, ?, 'message', ?::jsonb) ON CONFLICT DO NOTHING");
                 PreparedStatement checkpoint = c.prepareStatement("UPDATE telegram_checkpoint SET next_offset = ? WHERE bot_id = ?")) {
                for (int id = 1; id <= rows; id++) {
                    insert.setLong(1, BASELINE_BOT);
                    insert.setLong(2, id);
                    insert.setString(3, "{\"update_id\":" + id + ",\"message\":{\"message_id\":" + id
                            + ",\"chat\":{\"id\":1,\"type\":\"private\"},\"date\":1,\"text\":\"" + payloadText + "\"}}");
                    insert.addBatch();
                    if (id % BATCH == 0 || id == rows) {
                        insert.executeBatch();
                        checkpoint.setLong(1, id + 1);
                        checkpoint.setLong(2, BASELINE_BOT);
                        checkpoint.executeUpdate();
                        c.commit();
                    }
                }
            }
            return rows / ((System.nanoTime() - start) / 1e9);
        }
    }

    private double intake(Database database, BotApiSimulator simulator, int updates, String payloadText, Path dir) throws Exception {
        String token = simulator.addBot(INTAKE_BOT, "BENCH-not-a-real-token", "bench_bot");
        for (int i = 0; i < updates; i++) {
            simulator.enqueueText(token, 1 + i % 50, payloadText);
        }
        Main camel = product(database, simulator.url(), token, dir);
        camel.configure().addRoutesBuilder(new RouteBuilder() {
            @Override
            public void configure() {
                from("telegram-inbox:main?timeout=1&limit=" + BATCH).routeId("bench").autoStartup(false)
                        .log(org.apache.camel.LoggingLevel.DEBUG, "stored");
            }
        });
        camel.start();
        try {
            long start = System.nanoTime();
            camel.getCamelContext().getRouteController().startRoute("bench");
            while (nextOffset(database) < updates + 1) {
                Thread.sleep(5);
            }
            return updates / ((System.nanoTime() - start) / 1e9);
        } finally {
            camel.stop();
        }
    }

    /**
     * The product's own wiring (named, not imported: ops sits below app) over the benchmark's
     * database, without HTTP, route files (its empty directory) or handlers: intake alone is measured.
     */
    private static Main product(Database database, String apiUrl, String token, Path dir) {
        Main camel = new Main();
        camel.bind("dataSource", database.dataSource());
        Map<String, String> properties = new HashMap<>(Map.of(
                "camel.main.configuration-classes", "io.chatintake.app.CamelConfiguration",
                "chat-intake.routes-dir", dir.toAbsolutePath().toString(),
                "camel.main.routes-reload-enabled", "false",
                "camel.server.enabled", "false",
                "camel.management.enabled", "false",
                "telegram.api-url", apiUrl,
                "telegram.bot-token", token));
        List.of("telegram-update", "unifyport-event", "album-child", "album-decision", "attachment")
                .forEach(kind -> properties.put("work.handlers." + kind, ""));
        properties.forEach(camel::addOverrideProperty);
        return camel;
    }

    private static long nextOffset(Database database) throws SQLException {
        try (Connection c = database.dataSource().getConnection();
             PreparedStatement ps = c.prepareStatement("SELECT next_offset FROM telegram_checkpoint WHERE bot_id = " + INTAKE_BOT);
             ResultSet rs = ps.executeQuery()) {
            return rs.next() ? rs.getLong(1) : 0;
        }
    }

    private static void execute(Connection c, String sql) throws SQLException {
        try (PreparedStatement ps = c.prepareStatement(sql)) {
            ps.executeUpdate();
        }
    }
}
