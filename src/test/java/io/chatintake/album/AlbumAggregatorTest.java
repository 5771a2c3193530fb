package io.chatintake.album;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.chatintake.channel.ChildMessages;
import io.chatintake.channel.webhook.DerivingEventStore;
import io.chatintake.sim.SignedDeliverySender;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.RouteFile;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import io.chatintake.testkit.WebhookServer;
import java.time.Duration;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.concurrent.Callable;
import java.util.concurrent.CyclicBarrier;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import java.util.concurrent.atomic.AtomicBoolean;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.ExchangePropertyKey;
import org.apache.camel.processor.aggregate.AggregateProcessor;
import org.apache.camel.spi.OptimisticLockingAggregationRepository.OptimisticLockingException;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * routes/albums.yaml's Aggregator in two products on one database, as two runners share it: the
 * groups they hold in the JDBC repository, and completions they force on one group at once.
 */
@ExtendWith(TestDatabase.class)
class AlbumAggregatorTest {
    private static final Duration WAIT = Duration.ofSeconds(60);
    private static final String ROUTES = "file:routes/albums.yaml,file:routes/handlers.yaml";

    private final DataSource db = TestDatabase.dataSource();
    /** Deadlines an hour away: only what a test forces completes a group. */
    private final DerivingEventStore store = new DerivingEventStore(db, "default",
            ChildMessages.listener(new QuietPeriods(Duration.ofHours(1), Duration.ofHours(1))));
    private final List<WebhookServer> products = new ArrayList<>();
    private int events;

    @BeforeEach
    void startTwoProducts() throws Exception {
        for (int i = 0; i < 2; i++) {
            WebhookServer product = WebhookServer.startWithWork(db, Map.of("albums.quiet-period-seconds", "3600"), ROUTES);
            // the sweeps stay still: completions here are the ones a test forces
            product.context().getRouteController().stopRoute("album-deadlines");
            products.add(product);
        }
    }

    @AfterEach
    void stopProducts() {
        products.forEach(WebhookServer::close);
    }

    private AlbumAggregateController controller(int product) {
        return products.get(product).context().getRegistry().lookupByNameAndType("albumAggregateController", AlbumAggregateController.class);
    }

    private void child(String conversation, String messageId, String albumId, int index) throws Exception {
        child(conversation, messageId, albumId, index, null);
    }

    private void child(String conversation, String messageId, String albumId, int index, Integer total) throws Exception {
        String data = "{\"conversation\":{\"id\":\"" + conversation + "\"},\"message\":{\"id\":\"" + messageId + "\",\"type\":\"image\","
                + "\"album\":{\"id\":\"" + albumId + "\",\"index\":" + index + (total == null ? "" : ",\"total\":" + total) + "}}}";
        String eventId = "evt_" + (++events);
        store.store(RouteFile.unifyPortEvents(SignedDeliverySender.envelope(eventId, "message.received", "whatsapp", "acc_1",
                Instant.now(), data), "dlv_" + eventId));
    }

    private static String key(String conversation, String albumId) {
        return "[\"default\", \"whatsapp\", \"acc_1\", \"" + conversation + "\", \"" + albumId + "\"]";
    }

    private void awaitGroups(int groups) {
        Await.until(groups + " groups aggregated", WAIT, () -> Sql.count(db, "SELECT count(*) FROM album_aggregation") == groups
                && Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'album-child' AND state <> 'done'") == 0);
    }

    @Test
    void twoProcessesForcingOneGroupAtTheSameInstantMakeOneDecision() throws Exception {
        int albums = 20;
        for (int album = 0; album < albums; album++) {
            child("race-" + album, "r" + album + "-1", "race", 1);
            child("race-" + album, "r" + album + "-2", "race", 2);
        }
        awaitGroups(albums);
        assertThat(Sql.count(db, "SELECT count(*) FROM album WHERE decide_after > now() + interval '50 minutes'"))
                .as("each group moved its album's deadline to the route's quiet period").isEqualTo(albums);
        Sql.execute(db, "UPDATE album SET decide_after = now() - interval '1 second'");

        ExecutorService pool = Executors.newFixedThreadPool(2);
        int completed = 0;
        int refused = 0;
        try {
            for (int album = 0; album < albums; album++) {
                String key = key("race-" + album, "race");
                CyclicBarrier together = new CyclicBarrier(2);
                List<Future<Integer>> forced = new ArrayList<>();
                for (int product = 0; product < 2; product++) {
                    AlbumAggregateController controller = controller(product);
                    forced.add(pool.submit((Callable<Integer>) () -> {
                        together.await();
                        try {
                            return controller.forceCompletionOfGroup(key);
                        } catch (OptimisticLockingException e) {
                            return -1;
                        }
                    }));
                }
                for (Future<Integer> f : forced) {
                    int result = f.get();
                    completed += Math.max(result, 0);
                    refused += result < 0 ? 1 : 0;
                }
            }
        } finally {
            pool.shutdown();
        }

        assertThat(completed).as("one completion per group; the other found it gone or lost the versioned removal").isEqualTo(albums);
        Await.until("the completed groups' decisions", WAIT, () -> Sql.count(db, "SELECT count(*) FROM album_decision") >= albums);
        Await.until("every completed group confirmed", WAIT, () -> Sql.count(db, "SELECT count(*) FROM album_aggregation_completed") == 0);
        assertThat(Sql.count(db, "SELECT count(*) FROM album_decision")).isEqualTo(albums);
        assertThat(Sql.count(db, "SELECT count(*) FROM album_decision WHERE kind = 'provisional' AND jsonb_array_length(child_ids) = 2"
                + " AND completed_by = 'timeout'")).isEqualTo(albums);
        assertThat(Sql.count(db, "SELECT count(*) FROM album_aggregation")).isZero();
        System.out.printf("forced together on %d groups: %d completions, %d lost the versioned removal%n", albums, completed, refused);
    }

    /**
     * Albums whose children are all stored before their work runs: each child after the one that
     * completes its album finds the group removed and loses the removal, on every worker of both
     * products at once. A lost race retried off the worker's thread lost its callback, and the
     * workers waited for it for good.
     */
    @Test
    void childrenLosingTheRemovalOfTheirAlbumOnEveryWorkerAtOnceNeverHoldAWorker() throws Exception {
        int albums = 40;
        int children = 4;
        for (int album = 0; album < albums; album++) {
            for (int index = 1; index <= children; index++) {
                child("busy-" + album, "b" + album + "-" + index, "busy", index, children);
            }
        }
        Await.until("every child aggregated", WAIT, () -> Sql.count(db, "SELECT count(*) FROM work_item"
                + " WHERE kind = 'album-child' AND state <> 'done'") == 0);
        Await.until("every album decided once", WAIT, () -> Sql.count(db, "SELECT count(*) FROM album_decision") >= albums
                && Sql.count(db, "SELECT count(*) FROM album_aggregation_completed") == 0);
        assertThat(Sql.count(db, "SELECT count(*) FROM album_decision")).isEqualTo(albums);
        assertThat(Sql.count(db, "SELECT count(*) FROM album_decision WHERE kind = 'complete' AND jsonb_array_length(child_ids) = 4"))
                .isEqualTo(albums);
        assertThat(Sql.count(db, "SELECT count(*) FROM work_item WHERE kind = 'album-child' AND attempts > 1"))
                .as("no child's work failed for a lost race").isZero();
    }

    @Test
    void twoSweepsRemovingTheSameOverdueGroupsAtTheSameInstantCompleteEachOnce() throws Exception {
        int albums = 200;
        for (int album = 0; album < albums; album++) {
            child("sweep-" + album, "s" + album + "-1", "sweep", 1);
        }
        awaitGroups(albums);
        Sql.execute(db, "UPDATE album SET decide_after = now() - interval '1 second'");

        CyclicBarrier together = new CyclicBarrier(2);
        ExecutorService pool = Executors.newFixedThreadPool(2);
        int completed = 0;
        try {
            List<Future<Integer>> sweeps = new ArrayList<>();
            for (int product = 0; product < 2; product++) {
                WebhookServer server = products.get(product);
                AlbumDeadlineSweep sweep = server.context().getRegistry().lookupByNameAndType("albumDeadlineSweep", AlbumDeadlineSweep.class);
                sweeps.add(pool.submit(() -> {
                    together.await();
                    return sweep.completeOverdueGroups();
                }));
            }
            for (Future<Integer> sweep : sweeps) {
                completed += sweep.get();
            }
        } finally {
            pool.shutdown();
        }

        assertThat(completed).as("each overdue group removed and completed by one of the two sweeps").isEqualTo(albums);
        Await.until("every completed group decided and confirmed", WAIT, () -> Sql.count(db, "SELECT count(*) FROM album_aggregation_completed") == 0
                && Sql.count(db, "SELECT count(*) FROM album_decision") >= albums);
        assertThat(Sql.count(db, "SELECT count(*) FROM album_decision")).as("one decision each").isEqualTo(albums);
        assertThat(Sql.count(db, "SELECT count(DISTINCT album_key) FROM album_decision WHERE kind = 'provisional'")).isEqualTo(albums);
        assertThat(Sql.count(db, "SELECT count(*) FROM album_aggregation")).isZero();
    }

    @Test
    void aGroupTheSweepRemovedIsTakenOnlyByItsCompletionByForce() throws Exception {
        child("handed", "h1", "handed", 1);
        awaitGroups(1);
        Sql.execute(db, "UPDATE album SET decide_after = now() - interval '1 second'");
        String key = key("handed", "handed");
        CamelContext camel = products.get(0).context();
        AlbumAggregationRepository repository = camel.getRegistry().lookupByNameAndType("albumAggregationRepository",
                AlbumAggregationRepository.class);

        Map<String, AlbumAggregationRepository.Removal> removed = repository.removeOverdue(10);
        assertThat(removed).containsOnlyKeys(key);
        int completed = repository.completeRemoved(removed, albumKey -> {
            // a child's completion by count, and this runner's timeout, reaching the album meanwhile
            Exchange byCount = repository.get(camel, albumKey);
            byCount.setProperty(ExchangePropertyKey.AGGREGATED_COMPLETED_BY, AggregateProcessor.COMPLETED_BY_PREDICATE);
            AtomicBoolean removalLost = new AtomicBoolean();
            byCount.setProperty(AlbumAggregation.REMOVAL_LOST, removalLost);
            assertThatThrownBy(() -> repository.remove(camel, albumKey, byCount)).isInstanceOf(OptimisticLockingException.class);
            assertThat(removalLost).as("the child learns its completion lost").isTrue();
            Exchange byTimeout = repository.get(camel, albumKey);
            byTimeout.setProperty(ExchangePropertyKey.AGGREGATED_COMPLETED_BY, AggregateProcessor.COMPLETED_BY_TIMEOUT);
            assertThatThrownBy(() -> repository.remove(camel, albumKey, byTimeout)).isInstanceOf(OptimisticLockingException.class);
            return controller(0).forceCompletionOfGroup(albumKey);
        });

        assertThat(completed).as("the sweep's forced completion took the group it removed").isEqualTo(1);
        Await.until("the decision", WAIT, () -> Sql.count(db, "SELECT count(*) FROM album_aggregation_completed") == 0);
        assertThat(Sql.string(db, "SELECT kind || ' ' || jsonb_array_length(child_ids) FROM album_decision")).isEqualTo("provisional 1");
    }

    @Test
    void aGroupIsNotCompletedByTimeoutOrForceBeforeItsDeadlineInTheDatabase() throws Exception {
        child("early", "e1", "early", 1);
        awaitGroups(1);
        String key = key("early", "early");

        assertThatThrownBy(() -> controller(1).forceCompletionOfGroup(key)).as("an hour before the deadline")
                .isInstanceOf(OptimisticLockingException.class);
        assertThat(Sql.count(db, "SELECT count(*) FROM album_aggregation")).as("the group stays").isEqualTo(1);
        assertThat(Sql.count(db, "SELECT count(*) FROM album_decision")).isZero();

        Sql.execute(db, "UPDATE album SET decide_after = now()");
        assertThat(controller(1).forceCompletionOfGroup(key)).as("the other product completes it once due").isEqualTo(1);
        Await.until("the decision", WAIT, () -> Sql.count(db, "SELECT count(*) FROM album_aggregation_completed") == 0);
        assertThat(Sql.string(db, "SELECT kind || ' ' || jsonb_array_length(child_ids) FROM album_decision")).isEqualTo("provisional 1");
    }

    @Test
    void aCompletedGroupWhoseRunnerDiedIsRecoveredByAnotherAndDecidedOnce() throws Exception {
        child("lost", "l1", "lost", 1);
        awaitGroups(1);
        String key = key("lost", "lost");
        // what a runner killed between the group's removal (once overdue) and the decision's record leaves behind
        Sql.execute(db, "UPDATE album SET decide_after = now() - interval '1 minute';"
                + " INSERT INTO album_aggregation_completed (id, album_key, version, completed_by, completed_at)"
                + " VALUES ('lost-exchange', '" + key.replace("'", "''") + "', 0, 'timeout', now() - interval '1 minute')");
        assertThat(Sql.count(db, "SELECT count(*) FROM album_aggregation")).as("no group while its removal is in flight").isZero();

        Await.until("the recovered completion decided", WAIT, () -> Sql.count(db, "SELECT count(*) FROM album_decision") == 1
                && Sql.count(db, "SELECT count(*) FROM album_aggregation_completed") == 0);
        assertThat(Sql.string(db, "SELECT kind || ' ' || jsonb_array_length(child_ids) FROM album_decision")).isEqualTo("provisional 1");
    }
}
