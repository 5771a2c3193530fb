package io.chatintake.testkit;

import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.classic.spi.IThrowableProxy;

/** A captured log event as a reader would see it: the message and every cause's class and message. */
public final class LogLine {
    private LogLine() {
    }

    public static String render(ILoggingEvent event) {
        StringBuilder line = new StringBuilder(event.getFormattedMessage());
        for (IThrowableProxy t = event.getThrowableProxy(); t != null; t = t.getCause()) {
            line.append(" | ").append(t.getClassName()).append(": ").append(t.getMessage());
        }
        return line.toString();
    }
}
