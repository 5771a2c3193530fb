package io.chatintake.support.trace;

import ch.qos.logback.classic.pattern.ClassicConverter;
import ch.qos.logback.classic.spi.ILoggingEvent;
import java.util.Map;

/**
 * {@code %traceIds} in the log pattern: " trace=<id> span=<id>" from the MDC's {@code trace_id}
 * and {@code span_id} (set while a traced step runs, {@link TraceMdc}), nothing otherwise.
 */
public final class TraceIdsConverter extends ClassicConverter {
    @Override
    public String convert(ILoggingEvent event) {
        Map<String, String> mdc = event.getMDCPropertyMap();
        String trace = mdc.get(TraceMdc.TRACE_ID);
        return trace == null ? "" : " trace=" + trace + " span=" + mdc.get(TraceMdc.SPAN_ID);
    }
}
