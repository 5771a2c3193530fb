package io.chatintake.channel.telegram;

import io.chatintake.app.Runner;

import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.InboxAudit;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
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
    /** What the intake's metrics recorded. */
    final SimpleMeterRegistry meters = new SimpleMeterRegistry();
    private final Properties properties = new Properties();

    TelegramIntake(BotApiSimulator simulator) {
        this(simulator, Clock.systemUTC());
    }

    TelegramIntake(BotApiSimulator simulator, Clock clock) {
        simulator.setAudit(new InboxAudit(TestDatabase.dataSource()));
        TelegramInboxComponent component = new TelegramInboxComponent();
        component.setDataSource(TestDatabase.dataSource());
        component.setChildMessageListener(Runner.childMessageListener());
        component.setClock(clock);
        camel.addComponent("telegram-inbox", component);
        camel.getRegistry().bind("metricsRegistry", meters);
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
        return Sql.count(TestDatabase.dataSource(), sql);
    }

    static void await(String what, Duration timeout, BooleanSupplier condition) {
        Await.until(what, timeout, condition);
    }

    @Override
    public void close() {
        camel.stop();
    }
}
