package io.chatintake.support;

import ch.qos.logback.classic.PatternLayout;
import ch.qos.logback.classic.spi.ILoggingEvent;

/**
 * logback's pattern layout with every registered secret replaced in the whole line: message,
 * arguments, exception texts and stack traces, thread and logger names alike.
 */
public class RedactingLayout extends PatternLayout {
    @Override
    public String doLayout(ILoggingEvent event) {
        return Redactor.redact(super.doLayout(event));
    }
}
