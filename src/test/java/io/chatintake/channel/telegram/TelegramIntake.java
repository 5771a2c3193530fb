package io.chatintake.channel.telegram;

import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.InboxAudit;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.micrometer.prometheusmetrics.PrometheusConfig;
import io.micrometer.prometheusmetrics.PrometheusMeterRegistry;
import io.chatintake.testkit.WebhookServer;
import java.time.Clock;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.Processor;
import org.apache.camel.builder.RouteBuilder;

/**
 * The product (its configuration class, over the test database) running telegram-inbox routes
 * against the Bot API simulator: the real component, real HTTP on loopback, real PostgreSQL.
 * No process handles telegram-update work here (no route from work:telegram-update), so stored
 * updates go straight to the test's route on the consumer's hand-off thread: a failed update
 * stays failed, and each update of a batch reaches the route at once.
 */
final class TelegramIntake implements AutoCloseable {
    static final String FAST = "?timeout=1&leaseSeconds=10&backoffBaseMillis=50&backoffCapMillis=400";

    final List<Exchange> received = new CopyOnWriteArrayList<>();
    /** What the intake's metrics recorded. */
    final PrometheusMeterRegistry meters = new PrometheusMeterRegistry(PrometheusConfig.DEFAULT);
    private final WebhookServer.Builder product;
    private WebhookServer running;
    CamelContext camel;

    TelegramIntake(BotApiSimulator simulator) {
        this(simulator, Clock.systemUTC());
    }

    TelegramIntake(BotApiSimulator simulator, Clock clock) {
        this(simulator, clock, TestDatabase.dataSource());
    }

    /** @param dataSource the test database, or one that misbehaves over it */
    TelegramIntake(BotApiSimulator simulator, Clock clock, DataSource dataSource) {
        simulator.setAudit(new InboxAudit(TestDatabase.dataSource()));
        TelegramInboxComponent component = new TelegramInboxComponent();
        component.setClock(clock);
        product = WebhookServer.builder(dataSource).withoutHttp()
                .bean("telegram-inbox", component)
                .bean("metricsRegistry", meters)
                .setting("telegram.api-url", simulator.url())
                .setting("work.ordered-kinds", "album-child");
    }

    TelegramIntake property(String key, String value) {
        product.setting(key, value);
        return this;
    }

    /** A route from telegram-inbox:{bot} that collects what it receives, optionally failing. */
    TelegramIntake route(String bot, String options, boolean failing) {
        product.routes(new RouteBuilder() {
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

    /** Stored updates run as work, as in the runner: the dispatcher (two workers) hands them to {@code handler}. */
    TelegramIntake workHandler(Processor handler) {
        product.setting("work.concurrency", "2")
                .routes(new RouteBuilder() {
                    @Override
                    public void configure() {
                        from("work:telegram-update").process(handler);
                    }
                });
        return this;
    }

    TelegramIntake start() {
        running = product.start();
        camel = running.context();
        return this;
    }

    static long count(String sql) {
        return Sql.count(TestDatabase.dataSource(), sql);
    }

    @Override
    public void close() {
        running.close();
    }
}
