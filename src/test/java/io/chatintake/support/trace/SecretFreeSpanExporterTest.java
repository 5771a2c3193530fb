package io.chatintake.support.trace;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.support.Redactor;
import io.opentelemetry.api.common.AttributeKey;
import io.opentelemetry.api.common.Attributes;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.sdk.common.CompletableResultCode;
import io.opentelemetry.sdk.trace.SdkTracerProvider;
import io.opentelemetry.sdk.trace.data.SpanData;
import io.opentelemetry.sdk.trace.export.SimpleSpanProcessor;
import io.opentelemetry.sdk.trace.export.SpanExporter;
import java.util.Collection;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import org.junit.jupiter.api.Test;

class SecretFreeSpanExporterTest {
    private static final String BOT_TOKEN = "123456:AAE-secret-bot-token-for-the-exporter-test";

    private final List<SpanData> exported = new CopyOnWriteArrayList<>();

    private Tracer tracer() {
        SpanExporter collecting = new SpanExporter() {
            @Override
            public CompletableResultCode export(Collection<SpanData> spans) {
                exported.addAll(spans);
                return CompletableResultCode.ofSuccess();
            }

            @Override
            public CompletableResultCode flush() {
                return CompletableResultCode.ofSuccess();
            }

            @Override
            public CompletableResultCode shutdown() {
                return CompletableResultCode.ofSuccess();
            }
        };
        return SdkTracerProvider.builder().addSpanProcessor(SimpleSpanProcessor.create(new SecretFreeSpanExporter(collecting)))
                .build().get("test");
    }

    @Test
    void urlsKeepTheirOriginAndTextTokensAndHeadersAreDropped() {
        Redactor.register(List.of(BOT_TOKEN));
        Span span = tracer().spanBuilder("POST https://api.telegram.org/bot" + BOT_TOKEN + "/sendMessage").startSpan();
        span.setAttribute("http.url", "https://api.telegram.org/bot" + BOT_TOKEN + "/sendMessage?chat_id=1");
        span.setAttribute("url.full", "https://discord.com/api/v10/webhooks/app/interaction-token-xyz");
        span.setAttribute("url.path", "/webhooks/app/interaction-token-xyz");
        span.setAttribute("camel.uri", "direct://discord-event");
        span.setAttribute("message.body", "hello from a person");
        span.setAttribute("replyToken", "line-reply-token");
        span.setAttribute("http.request.header.x-signature-ed25519", "abcdef");
        span.setAttribute("component", "camel-http " + BOT_TOKEN);
        span.setAttribute("http.status_code", 200L);
        span.addEvent("log", Attributes.of(AttributeKey.stringKey("message"), "hello from a person"));
        span.end();

        SpanData data = exported.get(0);
        assertThat(data.getName()).isEqualTo("POST https://api.telegram.org");
        Map<AttributeKey<?>, Object> attributes = data.getAttributes().asMap();
        assertThat(attributes).containsEntry(AttributeKey.stringKey("http.url"), "https://api.telegram.org")
                .containsEntry(AttributeKey.stringKey("url.full"), "https://discord.com")
                .containsEntry(AttributeKey.stringKey("camel.uri"), "direct://discord-event")
                .containsEntry(AttributeKey.longKey("http.status_code"), 200L)
                .containsEntry(AttributeKey.stringKey("component"), "camel-http " + Redactor.MASK)
                .doesNotContainKey(AttributeKey.stringKey("url.path"))
                .doesNotContainKey(AttributeKey.stringKey("message.body"))
                .doesNotContainKey(AttributeKey.stringKey("replyToken"))
                .doesNotContainKey(AttributeKey.stringKey("http.request.header.x-signature-ed25519"));
        assertThat(data.getEvents()).singleElement().satisfies(event -> assertThat(event.getAttributes().isEmpty()).isTrue());
        assertThat(data.toString()).doesNotContain(BOT_TOKEN).doesNotContain("interaction-token").doesNotContain("hello from");
    }

    @Test
    void tracingIsRequestedOnlyByAnExporterOrAnEndpointAndTheSdkNotDisabled() {
        assertThat(Tracing.requested(Map.of())).isFalse();
        assertThat(Tracing.requested(Map.of("OTEL_SERVICE_NAME", "chat-intake"))).isFalse();
        assertThat(Tracing.requested(Map.of("OTEL_TRACES_EXPORTER", "none"))).isFalse();
        assertThat(Tracing.requested(Map.of("OTEL_TRACES_EXPORTER", "otlp"))).isTrue();
        assertThat(Tracing.requested(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318"))).isTrue();
        assertThat(Tracing.requested(Map.of("OTEL_EXPORTER_OTLP_ENDPOINT", "http://127.0.0.1:4318", "OTEL_SDK_DISABLED", "true"))).isFalse();
        assertThat(Tracing.current().on()).as("off in a process that never started it").isFalse();
    }
}
