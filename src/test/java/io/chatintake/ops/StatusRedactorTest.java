package io.chatintake.ops;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.config.Settings;
import java.util.Map;
import org.junit.jupiter.api.Test;

/** The net under the redaction of stored texts, as the status page shows them. */
class StatusRedactorTest {
    private final StatusRedactor redactor = new StatusRedactor(Settings.of(Map.of(
            "unifyport.signing-secrets", "whsec-SECRET-one,whsec-SECRET-two",
            "telegram.bot-token", "111:SECRET-bot-token")));

    @Test
    void theConfigurationsSecretsAndEveryUrlsQueryAreMasked() {
        assertThat(redactor.redact("sent with 111:SECRET-bot-token, signed whsec-SECRET-two"))
                .isEqualTo("sent with [redacted], signed [redacted]");
        assertThat(redactor.redact("GET https://media.example/a/b.jpg?X-Amz-Signature=abc&x=1 failed; see http://h/x?y"))
                .isEqualTo("GET https://media.example/a/b.jpg?[redacted] failed; see http://h/x?[redacted]");
        assertThat(redactor.redact("no secret here")).isEqualTo("no secret here");
    }

    @Test
    void nothingStoredIsShownAsNothingAndALongTextIsCutAfterTheMasking() {
        assertThat(redactor.redact(null)).isEmpty();
        String before = "y".repeat(StatusRedactor.MAX_LENGTH - 20);
        assertThat(redactor.redact(before + " 111:SECRET-bot-token and more after it"))
                .isEqualTo((before + " [redacted] and more after it").substring(0, StatusRedactor.MAX_LENGTH) + "...");
        assertThat(redactor.redact("z".repeat(StatusRedactor.MAX_LENGTH))).as("at the limit: whole").hasSize(StatusRedactor.MAX_LENGTH);
    }
}
