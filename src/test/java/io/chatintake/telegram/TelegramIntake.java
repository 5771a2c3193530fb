package io.chatintake.telegram;

import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.InboxAudit;
import io.chatintake.testkit.TestDatabase;
import java.sql.Connection;
import java.sql.ResultSet;
import java.sql.Statement;
import java.time.Clock;
import java.time.Duration;
import java.util.List;
import java.util.Properties;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.function.BooleanSupplier;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.builder.RouteBuilder;
import org.apache.camel.impl.DefaultCamelContext;

/**
 * A Camel context running telegram-inbox routes against the Bot API simulator and the test
 * database: the real component, real HTTP on loopback, real PostgreSQL.
 */
final class TelegramIntake implements AutoCloseable {
    static final String FAST = "?timeout=1&leaseSeconds=10&backoffBaseMillis=50&backoffCapMillis=400";

    final CamelContext camel = new DefaultCamelContext();
    final List<Exchange> received = new CopyOnWriteArrayList<>();
    private final Properties properties = new Properties();

    TelegramIntake(BotApiSimulator simulator) {
        this(simulator, Clock.systemUTC());
    }

    TelegramIntake(BotApiSimulator simulator, Clock clock) {
        simulator.setAudit(new InboxAudit(TestDatabase.dataSource()));
        TelegramInboxComponent component = new TelegramInboxComponent();
        component.setDataSource(TestDatabase.dataSource());
        component.setClock(clock);
        camel.addComponent("telegram-inbox", component);
        properties.setProperty("telegram.api-url", simulator.url());
        camel.getPropertiesComponent().setInitialProperties(properties);
    }

    TelegramIntake property(String key, String value) {
        properties.setProperty(key, value);
        return this;
    }

    /** A route from telegram-inbox:{bot} that collects what it receives, optionally failing. */
    TelegramIntake route(String bot, String options, boolean failing) throws Exception {
        camel.addRoutes(new RouteBuilder() {
            @Override
            public void configure() {
                from("telegram-inbox:" + bot + options).routeId("telegram-" + bot).process(exchange -> {
                    received.add(exchange.copy());
                    if (failing) {
                        throw new IllegalStateException("handler down");
                    }
                });
            }
        });
        return this;
    }

    TelegramIntake start() {
        camel.start();
        return this;
    }

    static long count(String sql) {
        try (Connection c = TestDatabase.dataSource().getConnection(); Statement s = c.createStatement(); ResultSet rs = s.executeQuery(sql)) {
            rs.next();
            return rs.getLong(1);
        } catch (Exception e) {
            throw new IllegalStateException(e);
        }
    }

    static void await(String what, Duration timeout, BooleanSupplier condition) {
        long deadline = System.nanoTime() + timeout.toNanos();
        while (!condition.getAsBoolean()) {
            if (System.nanoTime() > deadline) {
                throw new AssertionError("timed out waiting for: " + what);
            }
            try {
                Thread.sleep(50);
            } catch (InterruptedException e) {
                Thread.currentThread().interrupt();
                throw new AssertionError(e);
            }
        }
    }

    @Override
    public void close() {
        camel.stop();
    }
}
