package io.chatintake.attachment;

import java.io.IOException;
import java.io.InputStream;
import java.nio.ByteBuffer;
import java.nio.channels.FileChannel;
import java.nio.file.Files;
import java.nio.file.Path;
import java.nio.file.StandardOpenOption;
import java.nio.file.attribute.FileTime;
import java.time.Duration;
import java.time.Instant;
import java.util.stream.Stream;
import org.slf4j.Logger;
import org.slf4j.LoggerFactory;
import java.security.MessageDigest;
import java.security.NoSuchAlgorithmException;
import java.util.HexFormat;

/**
 * The directory ({@code media/tmp}) a download streams into while it is hashed and counted,
 * before a {@link MediaStore} keeps it under its content key. A spooled file is flushed to disk
 * and deleted when its {@link Spooled} is closed.
 */
final class MediaSpool {
    private static final Logger LOG = LoggerFactory.getLogger(MediaSpool.class);
    private static final int CHUNK = 64 * 1024;

    private final Path dir;

    /** A complete download: its file under the spool, content hash and size. */
    record Spooled(Path file, String sha256, long size) implements AutoCloseable {
        /** {@code <first 2 hex>/<sha256>}: the key every store keeps it under. */
        String key() {
            return sha256.substring(0, 2) + "/" + sha256;
        }

        @Override
        public void close() throws IOException {
            Files.deleteIfExists(file);
        }
    }

    MediaSpool(Path dir) {
        this.dir = dir;
    }

    /**
     * Deletes what killed processes left behind. A part written to within {@code liveBound} (the
     * download timeout) may be a download in progress in another runner sharing the directory, so
     * it stays; an older one cannot be (its download was cut off at the timeout).
     * @return how many files were removed (logged once)
     */
    int removeLeftovers(Duration liveBound) {
        FileTime cutoff = FileTime.from(Instant.now().minus(liveBound));
        int removed = 0;
        int kept = 0;
        try (Stream<Path> files = Files.list(Files.createDirectories(dir))) {
            for (Path file : (Iterable<Path>) files::iterator) {
                if (Files.isRegularFile(file) && Files.getLastModifiedTime(file).compareTo(cutoff) < 0) {
                    removed += Files.deleteIfExists(file) ? 1 : 0;
                } else {
                    kept++;
                }
            }
        } catch (IOException e) {
            // Leftovers only cost disk space: say so and carry on.
            LOG.warn("media: could not clean {} of leftover downloads: {}", dir, e.toString());
            return removed;
        }
        LOG.info("media: removed {} leftover partial download(s) from {}{}", removed, dir,
                kept == 0 ? "" : "; kept " + kept + " written to within " + liveBound.toSeconds() + " s (a download in progress elsewhere?)");
        return removed;
    }

    Spooled write(InputStream in, long maxBytes) throws IOException, MediaStore.TooLargeException {
        Files.createDirectories(dir);
        Path part = Files.createTempFile(dir, "download-", ".part");
        try {
            MessageDigest sha256 = sha256();
            long size = 0;
            try (FileChannel out = FileChannel.open(part, StandardOpenOption.WRITE)) {
                byte[] buffer = new byte[CHUNK];
                for (int n; (n = in.read(buffer)) >= 0; ) {
                    size += n;
                    if (size > maxBytes) {
                        throw new MediaStore.TooLargeException(maxBytes);
                    }
                    sha256.update(buffer, 0, n);
                    out.write(ByteBuffer.wrap(buffer, 0, n));
                }
                // On disk before the row says stored.
                out.force(true);
            }
            return new Spooled(part, HexFormat.of().formatHex(sha256.digest()), size);
        } catch (IOException | MediaStore.TooLargeException | RuntimeException e) {
            Files.deleteIfExists(part);
            throw e;
        }
    }

    private static MessageDigest sha256() {
        try {
            return MessageDigest.getInstance("SHA-256");
        } catch (NoSuchAlgorithmException e) {
            throw new IllegalStateException("every JVM has SHA-256", e);
        }
    }
}
