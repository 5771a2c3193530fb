package io.chatintake.app;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.channel.telegram.TelegramBotRoutes;
import io.chatintake.config.Settings;
import io.chatintake.support.Redactor;
import io.chatintake.testkit.Await;
import java.nio.file.Files;
import java.nio.file.Path;
import java.time.Duration;
import java.util.UUID;
import org.apache.camel.impl.DefaultCamelContext;
import org.junit.jupiter.api.Test;

/** A secret that arrives by a configuration reload is masked in logs from then on, under any key declared secret. */
class ConfigurationReloadSecretsTest {
    @Test
    void secretsOfAReloadedFileAreRegistered() throws Exception {
        Path file = Files.createTempFile("reload-secrets", ".properties");
        Files.writeString(file, "telegram.bots=\n");
        String token = "4242:reloaded-" + UUID.randomUUID();
        String custom = "custom-" + UUID.randomUUID();
        // As a route does for its secretsKey (a name that does not say secret).
        Settings.declareSecretKey("reload-test.hmac-keys");
        try (DefaultCamelContext camel = new DefaultCamelContext()) {
            camel.getPropertiesComponent().setLocation("file:" + file);
            camel.start();
            ConfigurationReload.start(camel, new TelegramBotRoutes(camel));
            assertThat(Redactor.redact(token)).isEqualTo(token);

            Files.writeString(file, "telegram.bots=\ntelegram.bots.late.token=" + token + "\nreload-test.hmac-keys=old-key," + custom + "\n");

            Await.until("the reloaded secrets are masked", Duration.ofSeconds(20),
                    () -> Redactor.redact("token " + token + " key " + custom).equals("token [redacted] key [redacted]"));
        }
    }
}
