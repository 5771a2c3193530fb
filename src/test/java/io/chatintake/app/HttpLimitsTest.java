package io.chatintake.app;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import io.vertx.core.http.HttpServerOptions;
import java.nio.file.Path;
import java.time.Duration;
import java.util.Map;
import java.util.concurrent.TimeUnit;
import org.junit.jupiter.api.Test;

class HttpLimitsTest {
    @Test
    void theShippedFileSaysWhatTheCodeDefaultsTo() {
        HttpLimits shipped = HttpLimits.from(Settings.load(Path.of("config/application.properties"), Map.of()));

        assertThat(shipped).isEqualTo(HttpLimits.from(Settings.of(Map.of())))
                .isEqualTo(new HttpLimits(8L * 1024 * 1024, Duration.ofSeconds(30), Duration.ofSeconds(60), false, false));
    }

    @Test
    void theServerOptionsTurnCleartextHttp2OffAndCloseIdleConnections() {
        HttpServerOptions options = HttpLimits.from(Settings.of(Map.of())).apply(new HttpServerOptions());

        assertThat(options.isHttp2ClearTextEnabled()).isFalse();
        assertThat(options.getIdleTimeout()).isEqualTo(60);
        assertThat(options.getIdleTimeoutUnit()).isEqualTo(TimeUnit.SECONDS);
        assertThat(HttpLimits.from(Settings.of(Map.of(HttpLimits.CLEARTEXT_HTTP2, "true"))).apply(new HttpServerOptions())
                .isHttp2ClearTextEnabled()).isTrue();
    }

    @Test
    void aTimeoutThatBoundsNothingIsOneLineNamingItsVariable() {
        assertThatThrownBy(() -> HttpLimits.from(Settings.of(Map.of(HttpLimits.REQUEST_TIMEOUT_SECONDS, "0"))))
                .isInstanceOf(ConfigurationException.class)
                .hasMessage("CHAT_INTAKE_HTTP_REQUEST_TIMEOUT_SECONDS (chat-intake.http.request-timeout-seconds) must be a whole number"
                        + " from 1 to 2147483647, got 0");
    }
}
