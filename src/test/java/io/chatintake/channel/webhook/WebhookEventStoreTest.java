package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.app.CamelConfiguration;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.testkit.RouteFile;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** The webhook inbox's store against a real PostgreSQL: what it tells the work dispatcher about intake. */
@ExtendWith(TestDatabase.class)
class WebhookEventStoreTest {
    private final DataSource db = TestDatabase.dataSource();
    private final AtomicInteger behind = new AtomicInteger();
    private final WebhookEventStore store = new WebhookEventStore(db, Duration.ofSeconds(5), "default", "unifyport", "unifyport-event",
            CamelConfiguration.childMessages(), behind::incrementAndGet);
    private final AtomicInteger events = new AtomicInteger();

    private void deliver() throws Exception {
        String eventId = "evt_store_" + events.incrementAndGet();
        store.store(RouteFile.unifyPortEvents(SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_1",
                Instant.now(), "{\"conversation\":{\"id\":\"c" + eventId.hashCode() % 8 + "\"},\"message\":{\"id\":\"" + eventId
                        + "\",\"type\":\"text\",\"text\":\"hi\"}}"), "dlv_" + eventId));
    }

    @Test
    void deliveriesThatQueueForASharedTransactionSayIntakeIsBehindAndDeliveriesOneAtATimeDoNot() throws Exception {
        for (int i = 0; i < 20; i++) {
            deliver();
        }
        assertThat(behind.get()).as("one delivery at a time").isZero();

        ExecutorService clients = Executors.newFixedThreadPool(16);
        try {
            List<Future<?>> sent = new ArrayList<>();
            for (int i = 0; i < 400; i++) {
                sent.add(clients.submit(() -> {
                    deliver();
                    return null;
                }));
            }
            for (Future<?> f : sent) {
                f.get();
            }
        } finally {
            clients.shutdownNow();
        }
        assertThat(behind.get()).as("16 clients at once, two transactions at a time").isPositive();
        assertThat(Sql.count(db, "SELECT count(*) FROM webhook_event WHERE event_id LIKE 'evt_store_%'")).isEqualTo(420);
    }
}
