package io.chatintake.channel.webhook;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import java.time.DateTimeException;
import java.time.Instant;
import java.time.OffsetDateTime;
import java.util.List;
import java.util.Random;
import org.junit.jupiter.api.Test;

class Rfc3339TimestampTest {
    @Test
    void readsWhatOffsetDateTimeReadsAndRefusesWhatItRefuses() {
        List<String> samples = List.of("2026-07-01T09:15:00Z", "2026-07-01T09:15:00.1Z", "2026-07-01T09:15:00.123456789Z",
                "2026-07-01T09:15:00.5+02:00", "2026-07-01T09:15:00-00:30", "2024-02-29T23:59:59+14:00", "0001-01-01T00:00:00Z",
                "2026-07-01T09:15Z", "2026-07-01T09:15:00+0200", "2026-07-01T09:15:00+02", "2026-07-01T09:15:00+02:00:30",
                "2026-13-01T09:15:00Z", "2026-02-30T09:15:00Z", "2025-02-29T09:15:00Z", "2026-07-01T24:00:00Z",
                "2026-07-01T23:59:60Z", "2026-07-01T09:15:00.1234567890Z", "2026-07-01T09:15:00.Z", "2026-07-01T09:15:00+19:00",
                "2026-07-01T09:15:00", "2026-07-01T09:15:00ZZ", "2026-07-0AT09:15:00Z", "+2026-07-01T09:15:00Z", "20260701T091500Z");
        samples.forEach(this::agrees);
    }

    @Test
    void agreesOnRandomTimesAndOffsets() {
        Random random = new Random(42);
        for (int i = 0; i < 10_000; i++) {
            String fraction = random.nextBoolean() ? "" : "." + "123456789".substring(0, 1 + random.nextInt(9));
            int offsetMinutes = random.nextInt(18 * 60 * 2 + 1) - 18 * 60;
            String offset = random.nextInt(4) == 0 ? "Z"
                    : String.format("%s%02d:%02d", offsetMinutes < 0 ? "-" : "+", Math.abs(offsetMinutes) / 60, Math.abs(offsetMinutes) % 60);
            agrees(String.format("%04d-%02d-%02dT%02d:%02d:%02d%s%s", random.nextInt(10_000), 1 + random.nextInt(12), 1 + random.nextInt(31),
                    random.nextInt(24), random.nextInt(60), random.nextInt(60), fraction, offset));
        }
    }

    private void agrees(String text) {
        Instant expected;
        try {
            expected = OffsetDateTime.parse(text).toInstant();
        } catch (DateTimeException refused) {
            assertThatThrownBy(() -> Rfc3339Timestamp.parse(text)).as(text).isInstanceOf(DateTimeException.class);
            return;
        }
        assertThat(Rfc3339Timestamp.parse(text)).as(text).isEqualTo(expected);
    }
}
