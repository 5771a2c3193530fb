package io.chatintake.testkit;

import com.sun.net.httpserver.HttpServer;
import io.opentelemetry.proto.collector.trace.v1.ExportTraceServiceRequest;
import io.opentelemetry.proto.common.v1.KeyValue;
import io.opentelemetry.proto.trace.v1.ResourceSpans;
import io.opentelemetry.proto.trace.v1.ScopeSpans;
import java.io.IOException;
import java.io.InputStream;
import java.net.InetSocketAddress;
import java.util.HexFormat;
import java.util.List;
import java.util.Map;
import java.util.concurrent.CopyOnWriteArrayList;
import java.util.stream.Collectors;
import java.util.zip.GZIPInputStream;

/**
 * An OTLP/HTTP trace receiver on loopback ({@code POST /v1/traces}, protobuf): what a runner with
 * {@code OTEL_EXPORTER_OTLP_ENDPOINT} pointing here exports, decoded into {@link ReceivedSpan}s.
 */
public final class OtlpReceiver implements AutoCloseable {
    private final HttpServer server;
    private final List<ReceivedSpan> spans = new CopyOnWriteArrayList<>();

    /** One exported span: ids as lowercase hex, links as trace ids, attributes as text. */
    public record ReceivedSpan(String service, String traceId, String spanId, String parentSpanId, String name, int kind,
                               Map<String, String> attributes, List<String> linkedTraceIds, List<String> eventNames, String raw) {
        public String attribute(String key) {
            return attributes.get(key);
        }
    }

    public OtlpReceiver() throws IOException {
        server = HttpServer.create(new InetSocketAddress("127.0.0.1", 0), 0);
        server.createContext("/v1/traces", exchange -> {
            try (InputStream body = exchange.getRequestBody()) {
                InputStream in = "gzip".equalsIgnoreCase(exchange.getRequestHeaders().getFirst("Content-Encoding"))
                        ? new GZIPInputStream(body) : body;
                receive(ExportTraceServiceRequest.parseFrom(in.readAllBytes()));
                exchange.getResponseHeaders().set("Content-Type", "application/x-protobuf");
                exchange.sendResponseHeaders(200, -1);
            } catch (IOException | RuntimeException e) {
                exchange.sendResponseHeaders(400, -1);
            } finally {
                exchange.close();
            }
        });
        server.start();
    }

    /** The value for {@code OTEL_EXPORTER_OTLP_ENDPOINT}. */
    public String endpoint() {
        return "http://127.0.0.1:" + server.getAddress().getPort();
    }

    public List<ReceivedSpan> spans() {
        return List.copyOf(spans);
    }

    public List<ReceivedSpan> trace(String traceId) {
        return spans.stream().filter(s -> s.traceId().equals(traceId)).toList();
    }

    private void receive(ExportTraceServiceRequest request) {
        HexFormat hex = HexFormat.of();
        for (ResourceSpans resource : request.getResourceSpansList()) {
            String service = resource.getResource().getAttributesList().stream().filter(a -> a.getKey().equals("service.name"))
                    .map(a -> a.getValue().getStringValue()).findFirst().orElse("");
            for (ScopeSpans scope : resource.getScopeSpansList()) {
                for (io.opentelemetry.proto.trace.v1.Span span : scope.getSpansList()) {
                    spans.add(new ReceivedSpan(service, hex.formatHex(span.getTraceId().toByteArray()), hex.formatHex(span.getSpanId().toByteArray()),
                            hex.formatHex(span.getParentSpanId().toByteArray()), span.getName(), span.getKindValue(),
                            span.getAttributesList().stream().collect(Collectors.toMap(KeyValue::getKey, a -> text(a), (a, b) -> b)),
                            span.getLinksList().stream().map(l -> hex.formatHex(l.getTraceId().toByteArray())).toList(),
                            span.getEventsList().stream().map(e -> e.getName()).toList(),
                            span.toString()));
                }
            }
        }
    }

    private static String text(KeyValue attribute) {
        var value = attribute.getValue();
        return switch (value.getValueCase()) {
            case STRING_VALUE -> value.getStringValue();
            case INT_VALUE -> Long.toString(value.getIntValue());
            case BOOL_VALUE -> Boolean.toString(value.getBoolValue());
            case DOUBLE_VALUE -> Double.toString(value.getDoubleValue());
            default -> value.toString();
        };
    }

    @Override
    public void close() {
        server.stop(0);
    }
}
