package io.chatintake.support.trace;

import io.opentelemetry.api.trace.Span;
import io.opentelemetry.api.trace.SpanContext;
import io.opentelemetry.context.Context;
import io.opentelemetry.context.ContextStorage;
import io.opentelemetry.context.Scope;
import org.slf4j.MDC;

/**
 * Trace and span ids in the MDC while a span is current (Camel's or ours), restored when its
 * scope closes: log lines of a traced step name their trace ({@link TraceIdsConverter}).
 */
final class TraceMdc implements ContextStorage {
    static final String TRACE_ID = "trace_id";
    static final String SPAN_ID = "span_id";

    private final ContextStorage delegate;

    private TraceMdc(ContextStorage delegate) {
        this.delegate = delegate;
    }

    /** Before the first context is made current, or the storage is already fixed without it. */
    static void install() {
        ContextStorage.addWrapper(TraceMdc::new);
    }

    @Override
    public Scope attach(Context toAttach) {
        String previousTrace = MDC.get(TRACE_ID);
        String previousSpan = MDC.get(SPAN_ID);
        Scope scope = delegate.attach(toAttach);
        put(Span.fromContext(toAttach).getSpanContext());
        return () -> {
            scope.close();
            restore(TRACE_ID, previousTrace);
            restore(SPAN_ID, previousSpan);
        };
    }

    private static void put(SpanContext span) {
        if (span.isValid()) {
            MDC.put(TRACE_ID, span.getTraceId());
            MDC.put(SPAN_ID, span.getSpanId());
        } else {
            MDC.remove(TRACE_ID);
            MDC.remove(SPAN_ID);
        }
    }

    private static void restore(String key, String value) {
        if (value == null) {
            MDC.remove(key);
        } else {
            MDC.put(key, value);
        }
    }

    @Override
    public Context current() {
        return delegate.current();
    }
}
