package io.chatintake.channel.telegram;

import static org.assertj.core.api.Assertions.assertThat;

import com.fasterxml.jackson.databind.JsonNode;
import io.chatintake.sim.BotApiSimulator;
import io.chatintake.testkit.RunnerProcess;
import io.chatintake.work.EffectFailure;
import io.chatintake.work.EffectOutcome;
import java.time.Instant;
import java.util.ArrayList;
import java.util.List;
import java.util.Map;
import java.util.Properties;
import java.util.concurrent.ExecutorService;
import java.util.concurrent.Executors;
import java.util.concurrent.Future;
import org.apache.camel.CamelContext;
import org.apache.camel.Exchange;
import org.apache.camel.ProducerTemplate;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.AfterEach;
import org.junit.jupiter.api.BeforeEach;
import org.junit.jupiter.api.Test;

/** telegram-bot against the Bot API simulator over real HTTP. */
class TelegramBotProducerTest {
    private BotApiSimulator simulator;
    private CamelContext camel;
    private ProducerTemplate template;
    private String token;

    @BeforeEach
    void start() {
        simulator = BotApiSimulator.start();
        // A token with a space and a quote: URI.create would fail and quote it whole.
        token = simulator.addBot(31, "odd token\"Zq", "producer_test_bot");
        camel = new DefaultCamelContext();
        Properties properties = new Properties();
        properties.setProperty("telegram.api-url", simulator.url());
        properties.setProperty("telegram.bot-token", token);
        properties.setProperty("telegram.bots.offline.token", token);
        properties.setProperty("telegram.send.per-bot-per-second", "10000");
        properties.setProperty("telegram.send.per-chat-per-second", "10000");
        camel.getPropertiesComponent().setInitialProperties(properties);
        camel.start();
        template = camel.createProducerTemplate();
    }

    @AfterEach
    void stop() {
        camel.stop();
        simulator.close();
    }

    @Test
    void sendMessageSendsTheBodyToTheChatOfTheHeaderAndReturnsTheMessageId() {
        Exchange exchange = send("telegram-bot:main", "hello", 42L);

        assertThat(exchange.getException()).isNull();
        assertThat(exchange.getMessage().getBody()).isInstanceOf(Long.class);
        assertThat(exchange.getMessage().getHeader(TelegramBotConstants.MESSAGE_ID)).isEqualTo(exchange.getMessage().getBody());
        assertThat(simulator.sentMessages(token)).singleElement()
                .satisfies(m -> assertThat(m.path("chat_id").asLong()).isEqualTo(42))
                .satisfies(m -> assertThat(m.path("text").asText()).isEqualTo("hello"));
    }

    @Test
    void anyOtherMethodTakesAJsonBodyAndReturnsTheResultJson() {
        Exchange exchange = template.send("telegram-bot:main?method=getMe", e -> e.getMessage().setBody("{}"));

        assertThat(exchange.getException()).isNull();
        assertThat(exchange.getMessage().getBody(String.class)).contains("\"username\":\"producer_test_bot\"");
    }

    @Test
    void eightThreadsSendingAtOnceNeverMixChats() throws Exception {
        ExecutorService threads = Executors.newFixedThreadPool(8);
        List<Future<Exchange>> sends = new ArrayList<>();
        for (int i = 0; i < 400; i++) {
            long chat = 1000 + i;
            sends.add(threads.submit(() -> send("telegram-bot:main", "text for " + chat, chat)));
        }
        for (Future<Exchange> send : sends) {
            assertThat(send.get().getException()).isNull();
        }
        threads.shutdown();

        List<JsonNode> sent = simulator.sentMessages(token);
        assertThat(sent).hasSize(400)
                .allSatisfy(m -> assertThat(m.path("text").asText()).isEqualTo("text for " + m.path("chat_id").asLong()));
        assertThat(sent.stream().map(m -> m.path("chat_id").asLong()).distinct()).hasSize(400);
    }

    @Test
    void aBlockedChatIsUndeliverableAndA429IsNotPerformedUntilRetryAfter() {
        simulator.blockChat(token, 66);
        assertThat(failure(send("telegram-bot:main", "hi", 66L)).outcome()).isEqualTo(EffectOutcome.UNDELIVERABLE);

        simulator.rateLimitSends(token, 1.0, 7);
        EffectFailure limited = failure(send("telegram-bot:main", "hi", 67L));
        assertThat(limited.outcome()).isEqualTo(EffectOutcome.FAILED);
        assertThat(limited.notBefore()).isAfter(Instant.now().plusSeconds(6));
        assertThat(limited.getMessage()).contains("429").doesNotContain(token).doesNotContain("odd token");
    }

    @Test
    void aServerThatIsNotThereIsNotPerformedAndTheErrorNeverNamesTheToken() {
        String closed = "http://127.0.0.1:" + RunnerProcess.freePort();
        Exchange exchange = send("telegram-bot:offline?apiUrl=" + closed, "hi", 1L);

        EffectFailure failure = failure(exchange);
        assertThat(failure.outcome()).isEqualTo(EffectOutcome.FAILED);
        assertThat(failure.getMessage()).contains("not sent").doesNotContain("odd").doesNotContain("Zq");
    }

    @Test
    void noTokenIsNotPerformedAndNamesTheVariableToSet() {
        EffectFailure failure = failure(send("telegram-bot:sales", "hi", 1L));
        assertThat(failure.outcome()).isEqualTo(EffectOutcome.FAILED);
        assertThat(failure.getMessage()).contains("TELEGRAM_BOTS_SALES_TOKEN");
    }

    @Test
    void errorAnswersAreClassifiedByWhatTheyProve() {
        Map<BotApiException, EffectOutcome> cases = Map.of(
                BotApiException.fromAnswer(403, "Forbidden: bot was blocked by the user", 0), EffectOutcome.UNDELIVERABLE,
                BotApiException.fromAnswer(400, "Bad Request: chat not found", 0), EffectOutcome.UNDELIVERABLE,
                BotApiException.fromAnswer(400, "Bad Request: message text is empty", 0), EffectOutcome.FAILED,
                BotApiException.fromAnswer(429, "Too Many Requests", 3), EffectOutcome.FAILED,
                BotApiException.fromAnswer(401, "Unauthorized", 0), EffectOutcome.FAILED,
                BotApiException.fromAnswer(502, "Bad Gateway", 0), EffectOutcome.AMBIGUOUS,
                BotApiException.fromAnswer(200, "answer is not JSON", 0), EffectOutcome.AMBIGUOUS,
                BotApiException.network("HttpTimeoutException: request timed out"), EffectOutcome.AMBIGUOUS,
                BotApiException.notSent("ConnectException"), EffectOutcome.FAILED);
        cases.forEach((error, outcome) ->
                assertThat(TelegramBotProducer.failure("t", error).outcome()).as(error.getMessage()).isEqualTo(outcome));
    }

    private Exchange send(String uri, String text, Long chat) {
        return template.send(uri, e -> {
            e.getMessage().setBody(text);
            e.getMessage().setHeader(TelegramInboxConstants.CHAT_ID, chat);
        });
    }

    private static EffectFailure failure(Exchange exchange) {
        EffectFailure failure = exchange.getException(EffectFailure.class);
        assertThat(failure).as("an EffectFailure, not " + exchange.getException()).isNotNull();
        return failure;
    }
}
