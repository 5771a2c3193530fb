package io.chatintake.support;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.joran.JoranConfigurator;
import ch.qos.logback.classic.util.LogbackMDCAdapter;
import java.io.ByteArrayOutputStream;
import java.io.PrintStream;
import java.nio.charset.StandardCharsets;
import java.sql.SQLException;
import org.junit.jupiter.api.Test;

/**
 * The shipped {@code logback.xml}: a connection the database closed is one line (Hikari names
 * its SQLSTATE in the message), while an unexpected failure keeps its stack trace.
 */
class LogbackConfigurationTest {
    @Test
    void aBrokenPooledConnectionIsOneLineAndAnUnexpectedFailureKeepsItsStackTrace() throws Exception {
        PrintStream stdout = System.out;
        ByteArrayOutputStream out = new ByteArrayOutputStream();
        LoggerContext context = new LoggerContext();
        context.setMDCAdapter(new LogbackMDCAdapter());
        try {
            System.setOut(new PrintStream(out, true, StandardCharsets.UTF_8));
            JoranConfigurator configurator = new JoranConfigurator();
            configurator.setContext(context);
            configurator.doConfigure(LogbackConfigurationTest.class.getClassLoader().getResource("logback.xml"));
            SQLException killed = new SQLException("FATAL: terminating connection due to administrator command", "57P01");
            context.getLogger("com.zaxxer.hikari.pool.ProxyConnection")
                    .warn("HikariPool-1 - Connection marked as broken because of SQLSTATE(57P01), ErrorCode(0)", killed);
            context.getLogger("io.chatintake.work.WorkDispatcher").error("unexpected", new IllegalStateException("a bug"));
        } finally {
            context.stop();
            System.setOut(stdout);
        }
        String[] lines = out.toString(StandardCharsets.UTF_8).split("\n");
        String text = out.toString(StandardCharsets.UTF_8);
        assertThat(text).contains("ProxyConnection - HikariPool-1 - Connection marked as broken because of SQLSTATE(57P01)");
        assertThat(text.substring(0, text.indexOf("unexpected"))).as("the broken connection in one line").doesNotContain("\tat ")
                .doesNotContain("administrator command");
        assertThat(text.substring(text.indexOf("unexpected"))).as("the unexpected failure's stack trace")
                .contains("java.lang.IllegalStateException: a bug").contains("\tat ");
        assertThat(lines[0]).contains("WARN");
    }
}
