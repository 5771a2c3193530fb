package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.sim.BotApiSimulator;
import io.chatintake.sim.InboxAudit;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.time.Duration;
import java.util.ArrayList;
import java.util.List;
import java.util.Set;
import java.util.concurrent.atomic.AtomicInteger;
import java.util.stream.Collectors;
import java.util.stream.IntStream;
import javax.sql.DataSource;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * 100 bots listed in configuration, polled by one process from the shipped route template, against
 * the simulator: every update of every bot is stored once and handled, and no bot costs a thread
 * of its own: long polls wait in the shared HTTP client, not on a thread, and the bots' steps,
 * the scheduling that turns updates into work and the hand-off run on shared pools.
 */
@ExtendWith(TestDatabase.class)
class ManyBotsTest {
    private static final int BOTS = 100;
    private static final int UPDATES_PER_BOT = 3;
    /**
     * The process's threads, whatever the number of bots: Camel's timers and executors, the work
     * dispatcher's workers and heartbeat, the shared HTTP selector, the polling pool (8) and the
     * scheduling pool, the database pool's housekeeping. Started after the test's own threads, so
     * only the product's are counted: 40 leaves room for them, and is below the 100 that one
     * thread per bot would cost on its own (and the 200 that two per bot once cost).
     */
    private static final int FIXED_THREADS = 40;

    @Test
    void aHundredBotsStoreEveryUpdateOnceOnAFixedFewThreads(DataSource db) throws Exception {
        try (BotApiSimulator simulator = BotApiSimulator.start()) {
            simulator.setAudit(new InboxAudit(db));
            List<String> names = IntStream.rangeClosed(1, BOTS).mapToObj(i -> String.format("bot%03d", i)).toList();
            List<String> tokens = new ArrayList<>();
            WebhookServer.Builder product = WebhookServer.builder(db).withoutHttp().routeFiles("file:routes/telegram.yaml")
                    .setting("telegram.api-url", simulator.url())
                    .setting("telegram.bots", String.join(",", names))
                    .setting("telegram.poll-timeout-seconds", "2")
                    .setting("telegram.lease-seconds", "20");
            for (int i = 0; i < BOTS; i++) {
                String token = simulator.addBot(20_000 + i, "FAKE-many-" + i, names.get(i));
                tokens.add(token);
                product.setting("telegram.bots." + names.get(i) + ".token", token);
                for (int u = 0; u < UPDATES_PER_BOT; u++) {
                    simulator.enqueueText(token, 500 + i, names.get(i) + " update " + u);
                }
            }
            AtomicInteger handled = new AtomicInteger();
            product.routes(new RouteBuilder() {
                @Override
                public void configure() {
                    from("work:telegram-update").process(exchange -> handled.incrementAndGet());
                }
            });
            Set<Thread> before = otherThreads();
            try (WebhookServer running = product.start()) {
                Await.until("every update stored", Duration.ofSeconds(120),
                        () -> Sql.count(db, "SELECT count(*) FROM telegram_update") == BOTS * UPDATES_PER_BOT);
                Await.until("every update handled", Duration.ofSeconds(120), () -> handled.get() >= BOTS * UPDATES_PER_BOT);
                assertThat(running.context().getRoutes()).filteredOn(r -> r.getRouteId().startsWith("telegram-bot")).hasSize(BOTS);

                Set<Thread> product0 = otherThreads();
                product0.removeAll(before);
                List<String> names0 = product0.stream().map(Thread::getName).sorted().collect(Collectors.toList());
                System.out.printf("%d bots: %d threads of the product%n", BOTS, names0.size());
                assertThat(names0).as("no thread named after a bot").noneMatch(n -> n.startsWith("telegram-inbox-"));
                assertThat(names0.size()).as("the process's fixed threads, none per bot: %s", names0).isLessThanOrEqualTo(FIXED_THREADS);
            }
            assertThat(Sql.count(db, "SELECT count(DISTINCT (bot_id, update_id)) FROM telegram_update")).isEqualTo(BOTS * UPDATES_PER_BOT);
            assertThat(handled.get()).as("each handled once").isEqualTo(BOTS * UPDATES_PER_BOT);
            tokens.forEach(token -> assertThat(simulator.queued(token)).isZero());
            assertThat(simulator.violations()).isEmpty();
        }
    }

    /** Live threads, except the simulator's own (one per long poll it is answering). */
    private static Set<Thread> otherThreads() {
        return Thread.getAllStackTraces().keySet().stream().filter(Thread::isAlive)
                .filter(t -> !t.getName().startsWith("bot-api-simulator") && !t.getName().startsWith("HTTP-Dispatcher"))
                .collect(Collectors.toSet());
    }
}
