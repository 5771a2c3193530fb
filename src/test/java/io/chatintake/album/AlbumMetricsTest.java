package io.chatintake.album;

import static org.assertj.core.api.Assertions.assertThat;

import io.chatintake.testkit.Collected;
import io.chatintake.testkit.TestDatabase;
import io.micrometer.core.instrument.MeterRegistry;
import io.micrometer.core.instrument.simple.SimpleMeterRegistry;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.extension.ExtendWith;

@ExtendWith(TestDatabase.class)
class AlbumMetricsTest {
    @Test
    void theAlbumGaugesAreStillReadAfterAGarbageCollection() {
        MeterRegistry registry = new SimpleMeterRegistry();
        AlbumMetrics.register(registry, TestDatabase.dataSource());

        Collected.atLeastOnce();

        assertThat(registry.get("chat_intake_albums_open").gauge().value()).isZero();
        assertThat(registry.get("chat_intake_albums_oldest_open_seconds").gauge().value()).isZero();
    }
}
