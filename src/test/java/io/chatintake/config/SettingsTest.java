package io.chatintake.config;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.nio.file.Files;
import java.nio.file.Path;
import java.util.List;
import java.util.Map;
import org.apache.camel.CamelContext;
import org.apache.camel.impl.DefaultCamelContext;
import org.apache.camel.support.CamelContextHelper;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

class SettingsTest {
    @TempDir
    Path dir;

    @Test
    void environmentVariablesNamedAfterAKeyOverrideTheFile() throws Exception {
        Path file = write("chat-intake.http.port=8080\nchat-intake.db.url=\ntelegram.bot-token=\n");

        Settings settings = Settings.load(file, Map.of("CHAT_INTAKE_HTTP_PORT", "9090", "TELEGRAM_BOT_TOKEN", "123:abc"));

        assertThat(settings.getInt("chat-intake.http.port")).isEqualTo(9090);
        assertThat(settings.get("chat-intake.db.url")).isEmpty();
        assertThat(settings.secret("telegram.bot-token")).get().extracting(Secret::reveal).isEqualTo("123:abc");
    }

    @Test
    void aKeyRenamedForItsUnitStillWorksByItsOldNameInTheFileOrTheEnvironment() throws Exception {
        Settings fromFile = Settings.load(write("unifyport.statement-timeout-ms=1500\n"), Map.of());
        assertThat(fromFile.getLong("unifyport.statement-timeout-millis")).isEqualTo(1500);
        assertThat(fromFile.sourceOf("unifyport.statement-timeout-millis")).contains(ValueSource.FILE);
        assertThat(fromFile.oldNamesInUse()).containsExactly(Map.entry("unifyport.statement-timeout-ms", "unifyport.statement-timeout-millis"));

        Settings fromEnv = Settings.load(write(""), Map.of("UNIFYPORT_STATEMENT_TIMEOUT_MS", "2500"));
        assertThat(fromEnv.getLong("unifyport.statement-timeout-millis")).isEqualTo(2500);
        assertThat(fromEnv.oldNamesInUse()).containsKey("unifyport.statement-timeout-ms");

        Settings both = Settings.load(write("unifyport.statement-timeout-ms=1500\nunifyport.statement-timeout-millis=700\n"),
                Map.of());
        assertThat(both.getLong("unifyport.statement-timeout-millis")).as("the new name wins").isEqualTo(700);
        assertThat(both.oldNamesInUse()).isEmpty();

        Settings newName = Settings.load(write(""), Map.of());
        assertThat(newName.getLong("unifyport.statement-timeout-millis")).as("the built-in default").isEqualTo(5000);
        assertThat(newName.oldNamesInUse()).isEmpty();
    }

    @Test
    void keysAbsentFromTheFileCanStillComeFromTheEnvironment() throws Exception {
        Settings settings = Settings.load(write(""), Map.of("UNIFYPORT_WORKSPACE", "acme"));

        assertThat(settings.value("unifyport.workspace")).isEqualTo("acme");
        assertThat(settings.sourceOf("unifyport.workspace")).contains(ValueSource.ENVIRONMENT);
    }

    @Test
    void eachDefaultIsBuiltInOnceTheFileOverridesItAndAKeyNobodySetsIsAnErrorNamingIt() throws Exception {
        Settings settings = Settings.load(write("work.max-attempts=3\n"), Map.of());

        assertThat(settings.getInt("work.max-attempts")).isEqualTo(3);
        assertThat(settings.sourceOf("work.max-attempts")).contains(ValueSource.FILE);
        assertThat(settings.getInt("work.concurrency")).as("the jar's application.properties").isPositive();
        assertThat(settings.sourceOf("work.concurrency")).contains(ValueSource.BUILT_IN);
        assertThat(settings.sourceOf("no.such.key")).isEmpty();
        assertThatThrownBy(() -> settings.getInt("no.such.key"))
                .isInstanceOf(ConfigurationException.class)
                .hasMessageStartingWith("NO_SUCH_KEY (no.such.key) is not set");
    }

    @Test
    void envNameFollowsOneRule() {
        assertThat(Settings.envName("chat-intake.db.url")).isEqualTo("CHAT_INTAKE_DB_URL");
        assertThat(Settings.envName("unifyport.signing-secrets")).isEqualTo("UNIFYPORT_SIGNING_SECRETS");
    }

    @Test
    void describeRedactsSecretsAndShowsTheRest() throws Exception {
        Settings settings = Settings.load(write("chat-intake.db.password=\ntelegram.bot-token=\nchat-intake.http.port=1\n"),
                Map.of("CHAT_INTAKE_DB_PASSWORD", "hunter2", "TELEGRAM_BOT_TOKEN", "123:abc"));

        assertThat(settings.describe())
                .containsEntry("chat-intake.db.password", "[redacted]")
                .containsEntry("telegram.bot-token", "[redacted]")
                .containsEntry("chat-intake.http.port", "1");
        assertThat(settings.describe().toString()).doesNotContain("hunter2").doesNotContain("123:abc");
    }

    @Test
    void passwordsInUrlsAreRedactedUnderAnyKeyAndRegisteredAsSecrets() throws Exception {
        Settings settings = Settings.load(write("chat-intake.db.url=\nmedia.s3.endpoint=\nchat-intake.http.port=1\n"),
                Map.of("CHAT_INTAKE_DB_URL", "jdbc:postgresql://intake:UrlPass-7f3@db:5432/chat?ssl=true&password=ParamPass-9c1",
                        "MEDIA_S3_ENDPOINT", "http://minio:9000"));

        assertThat(settings.describe())
                .containsEntry("chat-intake.db.url", "jdbc:postgresql://intake:[redacted]@db:5432/chat?ssl=true&password=[redacted]")
                .containsEntry("media.s3.endpoint", "http://minio:9000");
        assertThat(settings.secretValues()).contains("UrlPass-7f3", "ParamPass-9c1");
        assertThat(Settings.redactUrl("jdbc:postgresql://db/x?user=a&sslpassword=k3y&ssl=true"))
                .isEqualTo("jdbc:postgresql://db/x?user=a&sslpassword=[redacted]&ssl=true");
        assertThat(Settings.redactUrl("http://host:8080/path@x")).isEqualTo("http://host:8080/path@x");
    }

    @Test
    void aMalformedValueNamesTheKeyAndItsVariableButNeverASecret() throws Exception {
        Settings settings = Settings.load(write("chat-intake.http.port=eighty\n"), Map.of("SOME_TOKEN", "x"));

        assertThatThrownBy(() -> settings.getInt("chat-intake.http.port"))
                .isInstanceOf(ConfigurationException.class)
                .hasMessage("CHAT_INTAKE_HTTP_PORT (chat-intake.http.port) must be a whole number, got 'eighty'");

        Settings secret = Settings.of(Map.of("x.secret-count", "s3cr3t"));
        assertThatThrownBy(() -> secret.getInt("x.secret-count")).hasMessageNotContaining("s3cr3t");
    }

    @Test
    void booleansAcceptTheUsualWords() {
        Settings settings = Settings.of(Map.of("a", "yes", "b", "off", "c", "maybe"));

        assertThat(settings.getBoolean("a")).isTrue();
        assertThat(settings.getBoolean("b")).isFalse();
        assertThatThrownBy(() -> settings.getBoolean("c")).hasMessageContaining("must be true or false");
    }

    @Test
    void aSecretNeverPrintsItself() {
        Secret secret = Secret.of("123456:very-secret");

        assertThat(secret.toString()).isEqualTo("[redacted]");
        assertThat("token=" + secret).doesNotContain("very-secret");
    }

    private Path write(String content) throws Exception {
        Path file = dir.resolve("application.properties");
        Files.writeString(file, content);
        return file;
    }

    @Test
    void camelMasksEverySecretKeyOnceItsKeywordsAreAdded() {
        Settings settings = Settings.of(Map.of("telegram.bot-token", "1:a", "unifyport.signing-secrets", "s1,s2",
                "chat-intake.db.password", "p", "telegram.bots.sales.token", "2:b", "whatsapp.verify-token", "v",
                "telegram.api-url", "https://api.telegram.org"));
        CamelContext camel = new DefaultCamelContext();
        assertThat(CamelContextHelper.containsSensitive(camel, "telegram.bot-token")).as("Camel's own words miss it").isFalse();

        camel.getCamelContextExtension().setAdditionalSensitiveKeywords(settings.camelSensitiveKeywords());

        for (String key : List.of("telegram.bot-token", "unifyport.signing-secrets", "chat-intake.db.password",
                "telegram.bots.sales.token", "whatsapp.verify-token")) {
            assertThat(CamelContextHelper.containsSensitive(camel, key)).as(key).isTrue();
        }
        assertThat(CamelContextHelper.containsSensitive(camel, "telegram.api-url")).isFalse();
    }

    @Test
    void secretValuesIncludeEachPartOfAListAndSecretsSetOnlyInTheEnvironment() throws Exception {
        Path file = write("unifyport.signing-secrets=\ntelegram.api-url=https://api.telegram.org\n");

        Settings settings = Settings.load(file, Map.of("UNIFYPORT_SIGNING_SECRETS", "old-secret, new-secret",
                "TELEGRAM_BOTS_SALES_TOKEN", "9:sales", "HOME", "/root"));

        assertThat(settings.secretValues()).contains("old-secret", "new-secret", "9:sales").doesNotContain("/root", "https://api.telegram.org");
    }
}
