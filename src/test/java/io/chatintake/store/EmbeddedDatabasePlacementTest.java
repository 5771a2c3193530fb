package io.chatintake.store;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import io.chatintake.config.ConfigurationException;
import io.chatintake.config.Settings;
import java.nio.file.Path;
import java.util.Map;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;

/** Where the embedded database may not run, the runner says why and what to set, in one line. */
class EmbeddedDatabasePlacementTest {
    @TempDir
    Path dir;

    @Test
    void onKubernetesItRefusesBeforeStartingAnything() {
        Settings settings = Settings.load(dir.resolve("none.properties"),
                Map.of("KUBERNETES_SERVICE_HOST", "10.96.0.1", "CHAT_INTAKE_DATA_DIR", dir.toString()));

        assertThatThrownBy(() -> Database.open(settings)).isInstanceOf(ConfigurationException.class)
                .hasMessageContaining("set CHAT_INTAKE_DB_URL to the PostgreSQL all replicas share");
        assertThat(dir.resolve("pg")).doesNotExist();
    }

    @Test
    void onAPlatformWithoutBinariesItNamesThePlatformAndTheWayOut() {
        assertThat(EmbeddedDatabase.missingBinariesMessage("Windows 11", "amd64"))
                .startsWith("this jar has no embedded PostgreSQL for Windows 11/amd64")
                .contains("build the jar on this machine", "set CHAT_INTAKE_DB_URL");
    }
}
