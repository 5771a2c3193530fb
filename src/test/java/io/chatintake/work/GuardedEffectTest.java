package io.chatintake.work;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import com.sun.net.httpserver.HttpServer;
import io.chatintake.config.Settings;
import io.chatintake.testkit.Await;
import io.chatintake.testkit.Sql;
import io.chatintake.testkit.TestDatabase;
import java.io.IOException;
import java.io.OutputStream;
import java.net.InetAddress;
import java.net.InetSocketAddress;
import java.net.ServerSocket;
import java.nio.charset.StandardCharsets;
import java.sql.Connection;
import java.time.Duration;
import java.util.List;
import java.util.Map;
import java.util.concurrent.ConcurrentHashMap;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.concurrent.CountDownLatch;
import java.util.concurrent.Executors;
import java.util.concurrent.TimeUnit;
import java.util.concurrent.atomic.AtomicInteger;
import javax.sql.DataSource;
import org.apache.camel.CamelContext;
import org.apache.camel.Message;
import org.apache.camel.component.http.HttpComponent;
import org.apache.camel.spi.Registry;
import org.apache.camel.support.PluginHelper;
import org.apache.camel.support.ResourceHelper;
import org.apache.camel.test.junit5.CamelTestSupport;
import org.apache.camel.test.junit5.TestExecutionConfiguration;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

/**
 * The guardedEffect policy around a real HTTP call to a server on loopback, run as work by the
 * real dispatcher over the product's database: what the call threw decides whether the item is
 * retried, parked or ended, unless a step said otherwise with EffectOutcome, and the effect is
 * performed at most once however often its item runs.
 */
@ExtendWith(TestDatabase.class)
class GuardedEffectTest extends CamelTestSupport {
    private static final Duration WAIT = Duration.ofSeconds(30);
    private static final String ROUTE = """
            - route:
                id: guarded-call
                from:
                  uri: "work:crm"
                  steps:
                    - policy:
                        id: crm-update
                        ref: guardedEffect
                        steps:
                          - filter:
                              simple: "${header.Declared} != null"
                              steps:
                                - setHeader:
                                    name: EffectOutcome
                                    simple: "${header.Declared}"
                          - toD: "${header.Target}"
                    - process:
                        ref: afterTheEffect
            """;

    private final DataSource db = TestDatabase.dataSource();
    /** Requests the server received, by path. */
    private final Map<String, AtomicInteger> received = new ConcurrentHashMap<>();
    /** Bodies the step after the policy saw, in order. */
    private final List<String> afterwards = new CopyOnWriteArrayList<>();
    private final AtomicInteger afterFailuresLeft = new AtomicInteger();
    private final CountDownLatch slowAnswered = new CountDownLatch(1);
    private HttpServer server;
    private int closedPort;
    private WorkDispatcher dispatcher;

    @BeforeEach
    void startServer() throws IOException {
        server = HttpServer.create(new InetSocketAddress(InetAddress.getLoopbackAddress(), 0), 0);
        server.setExecutor(Executors.newCachedThreadPool());
        server.createContext("/", exchange -> {
            String path = exchange.getRequestURI().getPath();
            int count = received.computeIfAbsent(path, p -> new AtomicInteger()).incrementAndGet();
            if (path.equals("/slow")) {
                try {
                    slowAnswered.await(10, TimeUnit.SECONDS);
                } catch (InterruptedException e) {
                    Thread.currentThread().interrupt();
                }
            }
            int status = path.equals("/gone") ? 404 : 200;
            byte[] body = ("msg-" + count).getBytes(StandardCharsets.UTF_8);
            exchange.sendResponseHeaders(status, body.length);
            try (OutputStream out = exchange.getResponseBody()) {
                out.write(body);
            }
        });
        server.start();
        try (ServerSocket nobody = new ServerSocket(0, 1, InetAddress.getLoopbackAddress())) {
            closedPort = nobody.getLocalPort();
        }
    }

    @AfterEach
    void stopAll() {
        if (dispatcher != null) {
            dispatcher.stop();
        }
        slowAnswered.countDown();
        server.stop(0);
    }

    @Override
    public void configureTest(TestExecutionConfiguration test) {
        super.configureTest(test);
        test.withUseAdviceWith(true);
    }

    @Override
    protected void bindToRegistry(Registry registry) {
        registry.bind(GuardedEffect.BEAN, new GuardedEffect(new EffectGuard(db)));
        registry.bind("afterTheEffect", (org.apache.camel.Processor) exchange -> {
            afterwards.add(exchange.getMessage().getBody(String.class));
            if (afterFailuresLeft.getAndDecrement() > 0) {
                throw new IllegalStateException("the step after the effect failed");
            }
        });
    }

    /** Loads the route, starts the context and a dispatcher running items of kind crm through it, three attempts each. */
    private void start(String route) throws Exception {
        CamelContext camel = context();
        camel.getComponent("http", HttpComponent.class).setResponseTimeout(700);
        PluginHelper.getRoutesLoader(camel).loadRoutes(ResourceHelper.fromString("guarded-call.yaml", route));
        camel.start();
        // An item's key says where its call goes and what a step declares: scenario[:declared outcome].
        WorkSource crm = new WorkSource("crm") {
            @Override
            public void load(Connection connection, WorkItem item, Message message) {
                String[] parts = item.sourceKey().split(":");
                message.setHeader("Target", parts[0].equals("refused") ? "http://127.0.0.1:" + closedPort + "/refused"
                        : "http://127.0.0.1:" + server.getAddress().getPort() + "/" + parts[0]);
                if (parts.length > 1) {
                    message.setHeader("Declared", parts[1]);
                }
            }
        };
        dispatcher = new WorkDispatcher(camel, new WorkQueue(db), List.of(crm), WorkDispatcher.Options.from(Settings.of(Map.of("work.concurrency", "2", "work.max-attempts", "3",
                "work.backoff-base-millis", "100", "work.backoff-cap-millis", "200", "work.poll-interval-millis", "50", "work.ordered-kinds", ""))));
        dispatcher.start();
    }

    private void item(String key) {
        Sql.execute(db, "INSERT INTO work_item (kind, source_key, source_id) VALUES ('crm', '" + key + "', 0)");
    }

    private String itemState() {
        return Sql.string(db, "SELECT state || ' ' || attempts || coalesce(' ' || outcome, '') FROM work_item");
    }

    private String effect() {
        return Sql.string(db, "SELECT effect_key || ' ' || state FROM outbound_effect");
    }

    @Test
    void aRefusedConnectionSentNothingSoTheItemIsRetried() throws Exception {
        item("refused");
        start(ROUTE);

        Await.until("three attempts, then parked after the last", WAIT, () -> "parked 3".equals(itemState()));
        assertThat(effect()).isEqualTo("refused:crm-update failed");
        assertThat(Sql.string(db, "SELECT last_error FROM work_item")).contains("failed").contains("ConnectException");
        assertThat(afterwards).as("the route stopped at the failed effect every time").isEmpty();
    }

    @Test
    void aReadTimeoutAfterTheRequestWasSentParksTheItemAsAmbiguous() throws Exception {
        item("slow");
        start(ROUTE);

        Await.until("parked", WAIT, () -> "parked 1".equals(itemState()));
        assertThat(received.get("/slow")).as("the request reached the server").hasValue(1);
        assertThat(effect()).as("left started for a person: work resolve-effect").isEqualTo("slow:crm-update started");
        assertThat(Sql.string(db, "SELECT last_error FROM work_item")).contains("ambiguous").contains("SocketTimeoutException");
    }

    @Test
    void aNotFoundIsUndeliverableTheItemEndsDoneWithoutARetry() throws Exception {
        item("gone");
        start(ROUTE);

        Await.until("done undeliverable", WAIT, () -> "done 1 undeliverable".equals(itemState()));
        assertThat(effect()).isEqualTo("gone:crm-update undeliverable");
        assertThat(received.get("/gone")).hasValue(1);
        assertThat(Sql.string(db, "SELECT last_error FROM work_item")).contains("HTTP status 404").doesNotContain("127.0.0.1");
    }

    @Test
    void theEffectOutcomeHeaderAStepSetOverridesWhatWasThrownOrNot() throws Exception {
        item("refused:performed");
        item("ok:ambiguous");
        item("gone:failed");
        start(ROUTE);

        Await.until("all three settled", WAIT, () -> Sql.count(db, "SELECT count(*) FROM work_item WHERE state IN ('done', 'parked')") == 3);
        assertThat(Sql.string(db, "SELECT string_agg(source_key || ' ' || state || ' ' || attempts, ', ' ORDER BY source_key) FROM work_item"))
                .isEqualTo("gone:failed parked 3, ok:ambiguous parked 1, refused:performed done 1");
        assertThat(Sql.string(db, "SELECT string_agg(effect_key || ' ' || state, ', ' ORDER BY effect_key) FROM outbound_effect"))
                .isEqualTo("gone:failed:crm-update failed, ok:ambiguous:crm-update started, refused:performed:crm-update done");
        assertThat(received.get("/gone")).as("failed: performed again on each attempt").hasValue(3);
    }

    @Test
    void anEffectPerformedOnceIsSkippedWhenItsItemRunsAgainAndItsResultIsRestored() throws Exception {
        afterFailuresLeft.set(1);
        item("ok");
        start(ROUTE);

        Await.until("done on the second attempt", WAIT, () -> "done 2".equals(itemState()));
        assertThat(received.get("/ok")).as("performed once").hasValue(1);
        assertThat(Sql.string(db, "SELECT state || ' ' || result FROM outbound_effect")).isEqualTo("done msg-1");
        assertThat(afterwards).as("the second run got the recorded result").containsExactly("msg-1", "msg-1");
    }

    @Test
    void anErrorHandlerThatRedeliversDoesNotRepeatTheEffectsCall() throws Exception {
        item("slow");
        start(ROUTE.replace("    id: guarded-call\n", """
                    id: guarded-call
                    errorHandler:
                      defaultErrorHandler:
                        redeliveryPolicy:
                          maximumRedeliveries: 2
                          redeliveryDelay: 0
                """));

        Await.until("parked", WAIT, () -> "parked 1".equals(itemState()));
        assertThat(received.get("/slow")).as("sent once: a timeout after sending is not redelivered").hasValue(1);
        assertThat(effect()).isEqualTo("slow:crm-update started");
    }

    @Test
    void aPolicyWithoutAnIdNamingItsEffectIsRefusedAtStart() {
        String unnamed = ROUTE.replaceFirst("\\n\\s+id: crm-update", "");
        assertThatThrownBy(() -> start(unnamed)).hasStackTraceContaining("needs an id naming its effect").hasStackTraceContaining("guarded-call.yaml:6");
    }
}
