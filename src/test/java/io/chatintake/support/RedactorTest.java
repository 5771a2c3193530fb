package io.chatintake.support;

import static org.assertj.core.api.Assertions.assertThat;

import ch.qos.logback.classic.Level;
import ch.qos.logback.classic.LoggerContext;
import ch.qos.logback.classic.spi.LoggingEvent;
import java.util.List;
import org.junit.jupiter.api.Test;

class RedactorTest {
    @Test
    void everyRegisteredValueAndItsUrlEncodedFormIsMaskedAndShortOnesAreRefused() {
        assertThat(Redactor.register(List.of("123:tok en\"x", "abc", "redactor-test-secret"))).isEqualTo(1);

        assertThat(Redactor.redact("GET /bot123:tok en\"x/sendMessage failed")).isEqualTo("GET /bot[redacted]/sendMessage failed");
        assertThat(Redactor.redact("url=/bot123%3Atok+en%22x/getMe and /bot123%3Atok%20en%22x")).isEqualTo("url=/bot[redacted]/getMe and /bot[redacted]");
        assertThat(Redactor.redact("abc stays: too short to mask")).isEqualTo("abc stays: too short to mask");
        assertThat(Redactor.redact(null)).isNull();
    }

    @Test
    void storedTextsAreRedactedBeforeTheyAreCutSoNoSecretIsLeftHalf() {
        Redactor.register(List.of("cut-across-the-limit-secret"));
        String text = "x".repeat(10) + "cut-across-the-limit-secret";

        assertThat(Redactor.redact(text, 15)).isEqualTo("x".repeat(10) + "[reda");
    }

    @Test
    void theLogLayoutMasksMessagesAndStackTraces() {
        Redactor.register(List.of("layout-test-secret"));
        RedactingLayout layout = new RedactingLayout();
        LoggerContext context = new LoggerContext();
        layout.setContext(context);
        layout.setPattern("%msg%n%ex");
        layout.start();
        LoggingEvent event = new LoggingEvent("test", context.getLogger("test"), Level.ERROR, "sending with {} failed",
                new IllegalStateException("the URL held layout-test-secret"), new Object[] {"layout-test-secret"});

        String line = layout.doLayout(event);

        assertThat(line).contains("sending with [redacted] failed").contains("the URL held [redacted]").doesNotContain("layout-test-secret");
    }

    @Test
    void anEventsSecretIsMaskedWhileRecentAndTheOldestGoesFirst() {
        Redactor.registerTransient("transient-token-0");
        assertThat(Redactor.redact("POST /webhooks/app/transient-token-0")).isEqualTo("POST /webhooks/app/[redacted]");
        for (int i = 1; i < Redactor.TRANSIENT_CAPACITY; i++) {
            Redactor.registerTransient("transient-token-" + i);
        }
        assertThat(Redactor.redact("transient-token-0 and transient-token-1")).isEqualTo("[redacted] and [redacted]");
        // Used again, an old one is the newest: the next one in pushes out transient-token-1 instead.
        Redactor.registerTransient("transient-token-0");
        Redactor.registerTransient("transient-token-new");
        assertThat(Redactor.redact("transient-token-0 transient-token-new transient-token-1"))
                .isEqualTo("[redacted] [redacted] transient-token-1");
    }
}
