package io.chatintake.work;

import io.chatintake.support.trace.Tracing;
import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.api.trace.SpanKind;
import io.opentelemetry.api.trace.StatusCode;
import io.opentelemetry.api.trace.TraceFlags;
import io.opentelemetry.api.trace.TraceState;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.Scope;
import java.sql.Connection;
import java.sql.PreparedStatement;
import java.sql.ResultSet;
import java.sql.SQLException;
import java.util.Collection;
import java.util.HashMap;
import java.util.List;
import java.util.Locale;
import java.util.Map;
import org.apache.camel.Exchange;

/**
 * A message's trace through storage: its W3C {@code traceparent} is written with its work
 * ({@code work_item.trace_context}, by the insert that stages or schedules it) and each attempt
 * of a handler, in whatever process and however much later, is a span of that trace named with
 * the attempt number, ending with the outcome. While tracing is off every method is a check of
 * one flag: no span, no query, a null column.
 */
public final class TraceContext {
    /** The header Camel's tracer continues a trace from, and outgoing HTTP calls carry downstream. */
    public static final String TRACEPARENT = "traceparent";
    private static final String STORED = "chatIntake.traceContext";

    private TraceContext() {
    }

    /** The current span's traceparent, to store with new work; null while tracing is off or no span is current. */
    public static String current() {
        return Tracing.current().on() ? traceparent(Span.current().getSpanContext()) : null;
    }

    /** W3C {@code traceparent}: version 00, trace id, span id, flags. Null for an invalid context. */
    public static String traceparent(SpanContext span) {
        return span.isValid() ? "00-" + span.getTraceId() + "-" + span.getSpanId() + "-" + span.getTraceFlags().asHex() : null;
    }

    /** A stored traceparent back as a remote parent; invalid when absent or malformed. */
    public static SpanContext parse(String traceparent) {
        if (traceparent == null || traceparent.length() != 55 || !traceparent.startsWith("00-")) {
            return SpanContext.getInvalid();
        }
        String[] parts = traceparent.toLowerCase(Locale.ROOT).split("-");
        return SpanContext.createFromRemoteParent(parts[1], parts[2], TraceFlags.fromHex(parts[3], 0), TraceState.getDefault());
    }

    /** The stored contexts of loaded items, in one query, onto their exchanges: only while tracing is on. */
    static void load(Connection connection, List<WorkItem> items, List<Exchange> exchanges) {
        if (!Tracing.current().on() || items.isEmpty()) {
            return;
        }
        Map<Long, Exchange> byId = new HashMap<>();
        for (int i = 0; i < items.size(); i++) {
            byId.put(items.get(i).id(), exchanges.get(i));
        }
        try (PreparedStatement ps = connection.prepareStatement("SELECT id, trace_context FROM work_item WHERE id = ANY (?::bigint[])")) {
            ps.setArray(1, connection.createArrayOf("bigint", byId.keySet().toArray()));
            try (ResultSet rs = ps.executeQuery()) {
                while (rs.next()) {
                    String stored = rs.getString(2);
                    if (stored != null) {
                        byId.get(rs.getLong(1)).setProperty(STORED, stored);
                    }
                }
            }
        } catch (SQLException e) {
            // A trace is worth less than the work: its attempt then starts a trace of its own.
        }
    }

    /**
     * The span of one attempt at an item, child of the message's stored trace (a new trace when
     * none was stored), current while the handler runs; the handler's route continues it through
     * the exchange's {@code traceparent}.
     */
    static Attempt start(WorkItem item, Exchange exchange) {
        Tracing tracing = Tracing.current();
        if (!tracing.on()) {
            return Attempt.NONE;
        }
        SpanContext stored = parse(exchange.getProperty(STORED, String.class));
        Context parent = stored.isValid() ? Context.root().with(Span.wrap(stored)) : Context.root();
        Span span = tracing.tracer().spanBuilder("work " + item.kind() + " attempt " + item.attempts())
                .setParent(parent)
                .setSpanKind(SpanKind.CONSUMER)
                .setAttribute("chat_intake.work.kind", item.kind())
                .setAttribute("chat_intake.work.item", item.id())
                .setAttribute("chat_intake.work.attempt", item.attempts())
                .startSpan();
        tracing.chatIds(span, item.chatKey());
        exchange.getMessage().setHeader(TRACEPARENT, traceparent(span.getSpanContext()));
        return new Attempt(span, span.makeCurrent());
    }

    /**
     * A client span for a call to another system (a guarded effect, a Bot API method, a download),
     * child of the current span; {@link Call#NONE} while tracing is off. Attributes name the call,
     * never its URL, token or payload.
     */
    public static Call call(String name, String... attributeNamesAndValues) {
        return Tracing.current().on() ? new Call(span(name, SpanKind.CLIENT, null, attributeNamesAndValues)) : Call.NONE;
    }

    /**
     * A span for a batch of inbound messages (a Telegram poll), each of which then starts a trace
     * of its own linked to it ({@link Call#linkedTrace}); {@link Call#NONE} while tracing is off.
     */
    public static Call batch(String name, String... attributeNamesAndValues) {
        return Tracing.current().on() ? new Call(span(name, SpanKind.CONSUMER, null, attributeNamesAndValues)) : Call.NONE;
    }

    /**
     * A span that starts a trace of its own, linked to the traces of the messages it acts on (an
     * album decision and the children it includes), ended at once: the traceparent to store with
     * the work it queues; null while tracing is off.
     */
    public static String linkedTo(String name, Collection<String> traceparents, String... attributeNamesAndValues) {
        if (!Tracing.current().on()) {
            return null;
        }
        Span span = span(name, SpanKind.INTERNAL, traceparents.stream().map(TraceContext::parse).filter(SpanContext::isValid).toList(),
                attributeNamesAndValues);
        span.end();
        return traceparent(span.getSpanContext());
    }

    /** A child of the current span when {@code links} is null; otherwise the first span of a new trace, linked to them. */
    private static Span span(String name, SpanKind kind, List<SpanContext> links, String... attributeNamesAndValues) {
        var builder = Tracing.current().tracer().spanBuilder(name).setSpanKind(kind);
        if (links != null) {
            builder.setNoParent();
            links.forEach(builder::addLink);
        }
        for (int i = 0; i + 1 < attributeNamesAndValues.length; i += 2) {
            if (attributeNamesAndValues[i + 1] != null) {
                builder.setAttribute(attributeNamesAndValues[i], attributeNamesAndValues[i + 1]);
            }
        }
        return builder.startSpan();
    }

    /** A call's span, ended with its state (done, failed, undeliverable, ...) and the HTTP status when there was one. */
    public static final class Call {
        public static final Call NONE = new Call(null);
        private final Span span;

        private Call(Span span) {
            this.span = span;
        }

        /**
         * A new trace for one message of this batch, its first span linked to the batch's and ended
         * at once: the traceparent to store with the message's work (null while tracing is off).
         */
        public String linkedTrace(String name, String... attributeNamesAndValues) {
            if (span == null) {
                return null;
            }
            Span first = span(name, SpanKind.CONSUMER, List.of(span.getSpanContext()), attributeNamesAndValues);
            first.end();
            return traceparent(first.getSpanContext());
        }

        public void end(String state, Integer httpStatus) {
            if (span == null) {
                return;
            }
            span.setAttribute("chat_intake.effect.state", state);
            if (httpStatus != null) {
                span.setAttribute("http.response.status_code", httpStatus.longValue());
            }
            if (!"done".equals(state) && !"already done".equals(state)) {
                span.setStatus(StatusCode.ERROR);
            }
            span.end();
        }
    }

    /** An attempt's span, ended with its outcome: done, retried, deferred, parked or undeliverable. */
    static final class Attempt {
        static final Attempt NONE = new Attempt(null, null);
        private final Span span;
        private final Scope scope;

        private Attempt(Span span, Scope scope) {
            this.span = span;
            this.scope = scope;
        }

        void end(RunResult outcome) {
            if (span == null) {
                return;
            }
            scope.close();
            String ended = switch (outcome.kind()) {
                case DONE -> "done";
                case UNDELIVERABLE -> "undeliverable";
                case FAILED -> "retried";
                case PARKED -> "parked";
                case DEFERRED -> "deferred";
            };
            span.setAttribute("chat_intake.work.outcome", ended);
            if (outcome.kind() == RunResult.Kind.FAILED || outcome.kind() == RunResult.Kind.PARKED) {
                span.setStatus(StatusCode.ERROR);
            }
            span.end();
        }
    }
}
