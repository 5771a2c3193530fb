package io.chatintake.testkit;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import java.util.List;
import org.slf4j.LoggerFactory;

/** Every log line of this JVM while open, as formatted, to prove what is (not) logged. */
public final class LogCapture implements AutoCloseable {
    private final ListAppender<ILoggingEvent> appender = new ListAppender<>();
    private final Logger root = (Logger) LoggerFactory.getLogger(org.slf4j.Logger.ROOT_LOGGER_NAME);

    public LogCapture() {
        appender.start();
        root.addAppender(appender);
    }

    public List<String> lines() {
        return appender.list.stream().map(e -> e.getFormattedMessage()
                + (e.getThrowableProxy() == null ? "" : " " + e.getThrowableProxy().getMessage())).toList();
    }

    @Override
    public void close() {
        root.detachAppender(appender);
    }
}
