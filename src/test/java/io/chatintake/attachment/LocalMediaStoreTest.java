package io.chatintake.attachment;

import static org.assertj.core.api.Assertions.assertThat;
import static org.assertj.core.api.Assertions.assertThatThrownBy;

import ch.qos.logback.classic.Logger;
import ch.qos.logback.classic.spi.ILoggingEvent;
import ch.qos.logback.core.read.ListAppender;
import io.chatintake.config.Settings;
import java.io.ByteArrayInputStream;
import java.io.InputStream;
import java.nio.charset.StandardCharsets;
import java.nio.file.Files;
import java.nio.file.NoSuchFileException;
import java.nio.file.Path;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.List;
import java.util.Map;
import java.util.stream.Stream;
import org.junit.jupiter.api.Test;
import org.junit.jupiter.api.io.TempDir;
import org.slf4j.LoggerFactory;

/** The local media store's durability: leftovers of killed downloads go at start; new names are synced. */
class LocalMediaStoreTest {
    private static final Duration DOWNLOAD_TIMEOUT = Duration.ofSeconds(120);

    @TempDir
    Path mediaDir;

    @Test
    void leftoverPartsOfKilledDownloadsAreRemovedAtStartAndCountedOnceButRecentOnesStay() throws Exception {
        Path tmp = Files.createDirectories(mediaDir.resolve("tmp"));
        for (int i = 0; i < 3; i++) {
            Path old = Files.writeString(tmp.resolve("download-" + i + ".part"), "half a file");
            Files.setLastModifiedTime(old, FileTime.from(Instant.now().minus(Duration.ofHours(1))));
        }
        Path inProgress = Files.writeString(tmp.resolve("download-live.part"), "another runner is writing this");
        ListAppender<ILoggingEvent> logs = new ListAppender<>();
        logs.start();
        Logger logger = (Logger) LoggerFactory.getLogger(MediaSpool.class);
        logger.addAppender(logs);
        try {
            MediaStore.configured(Settings.of(Map.of("media.store", "local")), mediaDir, DOWNLOAD_TIMEOUT).close();
        } finally {
            logger.detachAppender(logs);
        }

        try (Stream<Path> left = Files.list(tmp)) {
            assertThat(left).containsExactly(inProgress);
        }
        assertThat(logs.list).extracting(ILoggingEvent::getFormattedMessage).containsExactly(
                "media: removed 3 leftover partial download(s) from " + tmp + "; kept 1 written to within 120 s (a download in progress elsewhere?)");
    }

    /**
     * What this proves: the directory fsync runs on this platform (a directory opened read-only
     * and forced) without error, in both the new-prefix and existing-prefix cases, and it really
     * opens the directory (a missing one fails). It cannot prove the name survives a power loss.
     */
    @Test
    void aStoredFileIsLinkedAndItsDirectorySyncedWithoutError() throws Exception {
        try (LocalMediaStore store = (LocalMediaStore) MediaStore.configured(Settings.of(Map.of()), mediaDir, DOWNLOAD_TIMEOUT)) {
            byte[] content = "a photo".getBytes(StandardCharsets.UTF_8);
            MediaStore.StoredFile first = store.save(new ByteArrayInputStream(content), 1_000);
            MediaStore.StoredFile again = store.save(new ByteArrayInputStream(content), 1_000);
            byte[] sibling = siblingOf(first.sha256());
            MediaStore.StoredFile second = sibling == null ? first : store.save(new ByteArrayInputStream(sibling), 1_000);

            assertThat(first.duplicate()).isFalse();
            assertThat(again.duplicate()).isTrue();
            assertThat(second.duplicate()).isEqualTo(sibling == null);
            try (InputStream in = store.open(first.relativePath())) {
                assertThat(in.readAllBytes()).isEqualTo(content);
            }
            assertThat(mediaDir.resolve(first.relativePath())).exists();
            try (Stream<Path> parts = Files.list(mediaDir.resolve("tmp"))) {
                assertThat(parts).as("the spooled part is gone once linked").isEmpty();
            }
        }
        LocalMediaStore.syncDirectory(mediaDir);
        assertThatThrownBy(() -> LocalMediaStore.syncDirectory(mediaDir.resolve("missing"))).isInstanceOf(NoSuchFileException.class);
    }

    /** Some small content whose hash shares the given one's prefix directory (the existing-prefix case). */
    private static byte[] siblingOf(String sha256) throws Exception {
        java.security.MessageDigest digest = java.security.MessageDigest.getInstance("SHA-256");
        for (int i = 0; i < 100_000; i++) {
            byte[] candidate = ("sibling " + i).getBytes(StandardCharsets.UTF_8);
            byte[] hash = digest.digest(candidate);
            if (String.format("%02x", hash[0]).equals(sha256.substring(0, 2))) {
                return candidate;
            }
        }
        return null;
    }
}
