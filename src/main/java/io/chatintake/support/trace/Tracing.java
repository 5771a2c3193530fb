package io.chatintake.support.trace;

import io.opentelemetry.api.OpenTelemetry;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.Tracer;
import io.opentelemetry.sdk.OpenTelemetrySdk;
import io.opentelemetry.sdk.autoconfigure.AutoConfiguredOpenTelemetrySdk;
import java.util.Map;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;

/**
 * OpenTelemetry tracing of this process, configured by the standard {@code OTEL_*} environment.
 * Off unless {@code OTEL_TRACES_EXPORTER} or {@code OTEL_EXPORTER_OTLP_ENDPOINT} is set (and
 * {@code OTEL_SDK_DISABLED} is not true): then nothing on the hot path creates a span. On, every
 * exported span passes {@link SecretFreeSpanExporter}.
 * <p>
 * One per process ({@link #current()}): intake, the work engine and effects find it there
 * without being wired to it, as Camel's tracer finds the global OpenTelemetry.
 */
public final class Tracing {
    private static final Logger LOG = LoggerFactory.getLogger(Tracing.class);
    public static final String INCLUDE_CHAT_IDS = "tracing.include-chat-ids";
    static final String INSTRUMENTATION = "io.chatintake";
    private static final Tracing OFF = new Tracing(null, false);
    private static volatile Tracing current = OFF;

    private final OpenTelemetrySdk sdk;
    private final Tracer tracer;
    private final boolean includeChatIds;

    private Tracing(OpenTelemetrySdk sdk, boolean includeChatIds) {
        this.sdk = sdk;
        this.tracer = (sdk == null ? OpenTelemetry.noop() : sdk).getTracer(INSTRUMENTATION);
        this.includeChatIds = includeChatIds;
    }

    /** Whether the environment asks for traces: an exporter or an OTLP endpoint, and the SDK not disabled. */
    public static boolean requested(Map<String, String> env) {
        if ("true".equalsIgnoreCase(env.getOrDefault("OTEL_SDK_DISABLED", "").trim())) {
            return false;
        }
        String exporter = env.getOrDefault("OTEL_TRACES_EXPORTER", "").trim();
        return !exporter.isEmpty() && !"none".equalsIgnoreCase(exporter)
                || !env.getOrDefault("OTEL_EXPORTER_OTLP_ENDPOINT", "").isBlank()
                || !env.getOrDefault("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "").isBlank();
    }

    /**
     * Starts tracing once per process when the environment asks for it, else says in one line
     * that it is off. The OTLP protocol defaults to {@code http/protobuf} (the Java SDK's own
     * default is gRPC); metrics and logs stay where they are (Micrometer, the log).
     */
    public static synchronized Tracing start(Map<String, String> env, boolean includeChatIds) {
        if (current.on()) {
            return current;
        }
        if (!requested(env)) {
            LOG.info("tracing: off (set OTEL_EXPORTER_OTLP_ENDPOINT or OTEL_TRACES_EXPORTER to export traces)");
            return OFF;
        }
        TraceMdc.install();
        OpenTelemetrySdk sdk = AutoConfiguredOpenTelemetrySdk.builder()
                .addPropertiesSupplier(() -> Map.of(
                        "otel.exporter.otlp.protocol", "http/protobuf",
                        "otel.metrics.exporter", "none",
                        "otel.logs.exporter", "none"))
                .addSpanExporterCustomizer((exporter, config) -> new SecretFreeSpanExporter(exporter))
                .setResultAsGlobal()
                .build()
                .getOpenTelemetrySdk();
        current = new Tracing(sdk, includeChatIds);
        Runtime.getRuntime().addShutdownHook(new Thread(current::close, "chat-intake-tracing-flush"));
        LOG.info("tracing: on, exporting {} to {}", env.getOrDefault("OTEL_TRACES_EXPORTER", "otlp"),
                env.getOrDefault("OTEL_EXPORTER_OTLP_ENDPOINT", env.getOrDefault("OTEL_EXPORTER_OTLP_TRACES_ENDPOINT", "the default endpoint")));
        return current;
    }

    /** This process's tracing; off until {@link #start} turned it on. */
    public static Tracing current() {
        return current;
    }

    public boolean on() {
        return sdk != null;
    }

    public Tracer tracer() {
        return tracer;
    }

    public OpenTelemetry openTelemetry() {
        return sdk == null ? OpenTelemetry.noop() : sdk;
    }

    /** Chat and sender ids on spans only when {@code tracing.include-chat-ids=true}: they identify people. */
    public void chatIds(Span span, String chatKey) {
        if (includeChatIds && chatKey != null) {
            span.setAttribute("chat_intake.chat", chatKey);
        }
    }

    /** Exports what is buffered and stops: the last spans of a stopping process are not lost. */
    private void close() {
        if (sdk != null) {
            sdk.shutdown().join(10, java.util.concurrent.TimeUnit.SECONDS);
        }
    }
}
