package io.chatintake.work;

import static io.chatintake.work.WorkerParts.ORDERED;
import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.Await;
import io.chatintake.testkit.LogCapture;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.lang.reflect.InvocationTargetException;
import java.lang.reflect.Proxy;
import java.sql.SQLTransientConnectionException;
import java.time.Duration;
import java.util.List;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.atomic.AtomicBoolean;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.apache.camel.builder.RouteBuilder;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/** One dispatcher worker's loop over real parts: claiming, running, waiting, going on, stopping. */
@ExtendWith(TestDatabase.class)
class RunUntilShutdownTest {
    private static final Duration WAIT = Duration.ofSeconds(20);

    private final DataSource dataSource = TestDatabase.dataSource();
    private final List<String> handled = new CopyOnWriteArrayList<>();
    private WorkerParts parts;
    private Thread worker;

    private final RouteBuilder handlers = new RouteBuilder() {
        @Override
        public void configure() {
            from("work:" + ORDERED).process(e -> handled.add(e.getMessage().getBody(String.class)));
            from("work:breaks-once").process(e -> handled.add(e.getMessage().getBody(String.class)));
        }
    };

    private void startWorker(DataSource db, Duration pollInterval, WorkSource... more) throws Exception {
        parts = new WorkerParts(db, handlers, more);
        worker = new Thread(parts.worker(1, pollInterval), "run-until-shutdown-test");
        worker.start();
    }

    @AfterEach
    void stop() throws Exception {
        if (parts != null) {
            parts.close();
            worker.join(WAIT.toMillis());
        }
    }

    @Test
    void anIdleWorkerIsWokenByANudgeAndReturnsOnceStopped() throws Exception {
        // A poll interval far beyond the wait below: only the nudge can bring the worker to the new work.
        startWorker(dataSource, Duration.ofMinutes(5));
        Await.until("the worker waiting for work", WAIT, () -> worker.getState() == Thread.State.TIMED_WAITING);

        parts.schedule(ORDERED, "a", 1, 2);
        parts.wakeups.nudge();
        Await.until("the nudged worker ran the new work", WAIT, () -> handled.equals(List.of("ordered-work:1", "ordered-work:2")));
        Await.until("recorded done", WAIT, () -> Sql.count(dataSource, "SELECT count(*) FROM work_item WHERE state = 'done'") == 2);

        parts.running.set(false);
        parts.wakeups.wakeAll();
        worker.join(WAIT.toMillis());
        assertThat(worker.isAlive()).as("the worker returned once stopped").isFalse();
    }

    @Test
    void anUnexpectedFailureIsLoggedAndTheWorkerGoesOn() throws Exception {
        AtomicInteger loads = new AtomicInteger();
        try (LogCapture log = new LogCapture()) {
            startWorker(dataSource, Duration.ofMillis(50), WorkerParts.breaksOnce("breaks-once", loads));
            parts.schedule("breaks-once", "a", 1);
            Await.until("the failure logged", WAIT, () -> log.lines().stream().anyMatch(line -> line.contains("a dispatcher worker failed; it goes on")));

            parts.schedule(ORDERED, "b", 2);
            Await.until("work after the failure handled", WAIT, () -> handled.contains("ordered-work:2"));
            assertThat(log.lines()).filteredOn(line -> line.contains("a dispatcher worker failed")).hasSize(1);
        }
        assertThat(worker.isAlive()).isTrue();
        assertThat(Sql.string(dataSource, "SELECT state || '/' || attempts FROM work_item WHERE kind = 'breaks-once'"))
                .as("the failed run waits for its claim to expire, its attempt counted, as after a crash").isEqualTo("running/1");
    }

    @Test
    void aWorkerThatCannotReachTheDatabaseWarnsAndClaimsOnceItCan() throws Exception {
        AtomicBoolean away = new AtomicBoolean(true);
        DataSource comesAndGoes = (DataSource) Proxy.newProxyInstance(getClass().getClassLoader(), new Class<?>[] {DataSource.class},
                (proxy, method, args) -> {
                    if (method.getName().equals("getConnection") && away.get()) {
                        throw new SQLTransientConnectionException("injected: the database is away", "08001");
                    }
                    try {
                        return method.invoke(dataSource, args);
                    } catch (InvocationTargetException e) {
                        throw e.getCause();
                    }
                });
        try (LogCapture log = new LogCapture()) {
            WorkerParts.schedule(dataSource, ORDERED, "a", 1);
            startWorker(comesAndGoes, Duration.ofMillis(50));
            Await.until("a warning that it cannot claim", WAIT,
                    () -> log.lines().stream().anyMatch(line -> line.contains("cannot claim work (injected: the database is away); retrying")));
            assertThat(handled).isEmpty();

            away.set(false);
            Await.until("claimed and run once the database is back", WAIT, () -> handled.contains("ordered-work:1"));
            assertThat(log.lines()).noneMatch(line -> line.contains("a dispatcher worker failed"));
        }
        assertThat(worker.isAlive()).isTrue();
    }
}
